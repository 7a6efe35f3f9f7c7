//! [`DeliveryId`]: the id a sender gives a delivery, checked as the verifier checks it.

use std::fmt;

use http::HeaderValue;

/// Longest delivery id kept: senders send UUIDs or ids of about 30 characters; one far
/// longer is not one.
pub const MAX_DELIVERY_ID_BYTES: usize = 128;

/// A delivery id: visible ASCII (spaces and tabs allowed, as in a header), not empty, at
/// most [`MAX_DELIVERY_ID_BYTES`]. The verifier refuses a delivery whose id header is not
/// one, before its body is read; a service that reads the id itself checks it the same way.
///
/// ```
/// use faultline::webhooks::{DeliveryId, IdError};
///
/// let id = DeliveryId::parse("72d3162e-cc78-11e3-81ab-4c9367dc0958")?;
/// assert_eq!(id.as_str(), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
/// assert_eq!(DeliveryId::parse(""), Err(IdError::Empty));
/// assert_eq!(DeliveryId::parse(&"a".repeat(129)), Err(IdError::TooLong));
/// assert_eq!(DeliveryId::parse("é"), Err(IdError::NotVisibleAscii));
/// # Ok::<(), IdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeliveryId(HeaderValue);

/// Why a text is not a [`DeliveryId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdError {
    /// It is empty.
    Empty,
    /// It is longer than [`MAX_DELIVERY_ID_BYTES`].
    TooLong,
    /// It holds a byte that is not visible ASCII.
    NotVisibleAscii,
}

impl IdError {
    /// What is wrong, as the end of a sentence that names the header: "is empty".
    pub fn problem(self) -> &'static str {
        match self {
            IdError::Empty => "is empty",
            IdError::TooLong => "is too long for a delivery id",
            IdError::NotVisibleAscii => "is not visible ASCII",
        }
    }
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the delivery id {}", self.problem())
    }
}

impl std::error::Error for IdError {}

impl DeliveryId {
    /// `text` as a delivery id, or why it is not one.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        check(text.as_bytes())?;
        let value = HeaderValue::from_str(text)
            .unwrap_or_else(|_| unreachable!("visible ASCII is a header value"));
        Ok(Self(value))
    }

    /// The id a header carries, or why it is not one.
    pub fn from_header(value: &HeaderValue) -> Result<Self, IdError> {
        check(value.as_bytes())?;
        Ok(Self(value.clone()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        self.0
            .to_str()
            .unwrap_or_else(|_| unreachable!("checked as visible ASCII"))
    }

    /// The id as a header's value.
    pub fn as_header(&self) -> &HeaderValue {
        &self.0
    }
}

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `bytes` are a delivery id, without a copy: the check of the verifier's path.
/// Visible ASCII as [`HeaderValue::to_str`] takes it, so that the id reads as text.
pub(crate) fn check(bytes: &[u8]) -> Result<(), IdError> {
    if bytes.is_empty() {
        Err(IdError::Empty)
    } else if bytes.len() > MAX_DELIVERY_ID_BYTES {
        Err(IdError::TooLong)
    } else if !bytes
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        Err(IdError::NotVisibleAscii)
    } else {
        Ok(())
    }
}
