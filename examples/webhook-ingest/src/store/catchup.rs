//! What catch-up keeps (see the service's `catchup` module): per inbox, the hook GitHub is
//! asked about and the credentials that ask, where the last look stopped (the cursor), which
//! node works the inbox now (the lease), and the deliveries asked for and not yet stored.
//!
//! The lease and the cursor are judged by the database's clock and written in one statement
//! each, so that every node of a fleet agrees: a lease is taken only when free, expired or
//! already this node's, and the cursor moves only under the lease that holds it (a node whose
//! lease ran out cannot move it back or forward).

use crate::ids::{InboxId, InstanceId};

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
    pub instance: InstanceId,
    pub inbox: InboxId,
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
