#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error("stored")]
    #[fault(status = 200, code = "stored")]
    Stored,
}

fn main() {}
