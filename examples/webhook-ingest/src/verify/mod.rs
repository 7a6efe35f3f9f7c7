//! Whether a delivery is authentic: what each provider sends and signs, and the inboxes'
//! secrets as last seen, kept in memory and in a file beside the spool, so that a delivery is
//! verified while the store cannot be asked, even after a restart.

pub mod keys;
pub mod known;
pub mod refresh;
pub mod secret_cache;
pub mod webhook;
