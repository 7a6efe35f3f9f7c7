//! The ids the service names its records by, each a type of its own so that a parameter says
//! which id it takes: an instance's ([`InstanceId`]), a digest's ([`DigestId`]), an inbox's
//! ([`InboxId`]), and a delivery's, the library's [`DeliveryId`] as its verifier checks it.
//!
//! An id is parsed once, where it comes in (a request's path, the command line), and read
//! back as stored; the service makes its own as a prefix and random hex (`in_…`, `dg_…`,
//! `ib_…`). A text of another shape can be no record's id, and is answered as an id that
//! does not exist.
//!
//! ```
//! use webhook_ingest::ids::{InboxId, MAX_ID_BYTES};
//!
//! let inbox = InboxId::parse("ib_0123456789abcdef").expect("an id");
//! assert_eq!(inbox.as_str(), "ib_0123456789abcdef");
//! assert_eq!(inbox.to_string(), "ib_0123456789abcdef");
//! assert!(InboxId::parse("").is_none());
//! assert!(InboxId::parse("ib 1").is_none());
//! assert!(InboxId::parse(&"i".repeat(MAX_ID_BYTES + 1)).is_none());
//! ```

use std::fmt;

pub use faultline::webhooks::DeliveryId;

/// Longest id taken: the service's own are 19 bytes; the bound keeps what a client sends in
/// a path out of the problem bodies, the logs and the refusal list beyond this size. The
/// library's delivery ids have the same bound.
pub const MAX_ID_BYTES: usize = faultline::webhooks::MAX_DELIVERY_ID_BYTES;

/// Whether `text` has the shape of an id: not empty, at most [`MAX_ID_BYTES`], visible ASCII
/// without spaces, so that an id reads whole in a log line or a URL.
fn is_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_ID_BYTES
        && text.bytes().all(|byte| byte.is_ascii_graphic())
}

/// One id type: text of an id's shape, read from the outside with `parse` and from the store
/// with `stored`, and written in JSON as its text.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// `text` as this id, or `None` when it has not the shape of an id.
            pub fn parse(text: &str) -> Option<Self> {
                is_id(text).then(|| Self(text.to_owned()))
            }

            /// An id the service made, or read back from its store: not checked again.
            pub(crate) fn stored(text: String) -> Self {
                Self(text)
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// An instance's id: the tenant of `/api/{instance}/…`.
    InstanceId
);

id_type!(
    /// A digest's id, unique across instances.
    DigestId
);

id_type!(
    /// An inbox's id, unique across instances: the `{inbox}` of its webhook URL.
    InboxId
);

#[cfg(test)]
mod tests;
