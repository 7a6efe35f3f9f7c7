//! What catch-up keeps (see the service's `catchup` module): per inbox, the hook GitHub is
//! asked about and the credentials that ask, where the last look stopped (the cursor), which
//! node works the inbox now (the lease), and the deliveries asked for and not yet stored.
//!
//! The lease and the cursor are judged by the database's clock and written in one statement
//! each, so that every node of a fleet agrees: a lease is taken only when free, expired or
//! already this node's, and the cursor moves only under the lease that holds it (a node whose
//! lease ran out cannot move it back or forward).

use super::{Store, StoreError};

/// The columns each backend's `catchup_row` reads, in its order: the same SQL on SQLite and
/// on PostgreSQL.
pub(in crate::store) const SELECT_CATCHUP: &str =
    "SELECT instance_id, inbox_id, hook_kind, hook_owner, hook_id,
    token, app_id, private_key, cursor_id, failing, last_success_ms,
    (SELECT count(*) FROM catchup_asks a WHERE a.inbox_id = catchup.inbox_id)
    FROM catchup";

/// An inbox's catch-up as stored. The token and the private key are secrets, kept as an
/// inbox's webhook secret is: never logged (no `Debug`), never answered after they are given.
#[derive(Clone)]
pub struct CatchUpRow {
    pub instance: String,
    pub inbox: String,
    /// `repository`, `organization` or `app`.
    pub hook_kind: String,
    /// `owner/name` for a repository hook, the organization's login for an organization
    /// hook, empty for an App's.
    pub hook_owner: String,
    /// The hook's id; 0 for an App's, which has one hook.
    pub hook_id: i64,
    pub token: Option<String>,
    pub app_id: Option<i64>,
    pub private_key: Option<String>,
    /// The id of the newest delivery looked at, 0 before the first look.
    pub cursor: i64,
    /// Why GitHub refused these credentials, until new ones are given.
    pub failing: Option<String>,
    /// When a pass last went to its end (Unix milliseconds), or when catch-up was given, if
    /// none has yet.
    pub last_success_ms: i64,
    /// Deliveries asked for and not stored yet.
    pub pending: i64,
}

/// What a pass found out about one delivery GitHub lists as failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskState {
    /// The store holds the delivery's id in this inbox: it arrived after all.
    pub stored: bool,
    /// How often a redelivery was asked for already.
    pub asks: i64,
}

/// How a pass ended, written as its lease is given back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassEnd {
    /// Every delivery listed was looked at.
    Succeeded,
    /// It stopped early (a rate limit, GitHub's 5xx): the cursor says where.
    Interrupted,
    /// GitHub refused the credentials; the reason, kept until new credentials are given.
    Refused(String),
}

impl Store {
    /// Gives the inbox of `row` its catch-up, replacing any it had. The cursor is kept when
    /// the hook stays the same (new credentials for it), and starts again for another hook;
    /// a refusal of the old credentials is forgotten.
    pub async fn set_catchup(&self, row: CatchUpRow) -> Result<(), StoreError> {
        dispatch!(self.set_catchup(row))
    }

    /// The catch-up of the inbox `inbox` of `instance`, if it has one.
    pub async fn catchup(
        &self,
        instance: String,
        inbox: String,
    ) -> Result<Option<CatchUpRow>, StoreError> {
        dispatch!(self.catchup(instance, inbox))
    }

    /// Takes the catch-up away from the inbox; whether it had one.
    pub async fn delete_catchup(
        &self,
        instance: String,
        inbox: String,
    ) -> Result<bool, StoreError> {
        dispatch!(self.delete_catchup(instance, inbox))
    }

    /// Up to `limit` inboxes' catch-ups, ordered by instance and inbox.
    pub async fn catchups(&self, limit: u32) -> Result<Vec<CatchUpRow>, StoreError> {
        dispatch!(self.catchups(limit))
    }

    /// Takes the inbox's lease for `node` for `ttl_ms`, when it is free, expired or already
    /// `node`'s; whether `node` holds it now.
    pub async fn take_lease(
        &self,
        inbox: String,
        node: String,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self.take_lease(inbox, node, ttl_ms))
    }

    /// Moves the inbox's cursor up to `cursor` (never down) and renews the lease for
    /// `ttl_ms`, only while `node` holds it; whether it did.
    pub async fn advance_cursor(
        &self,
        inbox: String,
        node: String,
        cursor: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self.advance_cursor(inbox, node, cursor, ttl_ms))
    }

    /// Ends `node`'s pass over the inbox as `end` says and gives the lease back; whether
    /// this call is the one that recorded a refusal (false when one was already recorded, so
    /// that a refusal is reported once).
    pub async fn end_pass(
        &self,
        inbox: String,
        node: String,
        end: PassEnd,
    ) -> Result<bool, StoreError> {
        dispatch!(self.end_pass(inbox, node, end))
    }

    /// Gives back every lease `node` holds, at a clean stop, so that another node need not
    /// wait for them to run out; how many it held.
    pub async fn release_leases(&self, node: String) -> Result<u64, StoreError> {
        dispatch!(self.release_leases(node))
    }

    /// Whether the inbox holds the delivery `guid`, and how often it was asked for.
    pub async fn ask_state(&self, inbox: String, guid: String) -> Result<AskState, StoreError> {
        dispatch!(self.ask_state(inbox, guid))
    }

    /// Records that a redelivery of `guid` was asked for.
    pub async fn record_ask(&self, inbox: String, guid: String) -> Result<(), StoreError> {
        dispatch!(self.record_ask(inbox, guid))
    }

    /// Forgets the asks whose delivery the inbox now holds, and those older than
    /// `older_than_ms` (GitHub keeps deliveries no longer); how many were stored.
    pub async fn take_recovered(
        &self,
        inbox: String,
        older_than_ms: i64,
    ) -> Result<u64, StoreError> {
        dispatch!(self.take_recovered(inbox, older_than_ms))
    }
}
