//! A delivery as the spool keeps it: where it goes, what it is, its proof when it could not
//! be checked yet, and its body.
//!
//! Fields are length-prefixed (`u32`, little-endian) after a version byte; the spool's own
//! record checksum covers them. A delivery whose signature was checked before spooling has
//! no proof; one that could not be checked (the store unreachable, its inbox not seen since
//! start) keeps the proof from its headers, and is checked when drained. The proof of a
//! GitLab delivery is the digest of its token, never the token; any other's, the signature
//! headers the verifier reads, names and values as sent.
//!
//! Version 2 adds the moment the delivery arrived (milliseconds since the Unix epoch, 8
//! bytes), at which a spooled proof is judged; version 1 records, which lack it, are still
//! read, judged when drained. Version 3 adds the replay key of a delivery verified before it
//! was spooled (32 bytes, or none), which the drain stores it under; version 1 and 2
//! records, which lack it, are stored under their delivery id alone.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ids::{DeliveryId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::verify::webhook::Proof;

const VERSION: u8 = 3;
/// Records written before the arrival time was kept.
const VERSION_1: u8 = 1;
/// Records written before the replay key was kept.
const VERSION_2: u8 = 2;

/// One spooled delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpooledDelivery {
    pub instance: InstanceId,
    pub inbox: InboxId,
    pub provider: Provider,
    /// The event header's value, as sent.
    pub event: String,
    pub delivery: DeliveryId,
    /// `None` when the signature was checked before spooling.
    pub proof: Option<Proof>,
    /// When it arrived; `None` in a version 1 record.
    pub received: Option<SystemTime>,
    /// The replay key of what its sender signed (`ReplayKey::of`), for a delivery verified
    /// before spooling; `None` for one verified when drained, and in version 1 and 2 records.
    pub key: Option<[u8; 32]>,
    pub body: Vec<u8>,
}

impl SpooledDelivery {
    /// The record's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let proof = self.proof.as_ref().map(Proof::to_bytes).unwrap_or_default();
        let received = self
            .received
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map(|since| (since.as_millis() as u64).to_le_bytes().to_vec())
            .unwrap_or_default();
        let key = self.key.as_ref().map_or(&[][..], |key| &key[..]);
        let fields: [&[u8]; 8] = [
            self.instance.as_str().as_bytes(),
            self.inbox.as_str().as_bytes(),
            self.provider.as_str().as_bytes(),
            self.event.as_bytes(),
            self.delivery.as_str().as_bytes(),
            &proof,
            &received,
            key,
        ];
        let size = fields.iter().map(|f| 4 + f.len()).sum::<usize>() + 1 + self.body.len();
        let mut out = Vec::with_capacity(size);
        out.push(VERSION);
        for field in fields {
            out.extend_from_slice(&(field.len() as u32).to_le_bytes());
            out.extend_from_slice(field);
        }
        out.extend_from_slice(&self.body);
        out
    }

    /// A delivery from [`encode`](Self::encode)'s bytes, or `None` if they are not one.
    pub fn decode(bytes: &[u8]) -> Option<SpooledDelivery> {
        let (&version, mut rest) = bytes.split_first()?;
        if ![VERSION, VERSION_1, VERSION_2].contains(&version) {
            return None;
        }
        let mut field = || -> Option<&[u8]> {
            let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            let value = rest.get(4..4 + len)?;
            rest = &rest[4 + len..];
            Some(value)
        };
        let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).ok();
        // Ids the service wrote; one a store does not hold is refused when drained.
        let instance = InstanceId::stored(text(field()?)?);
        let inbox = InboxId::stored(text(field()?)?);
        let provider = Provider::parse(std::str::from_utf8(field()?).ok()?)?;
        let event = text(field()?)?;
        let delivery = DeliveryId::parse(std::str::from_utf8(field()?).ok()?).ok()?;
        let proof = match field()? {
            [] => None,
            bytes => Some(Proof::from_bytes(provider, bytes)?),
        };
        let received = match version {
            VERSION_1 => None,
            _ => match field()? {
                [] => None,
                millis => {
                    let millis = u64::from_le_bytes(millis.try_into().ok()?);
                    Some(UNIX_EPOCH + Duration::from_millis(millis))
                }
            },
        };
        let key = match version {
            VERSION_1 | VERSION_2 => None,
            _ => match field()? {
                [] => None,
                key => Some(key.try_into().ok()?),
            },
        };
        Some(SpooledDelivery {
            instance,
            inbox,
            provider,
            event,
            delivery,
            proof,
            received,
            key,
            body: rest.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests;
