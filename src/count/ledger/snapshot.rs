//! The ledger's counts at one moment, and their Prometheus text exposition.

use std::fmt::Write as _;

use super::routes::RouteRequests;
use super::series::Series;
use crate::outcome::{Outcome, OVERFLOW_LABEL};

/// The media type of the Prometheus text exposition, version 0.0.4.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

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

    /// The Prometheus text exposition (format 0.0.4) of this snapshot.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::with_capacity(1024 + self.series.len() * 96);
        out.push_str(
            "# HELP faultline_requests_total Requests that passed the fault layer, by outcome.\n\
             # TYPE faultline_requests_total counter\n",
        );
        for &outcome in Outcome::ALL {
            let _ = writeln!(
                out,
                "faultline_requests_total{{outcome=\"{}\"}} {}",
                outcome.as_str(),
                self.outcome(outcome)
            );
        }
        let _ = write!(
            out,
            "# HELP faultline_in_flight Requests started and not yet finished.\n\
             # TYPE faultline_in_flight gauge\n\
             faultline_in_flight {}\n",
            self.in_flight
        );
        let _ = write!(
            out,
            "# HELP faultline_reports_total Failure events, written or held back by flood control.\n\
             # TYPE faultline_reports_total counter\n\
             faultline_reports_total{{disposition=\"reported\"}} {}\n\
             faultline_reports_total{{disposition=\"suppressed\"}} {}\n",
            self.reported, self.suppressed
        );
        out.push_str(
            "# HELP faultline_route_requests_total Requests by route template and outcome.\n\
             # TYPE faultline_route_requests_total counter\n",
        );
        for route in &self.routes {
            for &outcome in Outcome::ALL {
                out.push_str("faultline_route_requests_total{route=\"");
                push_label_value(&mut out, &route.route);
                let _ = writeln!(
                    out,
                    "\",outcome=\"{}\"}} {}",
                    outcome.as_str(),
                    route.outcome(outcome)
                );
            }
        }
        out.push_str(
            "# HELP faultline_errors_total Failed requests by route template, error code and status.\n\
             # TYPE faultline_errors_total counter\n",
        );
        for series in &self.series {
            out.push_str("faultline_errors_total{route=\"");
            push_label_value(&mut out, &series.route);
            out.push_str("\",code=\"");
            push_label_value(&mut out, &series.code);
            out.push_str("\",status=\"");
            if series.is_overflow() {
                out.push_str(OVERFLOW_LABEL);
            } else {
                let _ = write!(out, "{}", series.status);
            }
            let _ = writeln!(out, "\"}} {}", series.count);
        }
        out
    }
}

/// Escapes a label value as the text format asks: backslash, double quote and newline.
fn push_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}
