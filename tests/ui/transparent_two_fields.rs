#[derive(Debug, thiserror::Error, faultline::Fault)]
#[error("the store failed")]
#[fault(status = 503, code = "store-unavailable")]
struct StoreError;

#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error("the store failed on {1}")]
    #[fault(transparent)]
    Store(#[source] StoreError, String),
}

fn main() {}
