//! The ledger's counts at one moment, as plain data.

use super::exported::Counter;
use super::routes::RouteRequests;
use super::series::Series;
use super::unread::UnreadBodies;
use crate::outcome::Outcome;

/// The ledger's counts at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Requests that entered the layer.
    pub started: u64,
    /// Requests started and not yet finished (a streaming body counts until its end):
    /// `started` minus the finishes, which a snapshot counts apart (see
    /// [`Snapshot::is_consistent`]).
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
    /// Request bodies that answers left unread, and what the layer did with them.
    pub unread_bodies: UnreadBodies,
    /// The counters kept outside the ledger that it exports
    /// ([`Ledger::export`](crate::Ledger::export)), read with this snapshot.
    pub counters: Vec<Counter>,
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

    /// Whether every finish counted has its start counted: `ok + handled + rejected +
    /// service_error + panicked + aborted + cancelled <= started`.
    ///
    /// `started` and each outcome are totals of their own, and a snapshot reads the finishes
    /// before the starts, ordered so that a finish it sees has its start seen too; so this
    /// holds in every snapshot, taken at any moment on any memory model. A finish counted
    /// twice, or a start never counted, breaks it. It cannot see a finish that is never
    /// counted (that request stays in flight): at quiescence, check `in_flight == 0` and each
    /// outcome against what you sent.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use axum::{body::Body, http::Request, routing::get, Router};
    /// use tower::ServiceExt;
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app = Router::new().route("/", get(|| async { "ok" })).layer(layer);
    /// for path in ["/", "/", "/nope"] {
    ///     let response = app.clone().oneshot(Request::get(path).body(Body::empty()).unwrap());
    ///     axum::body::to_bytes(response.await.unwrap().into_body(), 1024).await.unwrap();
    /// }
    /// let snapshot = ledger.snapshot();
    /// assert!(snapshot.is_consistent());
    /// // Quiescent: each outcome is exactly what was sent.
    /// assert_eq!((snapshot.started, snapshot.in_flight), (3, 0));
    /// assert_eq!((snapshot.ok, snapshot.rejected, snapshot.failures()), (2, 1, 1));
    /// # }
    /// ```
    pub fn is_consistent(&self) -> bool {
        self.finished() <= self.started
    }
}
