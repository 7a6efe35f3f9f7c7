//! Whether a delivery is authentic: what each provider sends and signs, and the inboxes'
//! secrets as last seen, so that a delivery is verified while the store cannot be asked.

pub mod secret_cache;
pub mod webhook;
