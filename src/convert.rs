//! `?` into [`Error`]: every fault faultline defines keeps its status and code, whichever
//! layer defines it, and anything else becomes a 500.
//!
//! Rust has no specialization, so one blanket `From` takes every `std::error::Error`; the
//! faults faultline defines are told apart inside it by type id. It sits above every layer
//! that defines a fault, so that each is named here without reaching up the module order.

use crate::error::{as_rejection, Error};

/// `?` on any `std::error::Error`: a fault faultline defines keeps its status and code
/// (axum's rejections, counted as `rejected`; the webhook refusals, counted as `handled`);
/// anything else is a 500 whose text only the report sees.
impl<E> From<E> for Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        let found = as_rejection(error);
        #[cfg(feature = "webhooks")]
        let found = found.or_else(crate::error::taken_as::<crate::webhooks::Refusal, E>);
        found.unwrap_or_else(Error::internal)
    }
}
