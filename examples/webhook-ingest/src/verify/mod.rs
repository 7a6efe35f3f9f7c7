//! Whether a delivery is authentic: what each provider sends and signs, and the inboxes'
//! secrets as last seen, kept in memory and in a file beside the spool, so that a delivery is
//! verified while the store cannot be asked, even after a restart.

pub mod keys;
pub mod known;
pub mod refresh;
pub mod secret_cache;
pub mod webhook;

use faultline::Fault;

/// Why a delivery's proof, or its delivery id, is refused: what only its sender can fix.
#[derive(Debug, thiserror::Error, Fault)]
pub enum VerifyError {
    /// The signature or token is missing, malformed, out of its time window or wrong.
    #[error("the `{header}` header {problem}")]
    #[fault(status = 401, code = "bad-signature")]
    BadSignature {
        header: &'static str,
        problem: &'static str,
    },
    /// A delivery id no store could key on.
    #[error("the `{header}` header {problem}")]
    #[fault(status = 400, code = "bad-delivery-id")]
    BadDeliveryId {
        header: &'static str,
        problem: &'static str,
    },
}
