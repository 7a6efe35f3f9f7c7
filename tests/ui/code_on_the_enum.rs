#[derive(Debug, thiserror::Error, faultline::Fault)]
#[fault(status = 400, code = "bad-hook")]
enum HookError {
    #[error("event `{0}` is not handled here")]
    #[fault(code = "unsupported-event")]
    UnsupportedEvent(String),
}

fn main() {}
