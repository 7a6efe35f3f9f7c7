//! [`Signer`]: a delivery signed as its sender signs it, for a service's own tests (as
//! stripe's `generate_test_header_string`, standardwebhooks' `sign`, slack-sdk's
//! `generate_signature`, octokit's `sign`) and for a service that sends webhooks itself.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use http::header::HeaderName;
use http::{HeaderMap, HeaderValue};

use crate::webhooks::id::DeliveryId;
use crate::webhooks::proof::hmac;
use crate::webhooks::secret::{Secret, SecretError};
use crate::webhooks::sender::{Scheme, Sender};

/// Signs deliveries as one sender does: the headers that sender sends beside a body, its
/// proof and, where the sender sends them, the delivery id and the signed timestamp. What
/// it signs, [`Verified`](super::Verified) and the sender's own libraries accept.
///
/// ```
/// use std::time::SystemTime;
/// use axum::http::HeaderValue;
/// use faultline::webhooks::{Delivery, DeliveryId, Keys, SecretSet, Sender, Signer};
///
/// let text = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// let signer = Signer::for_sender(Sender::StandardWebhooks, text)?;
/// let id = DeliveryId::parse("msg_p5jXN8AQM9LWM0D4loKWxJek")?;
/// let body = br#"{"type":"invoice.paid"}"#;
/// let now = SystemTime::now();
/// let headers = signer.sign(&id, now, body);
/// assert!(headers["webhook-signature"].to_str()?.starts_with("v1,"));
///
/// let keys = Keys::new(Sender::StandardWebhooks, SecretSet::for_sender(Sender::StandardWebhooks, text)?)?;
/// let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), now)?;
/// assert_eq!(delivery.id(), Some(id.as_str()));
///
/// // The senders that name the event in a header: add it beside the proof.
/// let github = Signer::for_sender(Sender::GitHub, "It's a Secret to Everybody")?;
/// let mut headers = github.sign(&id, now, b"Hello, World!");
/// headers.insert(Sender::GitHub.event_header().unwrap(), HeaderValue::from_static("push"));
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
}

impl Signer {
    /// A signer for `sender` with `secret`, refused as [`Keys::new`](super::Keys::new)
    /// refuses a secret in the wrong form or of the wrong length.
    pub fn new(sender: Sender, secret: Secret) -> Result<Self, SecretError> {
        secret.check_for(sender)?;
        Ok(Self { sender, secret })
    }

    /// A signer for `sender` with the secret as its settings show it
    /// ([`Secret::for_sender`]).
    pub fn for_sender(sender: Sender, text: &str) -> Result<Self, SecretError> {
        Self::new(sender, Secret::for_sender(sender, text)?)
    }

    /// The sender it signs as.
    pub fn sender(&self) -> Sender {
        self.sender
    }

    /// The headers `sender` sends with `body`, signed at `at`: the proof, the timestamp
    /// where it is signed, and `id` in the sender's id header (the first of
    /// [`Sender::id_headers`]) or inside the signature (Standard Webhooks). Stripe and Slack
    /// send no id header, so `id` is not sent for them.
    pub fn sign(&self, id: &DeliveryId, at: SystemTime, body: &[u8]) -> HeaderMap {
        let key = self.secret.key();
        let ts = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs())
            .to_string();
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
                put("x-slack-request-timestamp", ts);
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
                put("webhook-timestamp", ts);
                headers.insert("webhook-id", id.as_header().clone());
            }
            Scheme::Stripe => {
                let tag = hmac(key, &[ts.as_bytes(), b"."], body);
                put("stripe-signature", format!("t={ts},v1={}", hex(&tag)));
            }
        }
        if let Some(&header) = self.sender.id_headers().first() {
            headers.insert(HeaderName::from_static(header), id.as_header().clone());
        }
        headers
    }
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
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::Fault;
    use crate::webhooks::delivery::Delivery;
    use crate::webhooks::keys::Keys;
    use crate::webhooks::secret::SecretSet;

    /// A secret in each sender's form: Standard Webhooks' the `whsec_` base64 of 32 bytes.
    fn text(sender: Sender) -> &'static str {
        match sender {
            Sender::StandardWebhooks | Sender::GitLabSigned => {
                "whsec_dGhlIGtleSBvZiBhbiBpbmJveCBmZWQgYnkgc3ZpeCE="
            }
            Sender::Stripe => "whsec_stripe_endpoint_secret",
            _ => "It's a Secret to Everybody",
        }
    }

    #[test]
    fn what_it_signs_verifies_for_every_sender_and_a_changed_body_does_not() {
        let id = DeliveryId::parse("72d3162e-cc78-11e3-81ab-4c9367dc0958").unwrap();
        let body = br#"{"type":"invoice.paid"}"#;
        let at = SystemTime::now() - Duration::from_secs(30);
        for sender in Sender::ALL {
            let signer = Signer::for_sender(sender, text(sender)).unwrap();
            let keys =
                Keys::new(sender, SecretSet::for_sender(sender, text(sender)).unwrap()).unwrap();
            let headers = signer.sign(&id, at, body);
            let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), at)
                .unwrap_or_else(|refusal| panic!("{sender}: {refusal}"));
            let sends_id = !sender.id_headers().is_empty()
                || matches!(sender, Sender::StandardWebhooks | Sender::GitLabSigned);
            assert_eq!(delivery.id(), sends_id.then_some(id.as_str()), "{sender}");
            if sender == Sender::GitLab {
                continue; // its token signs no body
            }
            let changed = br#"{"type":"invoice.paie"}"#.to_vec().into();
            let refused = Delivery::verify(&keys, &headers, changed, at).unwrap_err();
            assert_eq!(refused.code(), "webhook-signature-mismatch", "{sender}");
        }
    }

    #[test]
    fn the_senders_published_examples_come_out_as_published() {
        // docs.github.com, "Validating webhook deliveries".
        let github = Signer::for_sender(Sender::GitHub, "It's a Secret to Everybody").unwrap();
        let id = DeliveryId::parse("msg_p5jXN8AQM9LWM0D4loKWxJek").unwrap();
        let headers = github.sign(&id, SystemTime::now(), b"Hello, World!");
        assert_eq!(
            headers["x-hub-signature-256"],
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
        // The Standard Webhooks libraries' test vector.
        let standard = Signer::for_sender(
            Sender::StandardWebhooks,
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )
        .unwrap();
        let at = UNIX_EPOCH + Duration::from_secs(1614265330);
        let headers = standard.sign(&id, at, br#"{"test": 2432232314}"#);
        assert_eq!(
            headers["webhook-signature"],
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(headers["webhook-timestamp"], "1614265330");
        assert_eq!(headers["webhook-id"], "msg_p5jXN8AQM9LWM0D4loKWxJek");
    }

    #[test]
    fn a_signer_refuses_a_secret_in_the_wrong_form_as_keys_do() {
        let raw = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let refused = Signer::new(Sender::StandardWebhooks, raw).unwrap_err();
        assert_eq!(
            refused,
            SecretError::EncodedKey {
                sender: Sender::StandardWebhooks
            }
        );
    }
}
