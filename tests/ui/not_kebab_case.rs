#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error("event `{0}` is not handled here")]
    #[fault(status = 422, code = "UnsupportedEvent")]
    UnsupportedEvent(String),
}

fn main() {}
