//! The ledger's counts at one moment, as plain data.

use super::routes::RouteRequests;
use super::series::Series;
use crate::outcome::Outcome;

/// The ledger's counts at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Requests that entered the layer.
    pub started: u64,
    /// Requests started and not yet finished (a streaming body counts until its end).
    pub in_flight: u64,
    /// See [`Outcome::Ok`].
    pub ok: u64,
    /// See [`Outcome::Handled`].
    pub handled: u64,
    /// See [`Outcome::Rejected`].
    pub rejected: u64,
    /// See [`Outcome::ServiceError`].
    pub service_error: u64,
    /// See [`Outcome::Panicked`].
    pub panicked: u64,
    /// See [`Outcome::Aborted`].
    pub aborted: u64,
    /// See [`Outcome::Cancelled`].
    pub cancelled: u64,
    /// Failure events written in full.
    pub reported: u64,
    /// Failure events held back by flood control, and counted here instead.
    pub suppressed: u64,
    /// Failure series, sorted by route, code and status; the overflow series last, if any.
    pub series: Vec<Series>,
    /// Requests per route template and outcome, for the routes with any: named routes
    /// sorted by template, then `~unmatched`, then `~overflow`. Per outcome they sum to the
    /// outcome's count (exactly at quiescence).
    pub routes: Vec<RouteRequests>,
}

impl Snapshot {
    /// The count of one outcome.
    pub fn outcome(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Ok => self.ok,
            Outcome::Handled => self.handled,
            Outcome::Rejected => self.rejected,
            Outcome::ServiceError => self.service_error,
            Outcome::Panicked => self.panicked,
            Outcome::Aborted => self.aborted,
            Outcome::Cancelled => self.cancelled,
        }
    }

    /// Requests that reached an outcome.
    pub fn finished(&self) -> u64 {
        Outcome::ALL.iter().map(|&o| self.outcome(o)).sum()
    }

    /// Requests that ended in anything but [`Outcome::Ok`].
    pub fn failures(&self) -> u64 {
        self.finished() - self.ok
    }

    /// Whether `started == ok + handled + rejected + service_error + panicked + aborted +
    /// cancelled + in_flight`. Always true at quiescence.
    pub fn is_balanced(&self) -> bool {
        self.started == self.finished() + self.in_flight
    }
}
