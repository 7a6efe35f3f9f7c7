//! The management API: instances, digests, inboxes and their secrets.

pub mod rotation;
