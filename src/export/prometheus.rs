//! The Prometheus text exposition (format 0.0.4) of a [`Snapshot`]: the one way to get the
//! ledger's counts as Prometheus text, served by
//! [`Ledger::metrics_handler`](crate::Ledger::metrics_handler).

use std::fmt::Write as _;

use crate::count::{RouteRequests, Snapshot};
use crate::outcome::{Outcome, OVERFLOW_LABEL};

/// The `class` label of the handled requests answered with a 4xx status, the client's
/// mistakes, which the error budget of `deploy/prometheus` leaves out by default.
const CLIENT_CLASS: &str = ",class=\"4xx\"";
/// The `class` label of the other handled requests: the server's own failures.
const SERVER_CLASS: &str = ",class=\"5xx\"";

/// The name of the started counter, the same in every exposition of the ledger's counts
/// (this text and the `metrics` facade; OpenTelemetry's `faultline.requests.started` is
/// written so by its Prometheus exporter).
pub(crate) const STARTED: &str = "faultline_requests_started_total";
/// What [`STARTED`] counts, as its `HELP` line says.
pub(crate) const STARTED_HELP: &str =
    "Requests that entered the fault layer; each ends in exactly one outcome.";

/// The media type of the Prometheus text exposition, version 0.0.4.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Snapshot {
    /// The Prometheus text exposition (format 0.0.4) of this snapshot.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::with_capacity(1024 + self.series.len() * 96);
        // A snapshot reads the starts after the finishes, so in every exposition
        // `faultline_requests_started_total - sum(faultline_requests_total)` is the in-flight
        // count and never below zero (see `Snapshot::is_consistent`).
        let _ = write!(
            out,
            "# HELP {STARTED} {STARTED_HELP}\n\
             # TYPE {STARTED} counter\n\
             {STARTED} {}\n",
            self.started
        );
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
            "# HELP faultline_route_requests_total Requests by route template and outcome; \
             handled ones by the class of their status.\n\
             # TYPE faultline_route_requests_total counter\n",
        );
        for route in &self.routes {
            for &outcome in Outcome::ALL {
                if outcome == Outcome::Handled {
                    let (client, server) = (route.handled_4xx, route.handled_5xx());
                    push_route_line(&mut out, route, outcome, CLIENT_CLASS, client);
                    push_route_line(&mut out, route, outcome, SERVER_CLASS, server);
                } else {
                    push_route_line(&mut out, route, outcome, "", route.outcome(outcome));
                }
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
        push_unread_bodies(&mut out, self);
        for counter in &self.counters {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n",
                name = counter.name,
                help = counter.help,
                value = counter.value
            );
        }
        out
    }
}

/// What the layer did with request bodies that answers left unread: drained (the connection
/// kept) or left with `connection: close`, and the bytes it read to do so.
fn push_unread_bodies(out: &mut String, snapshot: &Snapshot) {
    let unread = snapshot.unread_bodies;
    let _ = write!(
        out,
        "# HELP faultline_unread_bodies_total Request bodies an HTTP/1.1 answer left unread: \
         drained so that the connection serves the next request, or closed with a word.\n\
         # TYPE faultline_unread_bodies_total counter\n\
         faultline_unread_bodies_total{{action=\"drained\"}} {}\n\
         faultline_unread_bodies_total{{action=\"closed\"}} {}\n\
         # HELP faultline_unread_body_bytes_total Bytes of unread request bodies read and \
         discarded.\n\
         # TYPE faultline_unread_body_bytes_total counter\n\
         faultline_unread_body_bytes_total {}\n",
        unread.drained, unread.closed, unread.drained_bytes
    );
}

/// One line of `faultline_route_requests_total`; `class` is empty or a `class` label.
fn push_route_line(
    out: &mut String,
    route: &RouteRequests,
    outcome: Outcome,
    class: &str,
    count: u64,
) {
    out.push_str("faultline_route_requests_total{route=\"");
    push_label_value(out, &route.route);
    let _ = writeln!(out, "\",outcome=\"{}\"{class}}} {count}", outcome.as_str());
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
