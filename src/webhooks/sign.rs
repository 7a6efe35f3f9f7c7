//! [`Signer`]: a delivery signed as its sender signs it, for a service's own tests (as
//! stripe's `generate_test_header_string`, standardwebhooks' `sign`, slack-sdk's
//! `generate_signature`, octokit's `sign`) and for a service that sends webhooks itself.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use http::header::HeaderName;
use http::{HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};

use crate::webhooks::id::DeliveryId;
use crate::webhooks::proof::hmac;
use crate::webhooks::secret::{Secret, SecretError};
use crate::webhooks::sender::{Scheme, Sender};

/// Signs deliveries as one sender does: every header that sender sends beside a body (its
/// proof, the signed timestamp, the delivery id and the event where it sends them), asking
/// for no more than the sender sends. What it signs, [`Verified`](super::Verified) and the
/// sender's own libraries accept.
///
/// ```
/// use std::time::SystemTime;
/// use faultline::webhooks::{Delivery, DeliveryId, Keys, Outgoing, SecretSet, Sender, Signer};
///
/// let now = SystemTime::now();
/// let body = br#"{"type":"invoice.paid"}"#;
///
/// // Stripe and Slack sign no id and name the event in the body: the body is all they need.
/// let stripe = Signer::for_sender(Sender::Stripe, "whsec_the_stripe_secret")?;
/// let headers = stripe.sign(Outgoing::new(body), now);
/// assert!(headers["stripe-signature"].to_str()?.starts_with("t="));
///
/// // A sender that signs its delivery id is given one, or makes one from what it signs.
/// let text = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// let standard = Signer::for_sender(Sender::StandardWebhooks, text)?;
/// let id = DeliveryId::parse("msg_p5jXN8AQM9LWM0D4loKWxJek")?;
/// let headers = standard.sign(Outgoing::new(body).id(&id), now);
/// let keys = Keys::new(Sender::StandardWebhooks, SecretSet::for_sender(Sender::StandardWebhooks, text)?)?;
/// let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), now)?;
/// assert_eq!(delivery.id(), Some(id.as_str()));
///
/// // The senders that name the event in a header are given it; GitHub's hook, too.
/// let github = Signer::for_sender(Sender::GitHub, "It's a Secret to Everybody")?
///     .github_hook(460_000_001, "repository", 35_129_377);
/// let headers = github.sign(Outgoing::new(b"Hello, World!").event("push"), now);
/// assert_eq!(headers["x-github-event"], "push");
/// assert_eq!(headers["x-github-hook-id"], "460000001");
/// assert!(headers.contains_key("x-github-delivery"));
/// assert_eq!(
///     headers["x-hub-signature-256"],
///     "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Signer {
    sender: Sender,
    secret: Secret,
    hook: Option<GitHubHook>,
}

/// The hook GitHub names in every delivery it sends from it.
#[derive(Debug, Clone, Copy)]
struct GitHubHook {
    id: u64,
    target_type: &'static str,
    target_id: u64,
}

/// A delivery to sign: its body and, where its sender sends them, its id and its event. A
/// signer reads of it only what its sender sends.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    body: &'a [u8],
    id: Option<&'a DeliveryId>,
    event: Option<&'a str>,
}

impl<'a> Outgoing<'a> {
    /// A delivery of `body`.
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            body,
            id: None,
            event: None,
        }
    }

    /// Its delivery id, for the senders that send one: in the sender's id header, or inside
    /// the signature (Standard Webhooks, GitLab's signing token). Without it, such a sender
    /// sends an id made from the timestamp and the body: the same body signed at the same
    /// second gets the same id, as a sender's retry of one delivery does.
    pub fn id(mut self, id: &'a DeliveryId) -> Self {
        self.id = Some(id);
        self
    }

    /// Its event, for the senders that name it in a header ([`Sender::event_header`]):
    /// `push`, `Push Hook`, `repo:push`, `orders/create`. The others name it in the body. A
    /// text no header can carry (a line break, a control character) is no event a sender
    /// sends, and is left out.
    pub fn event(mut self, event: &'a str) -> Self {
        self.event = Some(event);
        self
    }
}

impl Signer {
    /// A signer for `sender` with `secret`, refused as [`Keys::new`](super::Keys::new)
    /// refuses a secret in the wrong form or of the wrong length.
    pub fn new(sender: Sender, secret: Secret) -> Result<Self, SecretError> {
        secret.check_for(sender)?;
        Ok(Self {
            sender,
            secret,
            hook: None,
        })
    }

    /// A signer for `sender` with the secret as its settings show it
    /// ([`Secret::for_sender`]).
    pub fn for_sender(sender: Sender, text: &str) -> Result<Self, SecretError> {
        Self::new(sender, Secret::for_sender(sender, text)?)
    }

    /// The hook GitHub sends from: `X-GitHub-Hook-ID`, and what it is installed on
    /// (`X-GitHub-Hook-Installation-Target-Type`, `repository` or `organization`, and
    /// `-ID`), sent with every delivery. The other senders name no hook this way.
    pub fn github_hook(mut self, id: u64, target_type: &'static str, target_id: u64) -> Self {
        self.hook = Some(GitHubHook {
            id,
            target_type,
            target_id,
        });
        self
    }

    /// The sender it signs as.
    pub fn sender(&self) -> Sender {
        self.sender
    }

    /// The headers the sender sends with `delivery`, signed at `at`.
    pub fn sign(&self, delivery: Outgoing<'_>, at: SystemTime) -> HeaderMap {
        let ts = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs())
            .to_string();
        let made;
        let id = match delivery.id {
            Some(id) => id,
            None => {
                made = made_id(self.sender, &ts, delivery.body);
                &made
            }
        };
        let mut headers = self.proof(id, &ts, delivery.body);
        for &header in self.id_headers_sent() {
            headers.insert(HeaderName::from_static(header), id.as_header().clone());
        }
        let event = self.sender.event_header().zip(delivery.event);
        if let Some((header, event)) = event {
            if let Ok(value) = HeaderValue::from_str(event) {
                headers.insert(HeaderName::from_static(header), value);
            }
        }
        if let (Sender::GitHub, Some(hook)) = (self.sender, self.hook) {
            headers.insert("x-github-hook-id", hook.id.into());
            headers.insert(
                "x-github-hook-installation-target-type",
                HeaderValue::from_static(hook.target_type),
            );
            headers.insert(
                "x-github-hook-installation-target-id",
                hook.target_id.into(),
            );
        }
        headers
    }

    /// The proof, and the timestamp and id where they are signed with it.
    fn proof(&self, id: &DeliveryId, ts: &str, body: &[u8]) -> HeaderMap {
        let key = self.secret.key();
        let mut headers = HeaderMap::new();
        let mut put = |name: &'static str, value: String| {
            let value = HeaderValue::try_from(value)
                .unwrap_or_else(|_| unreachable!("hex, base64 and digits are header values"));
            headers.insert(HeaderName::from_static(name), value);
        };
        match self.sender.scheme() {
            Scheme::Hex { header, prefix } if self.sender == Sender::Slack => {
                let tag = hmac(key, &[b"v0:", ts.as_bytes(), b":"], body);
                put(header, format!("{prefix}{}", hex(&tag)));
                put("x-slack-request-timestamp", ts.to_owned());
            }
            Scheme::Hex { header, prefix } => {
                put(header, format!("{prefix}{}", hex(&hmac(key, &[], body))))
            }
            Scheme::Base64 { header } => put(header, base64(&hmac(key, &[], body))),
            Scheme::Token { header } => {
                let token = HeaderValue::from_bytes(key)
                    .unwrap_or_else(|_| unreachable!("checked as a header value by `new`"));
                headers.insert(HeaderName::from_static(header), token);
            }
            Scheme::Standard => {
                let signed = [id.as_str().as_bytes(), b".", ts.as_bytes(), b"."];
                put(
                    "webhook-signature",
                    format!("v1,{}", base64(&hmac(key, &signed, body))),
                );
                put("webhook-timestamp", ts.to_owned());
                headers.insert("webhook-id", id.as_header().clone());
            }
            Scheme::Stripe => {
                let tag = hmac(key, &[ts.as_bytes(), b"."], body);
                put("stripe-signature", format!("t={ts},v1={}", hex(&tag)));
            }
        }
        headers
    }

    /// The id headers the sender sends: GitLab both of its own; Bitbucket Cloud's, not
    /// Data Center's (one deployment sends one); the others their one.
    fn id_headers_sent(&self) -> &'static [&'static str] {
        let all = self.sender.id_headers();
        match self.sender {
            Sender::GitLab => all,
            _ => &all[..all.len().min(1)],
        }
    }
}

/// The id a delivery given none is sent with, by the senders that send one: a digest of the
/// timestamp and the body, shaped as the sender's ids are (`msg_…` for Standard Webhooks, a
/// UUID's groups for the others).
fn made_id(sender: Sender, ts: &str, body: &[u8]) -> DeliveryId {
    let digest = Sha256::new()
        .chain_update(ts)
        .chain_update(b".")
        .chain_update(body)
        .finalize();
    let digits = hex(&digest[..16]);
    let text = match sender.scheme() {
        Scheme::Standard => format!("msg_{digits}"),
        _ => format!(
            "{}-{}-{}-{}-{}",
            &digits[..8],
            &digits[8..12],
            &digits[12..16],
            &digits[16..20],
            &digits[20..]
        ),
    };
    DeliveryId::parse(&text).unwrap_or_else(|_| unreachable!("hex digits are an id"))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]])
        .map(char::from)
        .collect()
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(all(test, not(loom)))]
mod tests;
