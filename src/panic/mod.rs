//! Panics: catching them where the layer runs user code, keeping the caught ones off stderr,
//! and taking locks that a caught panic may have poisoned.

mod catch;
mod hook;
mod lock;

pub(crate) use catch::{catch, Caught, PanicSite};
pub use hook::install_panic_hook;
pub(crate) use lock::lock;
