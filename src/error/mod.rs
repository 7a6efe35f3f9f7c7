//! The errors handlers return: the [`Fault`] trait user errors implement, [`Error`] for ad-hoc
//! cases and any other `std::error::Error` met with `?`, axum's rejections as faults, the
//! codes faultline gives failures that carry none, and the markers a response carries to the
//! layer.

mod catalog;
// A namespace of constants, read as `codes::PANIC` where a code is chosen.
pub(crate) mod codes;
// The folder is named for the concept, the file for the type it holds.
#[allow(clippy::module_inception)]
mod error;
mod fault;
mod marker;
mod rejection;

pub use catalog::{Catalog, CatalogEntry};
pub(crate) use error::taken_as;
pub use error::Error;
pub use fault::Fault;
pub(crate) use marker::{
    leave_for_layer, mark, marked, restore_waiting, take_waiting, FaultMarker, WaitingFault,
};
pub(crate) use rejection::as_rejection;
