//! What the three providers send: which provider and event a delivery is, whether it is
//! authentic, and its delivery id (the commits of a push are read in `payload`).
//!
//! Everything here works on headers and raw bytes and touches no store, so it is tested
//! without a server.

use std::fmt;

use axum::http::HeaderMap;
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::IngestError;
use crate::payload::Shape;

type HmacSha256 = hmac::Hmac<Sha256>;

/// Longest delivery id kept: providers send UUIDs (36 bytes); anything far longer is not one.
pub const MAX_DELIVERY_ID_BYTES: usize = 128;

const GITHUB_EVENT: &str = "x-github-event";
const GITLAB_EVENT: &str = "x-gitlab-event";
const BITBUCKET_EVENT: &str = "x-event-key";

/// A version control provider, and the kind of an inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vcs {
    Github,
    Gitlab,
    Bitbucket,
}

impl Vcs {
    pub const ALL: [Vcs; 3] = [Vcs::Github, Vcs::Gitlab, Vcs::Bitbucket];

    pub fn as_str(self) -> &'static str {
        match self {
            Vcs::Github => "github",
            Vcs::Gitlab => "gitlab",
            Vcs::Bitbucket => "bitbucket",
        }
    }

    pub fn parse(name: &str) -> Option<Vcs> {
        Vcs::ALL.into_iter().find(|vcs| vcs.as_str() == name)
    }

    /// The header that names the event.
    fn event_header(self) -> &'static str {
        match self {
            Vcs::Github => GITHUB_EVENT,
            Vcs::Gitlab => GITLAB_EVENT,
            Vcs::Bitbucket => BITBUCKET_EVENT,
        }
    }

    /// The headers that carry the delivery id, preferred first.
    fn delivery_headers(self) -> &'static [&'static str] {
        match self {
            Vcs::Github => &["x-github-delivery"],
            Vcs::Gitlab => &["idempotency-key", "x-gitlab-event-uuid"],
            // Bitbucket Cloud, then Bitbucket Data Center.
            Vcs::Bitbucket => &["x-request-uuid", "x-request-id"],
        }
    }
}

impl fmt::Display for Vcs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a delivery asks of us.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A push, its payload of this shape.
    Push(Shape),
    Ping,
    /// An event the service acknowledges and does not store (202), by its name.
    Ignored(String),
}

/// The provider whose event header is present, and the event it names.
pub fn detect(headers: &HeaderMap) -> Result<(Vcs, Event), IngestError> {
    for vcs in Vcs::ALL {
        if let Some(value) = headers.get(vcs.event_header()) {
            let name = value.to_str().unwrap_or("(not text)");
            return Ok((vcs, classify(vcs, name)));
        }
    }
    Err(IngestError::UnknownProvider)
}

fn classify(vcs: Vcs, name: &str) -> Event {
    match (vcs, name) {
        (Vcs::Github, "push") => Event::Push(Shape::Github),
        (Vcs::Gitlab, "Push Hook" | "Tag Push Hook") => Event::Push(Shape::Gitlab),
        (Vcs::Bitbucket, "repo:push") => Event::Push(Shape::BitbucketCloud),
        // Bitbucket Data Center's push; its inboxes are Bitbucket inboxes too.
        (Vcs::Bitbucket, "repo:refs_changed") => Event::Push(Shape::BitbucketServer),
        // GitHub's hook-created event and Bitbucket Server's "test connection".
        (Vcs::Github, "ping") | (Vcs::Bitbucket, "diagnostics:ping") => Event::Ping,
        _ => Event::Ignored(name.to_owned()),
    }
}

/// Checks that `body` came from someone who holds `secret`, on the raw bytes, in constant
/// time.
pub fn verify(vcs: Vcs, headers: &HeaderMap, secret: &str, body: &[u8]) -> Result<(), IngestError> {
    match vcs {
        Vcs::Github => verify_hmac("x-hub-signature-256", headers, secret, body),
        Vcs::Bitbucket => verify_hmac("x-hub-signature", headers, secret, body),
        Vcs::Gitlab => {
            let header = "x-gitlab-token";
            let token = headers.get(header).ok_or(IngestError::BadSignature {
                header: "X-Gitlab-Token",
                problem: "is missing",
            })?;
            // Hashing both sides first makes the comparison independent of the lengths too.
            let sent = Sha256::digest(token.as_bytes());
            let expected = Sha256::digest(secret.as_bytes());
            if bool::from(sent.as_slice().ct_eq(expected.as_slice())) {
                Ok(())
            } else {
                Err(IngestError::BadSignature {
                    header: "X-Gitlab-Token",
                    problem: "does not match the inbox secret",
                })
            }
        }
    }
}

fn verify_hmac(
    header: &'static str,
    headers: &HeaderMap,
    secret: &str,
    body: &[u8],
) -> Result<(), IngestError> {
    let display = if header == "x-hub-signature-256" {
        "X-Hub-Signature-256"
    } else {
        "X-Hub-Signature"
    };
    let value = headers.get(header).ok_or(IngestError::BadSignature {
        header: display,
        problem: "is missing",
    })?;
    let tag = value
        .as_bytes()
        .strip_prefix(b"sha256=")
        .and_then(hex_decode)
        .ok_or(IngestError::BadSignature {
            header: display,
            problem: "is not `sha256=` and 64 hex digits",
        })?;
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&tag)
        .map_err(|_| IngestError::BadSignature {
            header: display,
            problem: "does not match the body",
        })
}

/// The hex HMAC-SHA256 of `body` under `secret`: what GitHub and Bitbucket put after
/// `sha256=`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(body);
    hex_encode(&mac.finalize().into_bytes())
}

/// The delivery id the provider sent, or, when it sent none, one derived from the body, so
/// a byte-identical redelivery is still recognized.
pub fn delivery_id(vcs: Vcs, headers: &HeaderMap, body: &[u8]) -> Result<String, IngestError> {
    for &header in vcs.delivery_headers() {
        if let Some(value) = headers.get(header) {
            let problem = if value.len() > MAX_DELIVERY_ID_BYTES {
                "is too long for a delivery id"
            } else if value.is_empty() {
                "is empty"
            } else {
                match value.to_str() {
                    Ok(id) => return Ok(id.to_owned()),
                    Err(_) => "is not visible ASCII",
                }
            };
            return Err(IngestError::BadDeliveryId {
                header: display_name(header),
                problem,
            });
        }
    }
    Ok(format!("sha256:{}", hex_encode(&Sha256::digest(body))))
}

fn display_name(header: &str) -> &'static str {
    match header {
        "x-github-delivery" => "X-GitHub-Delivery",
        "idempotency-key" => "Idempotency-Key",
        "x-gitlab-event-uuid" => "X-Gitlab-Event-UUID",
        "x-request-id" => "X-Request-Id",
        _ => "X-Request-UUID",
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

fn hex_decode(text: &[u8]) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    if text.len() % 2 != 0 {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_published_test_vector() {
        assert_eq!(
            sign(b"It's a Secret to Everybody", b"Hello, World!"),
            "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}
