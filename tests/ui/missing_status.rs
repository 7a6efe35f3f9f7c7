#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error("payload lacks a ref")]
    #[fault(code = "malformed-payload")]
    Malformed,
}

fn main() {}
