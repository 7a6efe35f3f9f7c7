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
use crate::receive::payload::Shape;

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

/// What the event named `name` of `vcs` asks of us.
pub fn classify(vcs: Vcs, name: &str) -> Event {
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

/// What a delivery carries to prove that its sender holds the inbox's secret, read from its
/// headers before the secret is known, so that a delivery can be spooled and checked later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// GitHub's and Bitbucket's HMAC-SHA256 of the body, from the header it came in.
    Hmac { header: &'static str, tag: Vec<u8> },
    /// GitLab's token, kept only as its SHA-256: the token is the secret itself, and the
    /// check compares digests anyway.
    Token { digest: [u8; 32] },
}

const HMAC_PROOF: u8 = 1;
const TOKEN_PROOF: u8 = 2;

impl Proof {
    /// The proof `vcs` puts in its headers; a missing or malformed one is refused now,
    /// since no secret can make it right.
    pub fn read(vcs: Vcs, headers: &HeaderMap) -> Result<Proof, IngestError> {
        match vcs {
            Vcs::Github => read_hmac("x-hub-signature-256", "X-Hub-Signature-256", headers),
            Vcs::Bitbucket => read_hmac("x-hub-signature", "X-Hub-Signature", headers),
            Vcs::Gitlab => {
                let token = headers
                    .get("x-gitlab-token")
                    .ok_or(IngestError::BadSignature {
                        header: "X-Gitlab-Token",
                        problem: "is missing",
                    })?;
                Ok(Proof::Token {
                    digest: Sha256::digest(token.as_bytes()).into(),
                })
            }
        }
    }

    /// The proof as bytes, for the spool.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Proof::Hmac { tag, .. } => [&[HMAC_PROOF][..], tag].concat(),
            Proof::Token { digest } => [&[TOKEN_PROOF][..], digest].concat(),
        }
    }

    /// A proof of `vcs` from [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(vcs: Vcs, bytes: &[u8]) -> Option<Proof> {
        match (vcs, bytes.split_first()?) {
            (Vcs::Github, (&HMAC_PROOF, tag)) => Some(Proof::Hmac {
                header: "X-Hub-Signature-256",
                tag: tag.to_vec(),
            }),
            (Vcs::Bitbucket, (&HMAC_PROOF, tag)) => Some(Proof::Hmac {
                header: "X-Hub-Signature",
                tag: tag.to_vec(),
            }),
            (Vcs::Gitlab, (&TOKEN_PROOF, digest)) => Some(Proof::Token {
                digest: digest.try_into().ok()?,
            }),
            _ => None,
        }
    }
}

fn read_hmac(
    header: &'static str,
    display: &'static str,
    headers: &HeaderMap,
) -> Result<Proof, IngestError> {
    let value = headers.get(header).ok_or(IngestError::BadSignature {
        header: display,
        problem: "is missing",
    })?;
    let tag = value
        .as_bytes()
        .strip_prefix(b"sha256=")
        .and_then(hex_decode)
        .filter(|tag| tag.len() == 32)
        .ok_or(IngestError::BadSignature {
            header: display,
            problem: "is not `sha256=` and 64 hex digits",
        })?;
    Ok(Proof::Hmac {
        header: display,
        tag,
    })
}

/// Checks that `body` came from someone who holds the inbox's `secret` or, during a
/// rotation's grace period, its `previous` one, on the raw bytes, in constant time:
/// [`Proof::read`], then [`check`].
pub fn verify(
    vcs: Vcs,
    headers: &HeaderMap,
    secret: &str,
    previous: Option<&str>,
    body: &[u8],
) -> Result<(), IngestError> {
    check(&Proof::read(vcs, headers)?, secret, previous, body)
}

/// The one signature check of the service, at receive time and when a spooled delivery is
/// drained alike: whether `proof` shows that the sender of `body` holds `secret` or, during a
/// rotation's grace period, `previous`, in constant time.
///
/// When both secrets fail, the error is the current secret's: the previous one is on its way
/// out, and what the sender must fix is to sign with the current one.
pub fn check(
    proof: &Proof,
    secret: &str,
    previous: Option<&str>,
    body: &[u8],
) -> Result<(), IngestError> {
    let current = check_one(proof, secret, body);
    match (current, previous) {
        (Err(IngestError::BadSignature { .. }), Some(previous))
            if check_one(proof, previous, body).is_ok() =>
        {
            Ok(())
        }
        (current, _) => current,
    }
}

fn check_one(proof: &Proof, secret: &str, body: &[u8]) -> Result<(), IngestError> {
    match proof {
        Proof::Hmac { header, tag } => {
            let mut mac =
                HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
            mac.update(body);
            // `verify_slice` compares in constant time.
            mac.verify_slice(tag)
                .map_err(|_| IngestError::BadSignature {
                    header,
                    problem: "does not match the body",
                })
        }
        Proof::Token { digest } => {
            // Digests on both sides make the comparison independent of the lengths too.
            let expected = Sha256::digest(secret.as_bytes());
            if bool::from(digest.as_slice().ct_eq(expected.as_slice())) {
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
    sent_delivery_id(vcs, headers)
        .unwrap_or_else(|| Ok(format!("sha256:{}", hex_encode(&Sha256::digest(body)))))
}

/// The delivery id in the provider's header, if one was sent; an error if it is not a usable
/// id.
pub fn sent_delivery_id(vcs: Vcs, headers: &HeaderMap) -> Option<Result<String, IngestError>> {
    let header = vcs
        .delivery_headers()
        .iter()
        .find(|&&header| headers.contains_key(header))?;
    let value = &headers[*header];
    let problem = if value.len() > MAX_DELIVERY_ID_BYTES {
        "is too long for a delivery id"
    } else if value.is_empty() {
        "is empty"
    } else {
        match value.to_str() {
            Ok(id) => return Some(Ok(id.to_owned())),
            Err(_) => "is not visible ASCII",
        }
    };
    Some(Err(IngestError::BadDeliveryId {
        header: display_name(header),
        problem,
    }))
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

    #[test]
    fn either_secret_passes_and_a_third_is_refused_as_the_current_ones_failure() {
        let body = b"{}";
        for vcs in Vcs::ALL {
            let signed = |secret: &str| {
                let mut headers = HeaderMap::new();
                let signature = format!("sha256={}", sign(secret.as_bytes(), body));
                let (name, value) = match vcs {
                    Vcs::Github => ("x-hub-signature-256", signature),
                    Vcs::Bitbucket => ("x-hub-signature", signature),
                    Vcs::Gitlab => ("x-gitlab-token", secret.to_owned()),
                };
                headers.insert(name, value.parse().unwrap());
                headers
            };
            let check = |sent: &str, previous| verify(vcs, &signed(sent), "new", previous, body);
            assert!(check("new", None).is_ok(), "{vcs}");
            assert!(check("new", Some("old")).is_ok(), "{vcs}");
            assert!(check("old", Some("old")).is_ok(), "{vcs}");
            assert!(check("old", None).is_err(), "{vcs}");
            let refused = check("other", Some("old")).unwrap_err();
            assert!(
                matches!(refused, IngestError::BadSignature { problem, .. } if problem.starts_with("does not match")),
                "{vcs}: {refused}"
            );
        }
    }
}
