//! [`Delivery`]: a verified delivery, and the two steps that make one: its headers read
//! before the body ([`Pending`]), then the body checked.

use std::ops::Range;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use serde::Deserialize;

use crate::webhooks::body::{event_in_body, event_range, json};
use crate::webhooks::handshake::Handshake;
use crate::webhooks::keys::Keys;
use crate::webhooks::proof::{check_id, one, Proof};
use crate::webhooks::refusal::Refusal;
use crate::webhooks::secret::SecretSet;
use crate::webhooks::sender::Sender;

/// A delivery whose signature has been checked: the body exactly as it came, who sent it,
/// its delivery id, its event name and its signed timestamp, where the sender sends them.
#[derive(Debug, Clone)]
pub struct Delivery {
    sender: Sender,
    body: Bytes,
    id: Option<HeaderValue>,
    event: Option<HeaderValue>,
    /// Where the body names its event, found on the first call of [`Delivery::event`] for
    /// the senders that name it there, so that a handler that never asks pays nothing.
    body_event: OnceLock<Option<Range<usize>>>,
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
    /// let keys = Keys::new(Sender::GitHub, SecretSet::one("It's a Secret to Everybody")?)?;
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
        Pending::read(keys.sender(), keys.tolerance(), headers, now)?.finish(
            body,
            keys.secrets(),
            now,
        )
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
        Pending::read(sender, sender.tolerance(), headers, now).map(drop)
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

    /// The event name: from its header for the senders that send one (`push`, `Push Hook`,
    /// `repo:push`, `orders/create`); from the body's `type` for Stripe and Standard
    /// Webhooks (`invoice.paid`, `user.created`), and for Slack the inner event's `type` of
    /// an `event_callback` (`app_mention`) or the body's own (`url_verification`).
    ///
    /// The body is read for it on the first call only, skipping every other field; a body
    /// that is not JSON of that shape (a Slack slash command is a form) has none.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use faultline::webhooks::{Delivery, Keys, Outgoing, SecretSet, Sender, Signer};
    ///
    /// let keys = Keys::new(Sender::Stripe, SecretSet::one("whsec_stripe")?)?;
    /// let signer = Signer::for_sender(Sender::Stripe, "whsec_stripe")?;
    /// let body = br#"{"id":"evt_1","data":{"object":{"type":"card"}},"type":"invoice.paid"}"#;
    /// let now = SystemTime::now();
    /// let headers = signer.sign(Outgoing::new(body), now);
    /// let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), now)?;
    /// assert_eq!(delivery.event(), Some("invoice.paid"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn event(&self) -> Option<&str> {
        if let Some(event) = &self.event {
            return event.to_str().ok();
        }
        if !event_in_body(self.sender) {
            return None;
        }
        let range = self
            .body_event
            .get_or_init(|| event_range(self.sender, &self.body));
        std::str::from_utf8(self.body.get(range.clone()?)?).ok()
    }

    /// The body as a `T`: its JSON read into a type of the handler's, borrowing from the
    /// body where `T` borrows. A body that does not fit is refused as
    /// [`Refusal::BodyInvalid`] (400 `webhook-body-invalid`), which says where the JSON
    /// stops fitting and never what it holds.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use faultline::webhooks::{Delivery, DeliveryId, Keys, Outgoing, SecretSet, Sender, Signer};
    /// use faultline::Fault;
    ///
    /// #[derive(Debug, serde::Deserialize)]
    /// struct Push<'a> {
    ///     #[serde(rename = "ref")]
    ///     git_ref: &'a str,
    /// }
    ///
    /// let keys = Keys::new(Sender::GitHub, SecretSet::one("secret")?)?;
    /// let signer = Signer::for_sender(Sender::GitHub, "secret")?;
    /// let id = DeliveryId::parse("72d3162e-cc78-11e3-81ab-4c9367dc0958")?;
    /// let now = SystemTime::now();
    /// let verify = |body: &[u8]| {
    ///     let headers = signer.sign(Outgoing::new(body).id(&id).event("push"), now);
    ///     Delivery::verify(&keys, &headers, body.to_vec().into(), now)
    /// };
    /// let delivery = verify(br#"{"ref":"refs/heads/main"}"#)?;
    /// assert_eq!(delivery.json::<Push>()?.git_ref, "refs/heads/main");
    ///
    /// let refused = verify(br#"{"ref":7}"#)?.json::<Push>().unwrap_err();
    /// assert_eq!((refused.status().as_u16(), refused.code()), (400, "webhook-body-invalid"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn json<'a, T: Deserialize<'a>>(&'a self) -> Result<T, Refusal> {
        json(&self.body)
    }

    /// The setup request this delivery is, if it is one (GitHub's `ping`, Bitbucket's
    /// `diagnostics:ping`, Slack's `url_verification`), to answer before handling events.
    /// A delivery is verified, so an unsigned handshake never gets an answer but a refusal.
    ///
    /// ```
    /// use axum::response::{IntoResponse, Response};
    /// use faultline::webhooks::Verified;
    ///
    /// async fn slack(delivery: Verified) -> Response {
    ///     if let Some(handshake) = delivery.handshake() {
    ///         return handshake.into_response();
    ///     }
    ///     // … the events themselves.
    ///     "kept".into_response()
    /// }
    /// ```
    pub fn handshake(&self) -> Option<Handshake> {
        Handshake::of(self.sender, self.event(), &self.body)
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
    /// Reads everything `sender` puts in `headers`, refusing what no body could make right
    /// and a signed timestamp further than `tolerance` from `now`.
    pub(crate) fn read(
        sender: Sender,
        tolerance: Option<Duration>,
        headers: &'h HeaderMap,
        now: SystemTime,
    ) -> Result<Self, Refusal> {
        let proof = Proof::read(sender, headers)?;
        let timestamp = match tolerance {
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
            body_event: OnceLock::new(),
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    use crate::webhooks::sign::{Outgoing, Signer};

    #[test]
    fn the_body_is_read_for_its_event_on_the_first_ask_only() {
        let keys = Keys::new(Sender::Stripe, SecretSet::one("whsec_stripe").unwrap()).unwrap();
        let signer = Signer::for_sender(Sender::Stripe, "whsec_stripe").unwrap();
        let body = br#"{"type":"invoice.paid"}"#;
        let now = SystemTime::now();
        let headers = signer.sign(Outgoing::new(body), now);
        let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), now).unwrap();
        assert!(
            delivery.body_event.get().is_none(),
            "read before it was asked"
        );
        assert_eq!(delivery.event(), Some("invoice.paid"));
        assert_eq!(delivery.body_event.get(), Some(&Some(9..21)));
    }
}
