//! [`Delivery`]: a verified delivery, and the two steps that make one: its headers read
//! before the body ([`Pending`]), then the body checked.

use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

use crate::webhooks::proof::{check_id, one, Proof};
use crate::webhooks::refusal::Refusal;
use crate::webhooks::secret::{Keys, SecretSet};
use crate::webhooks::sender::Sender;

/// A delivery whose signature has been checked: the body exactly as it came, who sent it,
/// its delivery id, its event name and its signed timestamp, where the sender sends them.
#[derive(Debug, Clone)]
pub struct Delivery {
    sender: Sender,
    body: Bytes,
    id: Option<HeaderValue>,
    event: Option<HeaderValue>,
    timestamp: Option<SystemTime>,
    /// The HMAC of the signed bytes under the first live secret, for the HMAC senders.
    signed_tag: Option<SignedTag>,
}

/// A tag kept for the replay key, shown by `Debug` as its length only: it is a signature.
#[derive(Clone, Copy)]
struct SignedTag([u8; 32]);

impl std::fmt::Debug for SignedTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignedTag({} bytes)", self.0.len())
    }
}

impl Delivery {
    /// Verifies a delivery whose body is already read: for tests, and for deliveries kept
    /// unverified for a while (a spool) and checked later. `now` is the moment the sender's
    /// timestamp and the secrets' expiries are judged at.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use axum::http::HeaderMap;
    /// use faultline::webhooks::{Delivery, Keys, SecretSet, Sender};
    ///
    /// // GitHub's published example: this secret, this body, this signature.
    /// let keys = Keys::new(Sender::GitHub, SecretSet::one("It's a Secret to Everybody")?);
    /// let mut headers = HeaderMap::new();
    /// headers.insert(
    ///     "x-hub-signature-256",
    ///     "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17".parse()?,
    /// );
    /// headers.insert("x-github-event", "ping".parse()?);
    /// let body = "Hello, World!".into();
    /// let delivery = Delivery::verify(&keys, &headers, body, SystemTime::now())?;
    /// assert_eq!(delivery.event(), Some("ping"));
    /// assert_eq!(delivery.body(), "Hello, World!");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify(
        keys: &Keys,
        headers: &HeaderMap,
        body: Bytes,
        now: SystemTime,
    ) -> Result<Self, Refusal> {
        Pending::read(keys.sender(), headers, now)?.finish(body, keys.secrets(), now)
    }

    /// Refuses now what no secret could make right (a missing, duplicated or malformed
    /// header, a signed timestamp out of the window), without a secret or the body: for a
    /// delivery kept to be verified later with [`verify`](Delivery::verify), so that only
    /// one that can still pass is kept.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use axum::http::HeaderMap;
    /// use faultline::webhooks::{Delivery, Sender};
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-gitea-signature", "0123".parse()?);
    /// let refused = Delivery::check_headers(Sender::Gitea, &headers, SystemTime::now());
    /// assert_eq!(faultline::Fault::code(&refused.unwrap_err()), "webhook-header-malformed");
    /// headers.insert("x-gitea-signature", "ab".repeat(32).parse()?);
    /// assert!(Delivery::check_headers(Sender::Gitea, &headers, SystemTime::now()).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_headers(
        sender: Sender,
        headers: &HeaderMap,
        now: SystemTime,
    ) -> Result<(), Refusal> {
        Pending::read(sender, headers, now).map(drop)
    }

    /// The sender.
    pub fn sender(&self) -> Sender {
        self.sender
    }

    /// The body as it came, the same bytes the signature covers.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The body, to keep or parse.
    pub fn into_body(self) -> Bytes {
        self.body
    }

    /// The delivery id the sender sent, for the senders that send one in a header: the
    /// key to recognize a redelivery by.
    pub fn id(&self) -> Option<&str> {
        self.id.as_ref().and_then(|id| id.to_str().ok())
    }

    /// The event name, for the senders that name it in a header (`push`, `Push Hook`,
    /// `repo:push`, `orders/create`); the others name it in the body.
    pub fn event(&self) -> Option<&str> {
        self.event.as_ref().and_then(|event| event.to_str().ok())
    }

    /// The timestamp the sender signed, for the senders that sign one.
    pub fn timestamp(&self) -> Option<SystemTime> {
        self.timestamp
    }

    /// The HMAC of what the sender signed, computed under the first live secret; `None`
    /// for GitLab's token, which signs nothing.
    pub(crate) fn signed_tag(&self) -> Option<&[u8; 32]> {
        self.signed_tag.as_ref().map(|tag| &tag.0)
    }
}

/// A delivery whose headers are read and whose body is not yet checked.
#[derive(Debug)]
pub(crate) struct Pending<'h> {
    sender: Sender,
    proof: Proof<'h>,
    id: Option<&'h HeaderValue>,
    event: Option<&'h HeaderValue>,
    timestamp: Option<SystemTime>,
}

impl<'h> Pending<'h> {
    /// Reads everything `sender` puts in `headers`, refusing what no body could make right.
    pub(crate) fn read(
        sender: Sender,
        headers: &'h HeaderMap,
        now: SystemTime,
    ) -> Result<Self, Refusal> {
        let proof = Proof::read(sender, headers)?;
        let timestamp = match sender.tolerance() {
            Some(tolerance) => proof.check_time(now, tolerance)?,
            None => None,
        };
        let id = match proof.signed_id() {
            Some(id) => Some(id),
            None => sent_id(sender, headers)?,
        };
        let event = match sender.event_header() {
            Some(header) => one(headers, header)?
                .map(|v| visible(header, v))
                .transpose()?,
            None => None,
        };
        Ok(Self {
            sender,
            proof,
            id,
            event,
            timestamp,
        })
    }

    /// The delivery, if `body` is signed by a secret of `secrets` live at `now`.
    pub(crate) fn finish(
        self,
        body: Bytes,
        secrets: &SecretSet,
        now: SystemTime,
    ) -> Result<Delivery, Refusal> {
        let signed_tag = self.proof.check(&body, secrets, now)?;
        Ok(Delivery {
            sender: self.sender,
            body,
            id: self.id.cloned(),
            event: self.event.cloned(),
            timestamp: self.timestamp,
            signed_tag: signed_tag.map(SignedTag),
        })
    }
}

/// The delivery id in the first of the sender's id headers that is present.
fn sent_id(sender: Sender, headers: &HeaderMap) -> Result<Option<&HeaderValue>, Refusal> {
    for &header in sender.id_headers() {
        if let Some(value) = one(headers, header)? {
            check_id(header, value)?;
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// An event name is visible ASCII, so that [`Delivery::event`] can return it as text.
fn visible<'h>(header: &'static str, value: &'h HeaderValue) -> Result<&'h HeaderValue, Refusal> {
    match value.to_str() {
        Ok(_) => Ok(value),
        Err(_) => Err(Refusal::HeaderMalformed {
            header,
            problem: "is not visible ASCII",
        }),
    }
}
