#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error("payload lacks a ref")]
    #[fault(status = 400, code = "malformed-payload")]
    NoRef,
    #[error("payload lacks a repository")]
    #[fault(status = 422, code = "malformed-payload")]
    NoRepository,
}

fn main() {}
