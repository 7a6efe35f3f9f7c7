#[derive(Debug, thiserror::Error, faultline::Fault)]
#[error("the store failed")]
#[fault(status = 503, code = "store-unavailable")]
struct StoreError;

#[derive(Debug, thiserror::Error, faultline::Fault)]
enum HookError {
    #[error(transparent)]
    #[fault(transparent, status = 500)]
    Store(StoreError),
}

fn main() {}
