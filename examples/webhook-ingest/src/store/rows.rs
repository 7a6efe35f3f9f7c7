//! The rows the store reads and writes, the same for SQLite and PostgreSQL: what the handlers
//! and the spool's drainer get back, and what they hand in. Secrets are held as they must be
//! for verification; an instance's API key only as its SHA-256.

use std::time::Duration;

use crate::ids::{DigestId, InboxId, InstanceId};
use crate::provider::Provider;

/// An instance as stored: the API key only as its SHA-256.
pub struct InstanceRow {
    pub id: InstanceId,
    pub key_hash: Vec<u8>,
    pub created_at: String,
}

/// An inbox as the webhook route needs it: its digest, provider and signing secrets.
#[derive(Clone, PartialEq)]
pub struct InboxRow {
    pub id: InboxId,
    pub digest_id: DigestId,
    pub provider: Provider,
    pub secret: String,
    /// The secret the last rotation replaced, if the inbox was ever rotated.
    pub previous: Option<PreviousSecret>,
}

/// An inbox with the instance it belongs to.
#[derive(Clone)]
pub struct KnownInbox {
    pub instance: InstanceId,
    pub inbox: InboxRow,
}

/// The secret an inbox had before its last rotation, and how long ago that was.
#[derive(Clone, PartialEq)]
pub struct PreviousSecret {
    pub secret: String,
    /// Time since the rotation, by the database's clock: every node of a fleet reads the
    /// same age, whatever its own clock says.
    pub age: Duration,
}

impl InboxRow {
    /// An inbox from its columns as both stores select them: `id, digest_id, vcs, secret,
    /// previous_secret` and the milliseconds since the last rotation by the database's clock.
    pub(super) fn from_columns(
        id: String,
        digest_id: String,
        provider: String,
        secret: String,
        previous: Option<String>,
        rotated_ms_ago: Option<i64>,
    ) -> Self {
        Self {
            id: InboxId::stored(id),
            digest_id: DigestId::stored(digest_id),
            // Written only from `Provider::as_str`, so always one of the three.
            provider: Provider::parse(&provider).unwrap_or(Provider::Github),
            secret,
            previous: previous_secret(previous, rotated_ms_ago),
        }
    }

    /// The previous secret, if it is still inside the grace period `grace`.
    pub fn previous_secret(&self, grace: Duration) -> Option<&str> {
        self.previous
            .as_ref()
            .filter(|previous| previous.age < grace)
            .map(|previous| previous.secret.as_str())
    }
}

/// The age of a rotation from the milliseconds the database reports, or `None` when the
/// inbox was never rotated. A negative age (clocks moved back) counts as just rotated.
fn previous_secret(secret: Option<String>, age_ms: Option<i64>) -> Option<PreviousSecret> {
    Some(PreviousSecret {
        secret: secret?,
        age: Duration::from_millis(age_ms?.max(0) as u64),
    })
}

/// One commit as stored; the optional parts are `None` when the payload did not carry them.
/// It serializes as the commits API lists it, its absent parts as `null`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Commit {
    /// The commit id (GitHub and GitLab `id`, Bitbucket `hash` or `toHash`).
    pub sha: String,
    pub message: Option<String>,
    /// The author as the provider names them: a name, or Bitbucket's git author line.
    pub author: Option<String>,
    /// The author date exactly as the provider wrote it.
    pub timestamp: Option<String>,
    /// `owner/name` (Bitbucket Data Center: `PROJECT/slug`).
    pub repository: String,
    /// The branch, or the full ref when it is not a branch (`refs/tags/v1`).
    pub branch: String,
}

/// A commit as listed: its place in the digest's order (`seq`, newest highest) and inbox.
pub struct StoredCommit {
    pub seq: i64,
    pub inbox_id: String,
    pub commit: Commit,
}

/// Refused deliveries kept per inbox, newest first; older ones are pruned as new ones come.
/// Enough for a day of pushes to a busy repository sent with a wrong secret, which is what an
/// operator looks for after fixing it (GitHub lets a delivery be redelivered for 3 days), and
/// small enough that a sender hammering one inbox with junk costs a bounded table.
pub const REFUSALS_KEPT_PER_INBOX: i64 = 500;

/// A delivery refused for something the sender must fix, as kept for the operator: never the
/// body, never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedDelivery {
    /// The provider's delivery id, when it sent a usable one.
    pub delivery: Option<String>,
    pub status: u16,
    pub code: String,
}

/// A kept refusal and when it happened (RFC 3339, UTC, by the database's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedDeliveryRow {
    pub refusal: RefusedDelivery,
    pub refused_at: String,
}

/// What became of a delivery.
#[derive(Debug, PartialEq, Eq)]
pub enum Ingested {
    Stored(usize),
    /// The inbox has this delivery id already: a redelivery.
    Duplicate,
    /// Under another delivery id, the inbox has a delivery of the same replay key (what the
    /// sender signed): a replay, not stored.
    Replayed,
}

/// Row counts of one instance, for the load scripts' reconciliation.
#[derive(Debug, Default, serde::Serialize)]
pub struct Stats {
    pub digests: i64,
    pub inboxes: i64,
    pub deliveries: i64,
    pub redeliveries: i64,
    pub commits: i64,
}

/// An inbox to create.
pub struct NewInbox {
    pub instance: InstanceId,
    pub digest: DigestId,
    pub id: InboxId,
    pub provider: Provider,
    pub name: String,
    pub secret: String,
}
