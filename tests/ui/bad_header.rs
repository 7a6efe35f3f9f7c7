#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error("the API key is missing")]
    #[fault(status = 401, code = "bad-api-key", header = "WWW-Authenticate Bearer")]
    BadApiKey,
}

fn main() {}
