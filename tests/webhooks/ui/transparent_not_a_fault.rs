use faultline::Fault;

#[derive(Debug, thiserror::Error, Fault)]
enum HookError {
    #[error(transparent)]
    #[fault(transparent)]
    Store(#[from] std::io::Error),
}

fn main() {}
