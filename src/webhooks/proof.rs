//! What a delivery carries to prove its sender holds the secret, read from its headers
//! before the body ([`Proof::read`]), then checked against the body ([`Proof::check`]).
//!
//! Reading refuses what no secret could make right (a missing, duplicated or malformed
//! header, a timestamp out of the window), so such a request costs no body read. Checking
//! runs one HMAC per live secret over the signed prefix and the body as they are, with no
//! copy, and compares tags of a fixed length in constant time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hmac::{KeyInit, Mac};
use http::{HeaderMap, HeaderValue};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use crate::webhooks::id;
use crate::webhooks::refusal::{malformed, Refusal};
use crate::webhooks::secret::{token_digest, SecretSet};
use crate::webhooks::sender::{Scheme, Sender};

type HmacSha256 = hmac::Hmac<Sha256>;

/// Bytes of an HMAC-SHA256 tag.
const TAG_BYTES: usize = 32;
/// Characters of a tag in hex.
const HEX_TAG_LEN: usize = 2 * TAG_BYTES;
/// Characters of a tag in padded base64.
const BASE64_TAG_LEN: usize = TAG_BYTES.div_ceil(3) * 4;
/// Signatures one header may list: a rotation sends two, a sender signing with each of a
/// few keys a handful; past this a header only makes the receiver compute more.
pub const MAX_SIGNATURES: usize = 8;
/// Digits of a Unix timestamp in seconds: ten reach the year 2286, twelve anything a clock
/// may say; more is not a timestamp.
const MAX_TIMESTAMP_DIGITS: usize = 12;

/// A timestamp the sender signed, and where it came from.
#[derive(Debug, Clone, Copy)]
struct Stamp<'h> {
    header: &'static str,
    text: &'h [u8],
    at: SystemTime,
}

#[derive(Debug)]
enum Kind<'h> {
    /// The secret itself, as GitLab sends it.
    Token(&'h [u8]),
    /// HMACs of `prefix` joined, then the body.
    Hmac {
        prefix: [&'h [u8]; 4],
        tags: Vec<[u8; TAG_BYTES]>,
    },
}

/// The proof of one delivery, borrowed from its headers.
#[derive(Debug)]
pub(crate) struct Proof<'h> {
    header: &'static str,
    kind: Kind<'h>,
    stamp: Option<Stamp<'h>>,
    /// The delivery id when the signature covers it.
    signed_id: Option<&'h HeaderValue>,
}

impl<'h> Proof<'h> {
    /// The proof `sender` puts in `headers`, or the refusal no secret can undo.
    pub(crate) fn read(sender: Sender, headers: &'h HeaderMap) -> Result<Self, Refusal> {
        match sender.scheme() {
            Scheme::Hex { header, prefix } => read_hex(sender, headers, header, prefix),
            Scheme::Base64 { header } => {
                let text = required_signature(headers, header)?;
                let tag = base64_tag(text)
                    .ok_or_else(|| malformed(header, "is not the base64 of 32 bytes"))?;
                Ok(Self::hmac(header, vec![tag]))
            }
            Scheme::Token { header } => Ok(Self {
                header,
                kind: Kind::Token(required_signature(headers, header)?),
                stamp: None,
                signed_id: None,
            }),
            Scheme::Standard => read_standard(headers),
            Scheme::Stripe => read_stripe(headers),
        }
    }

    fn hmac(header: &'static str, tags: Vec<[u8; TAG_BYTES]>) -> Self {
        Self {
            header,
            kind: Kind::Hmac {
                prefix: [b""; 4],
                tags,
            },
            stamp: None,
            signed_id: None,
        }
    }

    /// The signed timestamp, refused when it is further than `tolerance` from `now`.
    pub(crate) fn check_time(
        &self,
        now: SystemTime,
        tolerance: Duration,
    ) -> Result<Option<SystemTime>, Refusal> {
        let Some(stamp) = self.stamp else {
            return Ok(None);
        };
        let header = stamp.header;
        match now.duration_since(stamp.at) {
            Ok(age) if age > tolerance => Err(Refusal::TimestampStale { header, tolerance }),
            Err(ahead) if ahead.duration() > tolerance => {
                Err(Refusal::TimestampFuture { header, tolerance })
            }
            _ => Ok(Some(stamp.at)),
        }
    }

    /// The delivery id the signature covers, if it covers one.
    pub(crate) fn signed_id(&self) -> Option<&'h HeaderValue> {
        self.signed_id
    }

    /// Whether `body` is signed by a secret of `secrets` live at `now`. Every live secret is
    /// tried, and every tag against each, so the time taken does not say which matched.
    ///
    /// On a match, the tag computed under the first live secret (`None` for a token): the
    /// same for every copy of the signed bytes, whichever tags the header lists, so it is
    /// what a replay is recognised by.
    pub(crate) fn check(
        &self,
        body: &[u8],
        secrets: &SecretSet,
        now: SystemTime,
    ) -> Result<Option<[u8; TAG_BYTES]>, Refusal> {
        let (matched, first) = match &self.kind {
            // Digests on both sides: the comparison takes the same time whatever the token's
            // length, which a plain comparison would tell. A digest kept for later is checked
            // by this same call.
            Kind::Token(token) => (
                secrets.matches_token_digest(&token_digest(token), now),
                None,
            ),
            Kind::Hmac { prefix, tags } => {
                let mut matched = Choice::from(0);
                let mut first = None;
                for secret in secrets.live(now) {
                    let computed = hmac(secret.key(), prefix, body);
                    matched |= tags
                        .iter()
                        .fold(Choice::from(0), |any, tag| any | tag.ct_eq(&computed));
                    first.get_or_insert(computed);
                }
                (bool::from(matched), first)
            }
        };
        if matched {
            Ok(first)
        } else {
            Err(Refusal::SignatureMismatch {
                header: self.header,
            })
        }
    }
}

/// HMAC-SHA256 under `key` of the parts of `prefix`, then `body`.
pub(crate) fn hmac(key: &[u8], prefix: &[&[u8]], body: &[u8]) -> [u8; TAG_BYTES] {
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    for part in prefix {
        mac.update(part);
    }
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// The one value of `name`; a second one is refused, since a proxy may pick either and
/// the signature would then be checked on a value the handler does not see.
pub(crate) fn one<'h>(
    headers: &'h HeaderMap,
    name: &'static str,
) -> Result<Option<&'h HeaderValue>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(malformed(name, "is sent more than once"));
    }
    Ok(first)
}

/// A hex tag after `prefix`; for Slack, over `v0:ts:` and the body.
fn read_hex<'h>(
    sender: Sender,
    headers: &'h HeaderMap,
    header: &'static str,
    prefix: &'static str,
) -> Result<Proof<'h>, Refusal> {
    let text = required_signature(headers, header)?;
    let tag = text
        .strip_prefix(prefix.as_bytes())
        .and_then(hex_tag)
        .ok_or_else(|| malformed(header, hex_problem(prefix)))?;
    let mut proof = Proof::hmac(header, vec![tag]);
    if sender == Sender::Slack {
        let stamp = read_stamp(headers, "x-slack-request-timestamp")?;
        proof.kind = Kind::Hmac {
            prefix: [b"v0:", stamp.text, b":", b""],
            tags: vec![tag],
        };
        proof.stamp = Some(stamp);
    }
    Ok(proof)
}

fn required_signature<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<&'h [u8], Refusal> {
    match one(headers, name)? {
        Some(value) if !value.is_empty() => Ok(value.as_bytes()),
        _ => Err(Refusal::SignatureMissing { header: name }),
    }
}

fn required<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<&'h HeaderValue, Refusal> {
    one(headers, name)?.ok_or(Refusal::HeaderMissing { header: name })
}

fn hex_problem(prefix: &str) -> &'static str {
    match prefix {
        "sha256=" => "is not `sha256=` and 64 lower-case hex digits",
        "v0=" => "is not `v0=` and 64 lower-case hex digits",
        _ => "is not 64 lower-case hex digits",
    }
}

/// 32 bytes from exactly 64 lower-case hex digits. Upper case is refused: every sender
/// writes lower case and their own libraries compare the text, so another spelling was not
/// written by the sender.
fn hex_tag(text: &[u8]) -> Option<[u8; TAG_BYTES]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    if text.len() != HEX_TAG_LEN {
        return None;
    }
    let mut tag = [0; TAG_BYTES];
    for (byte, pair) in tag.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(tag)
}

/// 32 bytes from their canonical padded base64, and nothing else.
fn base64_tag(text: &[u8]) -> Option<[u8; TAG_BYTES]> {
    if text.len() != BASE64_TAG_LEN {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    decoded.try_into().ok()
}

fn read_stamp<'h>(headers: &'h HeaderMap, header: &'static str) -> Result<Stamp<'h>, Refusal> {
    let text = required(headers, header)?.as_bytes();
    stamp(header, text)
}

fn stamp<'h>(header: &'static str, text: &'h [u8]) -> Result<Stamp<'h>, Refusal> {
    let digits = !text.is_empty()
        && text.len() <= MAX_TIMESTAMP_DIGITS
        && text.iter().all(u8::is_ascii_digit);
    let seconds = digits
        .then(|| std::str::from_utf8(text).ok()?.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| malformed(header, "is not a Unix time in seconds"))?;
    let at = UNIX_EPOCH
        .checked_add(Duration::from_secs(seconds))
        .ok_or_else(|| malformed(header, "is not a Unix time in seconds"))?;
    Ok(Stamp { header, text, at })
}

/// The header names of Standard Webhooks, and the same under Svix's prefix.
const STANDARD_HEADERS: [[&str; 3]; 2] = [
    ["webhook-signature", "webhook-id", "webhook-timestamp"],
    ["svix-signature", "svix-id", "svix-timestamp"],
];

/// `webhook-signature: v1,<base64> v1,<base64>` over `id.timestamp.body`; the `svix-`
/// names when the `webhook-` ones are absent, never a mix of the two.
fn read_standard(headers: &HeaderMap) -> Result<Proof<'_>, Refusal> {
    let [signature, id, timestamp] = STANDARD_HEADERS
        .into_iter()
        .find(|names| headers.contains_key(names[0]))
        .unwrap_or(STANDARD_HEADERS[0]);
    let text = required_signature(headers, signature)?;
    let mut tags = Vec::new();
    for entry in text.split(|&c| c == b' ').filter(|e| !e.is_empty()) {
        if tags.len() == MAX_SIGNATURES {
            return Err(malformed(
                signature,
                "lists more signatures than are checked",
            ));
        }
        // Other versions (`v1a`, asymmetric) are not HMACs: skipped, as the spec says.
        if let Some(encoded) = entry.strip_prefix(b"v1,") {
            let tag = base64_tag(encoded).ok_or_else(|| {
                malformed(
                    signature,
                    "holds a `v1` signature that is not the base64 of 32 bytes",
                )
            })?;
            tags.push(tag);
        }
    }
    if tags.is_empty() {
        return Err(Refusal::SignatureMissing { header: signature });
    }
    let id_value = required(headers, id)?;
    check_id(id, id_value)?;
    let stamp = read_stamp(headers, timestamp)?;
    Ok(Proof {
        header: signature,
        kind: Kind::Hmac {
            prefix: [id_value.as_bytes(), b".", stamp.text, b"."],
            tags,
        },
        stamp: Some(stamp),
        signed_id: Some(id_value),
    })
}

/// `Stripe-Signature: t=<ts>,v1=<hex>,v1=<hex>,v0=…` over `ts.body`.
fn read_stripe(headers: &HeaderMap) -> Result<Proof<'_>, Refusal> {
    const HEADER: &str = "stripe-signature";
    let text = required_signature(headers, HEADER)?;
    let mut time = None;
    let mut tags = Vec::new();
    for item in text.split(|&c| c == b',') {
        let Some(at) = item.iter().position(|&c| c == b'=') else {
            return Err(malformed(HEADER, "has an item that is not `key=value`"));
        };
        let (key, value) = (&item[..at], &item[at + 1..]);
        match key {
            b"t" if time.is_some() => return Err(malformed(HEADER, "has more than one `t=`")),
            b"t" => time = Some(stamp(HEADER, value)?),
            b"v1" if tags.len() == MAX_SIGNATURES => {
                return Err(malformed(HEADER, "lists more signatures than are checked"))
            }
            b"v1" => tags.push(hex_tag(value).ok_or_else(|| {
                malformed(HEADER, "holds a `v1=` that is not 64 lower-case hex digits")
            })?),
            // `v0` and any later scheme: not what this verifier checks.
            _ => {}
        }
    }
    let stamp = time.ok_or_else(|| malformed(HEADER, "has no `t=`"))?;
    if tags.is_empty() {
        return Err(Refusal::SignatureMissing { header: HEADER });
    }
    Ok(Proof {
        header: HEADER,
        kind: Kind::Hmac {
            prefix: [stamp.text, b".", b"", b""],
            tags,
        },
        stamp: Some(stamp),
        signed_id: None,
    })
}

/// A delivery id is a [`DeliveryId`](crate::webhooks::DeliveryId): checked in place, with
/// no copy.
pub(crate) fn check_id(header: &'static str, value: &HeaderValue) -> Result<(), Refusal> {
    id::check(value.as_bytes()).map_err(|error| malformed(header, error.problem()))
}
