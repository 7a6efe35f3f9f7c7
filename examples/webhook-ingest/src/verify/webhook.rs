//! What the providers send: which provider and event a delivery is, the proof a delivery
//! carries (kept in the spool when it cannot be checked at once), and its delivery id. The
//! check itself is `faultline::webhooks`', through `verify::keys`; the commits of a push are
//! read in `payload`.
//!
//! Everything here works on headers and raw bytes and touches no store, so it is tested
//! without a server.

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use faultline::webhooks::{token_digest, DeliveryId, Sender, TOKEN_DIGEST_BYTES};
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::VerifyError;
use crate::provider::Provider;

type HmacSha256 = hmac::Hmac<Sha256>;

/// What a delivery carries to prove that its sender holds the inbox's secret, read from its
/// headers before the secret is known, so that a delivery can be spooled and checked later by
/// the same verifier as at receive time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// The signature headers `faultline::webhooks` reads for the delivery's sender, names and
    /// values as sent, every value of one sent twice (so that the drain refuses it as the
    /// receive does).
    Headers(Vec<(HeaderName, HeaderValue)>),
    /// GitLab's token, kept only as its SHA-256: the token is the secret itself, and the
    /// check compares digests anyway.
    Token { digest: [u8; TOKEN_DIGEST_BYTES] },
}

/// A record of version 1 only: GitHub's or Bitbucket's tag, read back as its header.
const HMAC_PROOF: u8 = 1;
const TOKEN_PROOF: u8 = 2;
const HEADERS_PROOF: u8 = 3;

impl Proof {
    /// The proof a delivery of `provider` carries in `headers`. Whether it is well formed is the
    /// verifier's to say before the proof is kept (`verify::keys::check_headers`).
    pub fn read(provider: Provider, headers: &HeaderMap) -> Proof {
        let sender = provider.sender(headers);
        if sender == Sender::GitLab {
            let token = headers.get("x-gitlab-token").map(HeaderValue::as_bytes);
            return Proof::Token {
                digest: token_digest(token.unwrap_or_default()),
            };
        }
        let kept = sender
            .proof_headers()
            .iter()
            .flat_map(|&name| {
                let values = headers.get_all(name).iter();
                values.map(move |value| (HeaderName::from_static(name), value.clone()))
            })
            .collect();
        Proof::Headers(kept)
    }

    /// The kept headers as a request's, to verify with.
    pub fn header_map(headers: &[(HeaderName, HeaderValue)]) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(headers.len());
        for (name, value) in headers {
            map.append(name, value.clone());
        }
        map
    }

    /// The proof as bytes, for the spool: a kind byte, then the digest, or each header as
    /// its length-prefixed (`u32`, little-endian) name and value.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Proof::Token { digest } => [&[TOKEN_PROOF][..], digest].concat(),
            Proof::Headers(headers) => {
                let mut out = vec![HEADERS_PROOF];
                for (name, value) in headers {
                    for part in [name.as_str().as_bytes(), value.as_bytes()] {
                        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
                        out.extend_from_slice(part);
                    }
                }
                out
            }
        }
    }

    /// A proof of `provider` from [`to_bytes`](Self::to_bytes), or from a version 1 record, whose
    /// HMAC proof was the bare tag.
    pub fn from_bytes(provider: Provider, bytes: &[u8]) -> Option<Proof> {
        match (provider, bytes.split_first()?) {
            (Provider::Github | Provider::Bitbucket, (&HMAC_PROOF, tag)) if tag.len() == 32 => {
                let name = provider.sender(&HeaderMap::new()).signature_header();
                let value = HeaderValue::try_from(format!("sha256={}", hex_encode(tag))).ok()?;
                Some(Proof::Headers(vec![(HeaderName::from_static(name), value)]))
            }
            (Provider::Gitlab, (&TOKEN_PROOF, digest)) => Some(Proof::Token {
                digest: digest.try_into().ok()?,
            }),
            (_, (&HEADERS_PROOF, mut rest)) => {
                let mut part = || -> Option<&[u8]> {
                    let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
                    let value = rest.get(4..4 + len)?;
                    rest = &rest[4 + len..];
                    Some(value)
                };
                let mut headers = Vec::new();
                while let Some(name) = part() {
                    let value = HeaderValue::from_bytes(part()?).ok()?;
                    headers.push((HeaderName::from_bytes(name).ok()?, value));
                }
                rest.is_empty().then_some(Proof::Headers(headers))
            }
            _ => None,
        }
    }
}

/// The hex HMAC-SHA256 of `body` under `secret`: what GitHub and Bitbucket put after
/// `sha256=`, and Gitea and Forgejo as it is. For signing (the `sign` command and tests);
/// checking is `faultline::webhooks`'.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(body);
    hex_encode(&mac.finalize().into_bytes())
}

/// The delivery id the provider sent, or, when it sent none, one derived from the body, so
/// a byte-identical redelivery is still recognized.
pub fn delivery_id(
    provider: Provider,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<DeliveryId, VerifyError> {
    sent_delivery_id(provider, headers).unwrap_or_else(|| {
        let derived = format!("sha256:{}", hex_encode(&Sha256::digest(body)));
        Ok(DeliveryId::parse(&derived).expect("a digest in hex is a delivery id"))
    })
}

/// The delivery id in the provider's header, if one was sent; an error if it is not a usable
/// id.
pub fn sent_delivery_id(
    provider: Provider,
    headers: &HeaderMap,
) -> Option<Result<DeliveryId, VerifyError>> {
    let header = provider
        .delivery_headers()
        .iter()
        .find(|&&header| headers.contains_key(header))?;
    let checked = DeliveryId::from_header(&headers[*header]);
    Some(checked.map_err(|error| VerifyError::BadDeliveryId {
        header: display_name(header),
        problem: error.problem(),
    }))
}

/// A header as its sender spells it, for the message a sender's operator reads.
pub(crate) fn display_name(header: &'static str) -> &'static str {
    match header {
        "x-hub-signature-256" => "X-Hub-Signature-256",
        "x-hub-signature" => "X-Hub-Signature",
        "x-gitlab-token" => "X-Gitlab-Token",
        "x-gitea-signature" => "X-Gitea-Signature",
        "x-forgejo-signature" => "X-Forgejo-Signature",
        "x-github-delivery" => "X-GitHub-Delivery",
        "idempotency-key" => "Idempotency-Key",
        "x-gitlab-event-uuid" => "X-Gitlab-Event-UUID",
        "x-request-uuid" => "X-Request-UUID",
        "x-request-id" => "X-Request-Id",
        "x-gitea-delivery" => "X-Gitea-Delivery",
        "x-forgejo-delivery" => "X-Forgejo-Delivery",
        // Standard Webhooks' names are lower-case in its specification.
        other => other,
    }
}

pub fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests;
