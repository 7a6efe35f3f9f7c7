//! The per-request drop guard: a request's place in the ledger from `call` until its outcome
//! is counted. Dropped before that, it counts the request as cancelled, so no request can
//! leave the layer uncounted.

use std::sync::Arc;

use http::StatusCode;

use crate::config::Config;
use crate::outcome::Outcome;
use crate::panic_hook::catch;
use crate::request::{request_id_text, RequestMeta};
use crate::shared::Lane;
use crate::summary::Summary;

/// One request's place in the ledger, from `call` until its outcome is counted. Dropped
/// before that, it counts the request as cancelled.
#[derive(Debug)]
pub(crate) struct RequestGuard {
    /// The shared state, through the lane of the thread that started the request.
    shared: Arc<Lane>,
    meta: RequestMeta,
    phase: Phase,
    /// When the request started, if a metrics bridge records durations.
    #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
    started_at: Option<std::time::Instant>,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for the inner service's response.
    Waiting,
    /// The head went out and the body is streaming; `polled` once the body was asked for.
    Streaming { status: StatusCode, polled: bool },
    /// Counted.
    Settled,
}

impl RequestGuard {
    pub(crate) fn start(shared: Arc<Lane>, meta: RequestMeta) -> Self {
        shared.ledger.start();
        #[cfg(feature = "metrics")]
        if let Some(facade) = &shared.bridges.facade {
            facade.start();
        }
        Self {
            #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
            started_at: shared.bridges.time_requests().then(std::time::Instant::now),
            shared,
            meta,
            phase: Phase::Waiting,
        }
    }

    /// Tells the metrics bridges that are configured how the request ended. `status` is the
    /// one the ledger counts (499 for a cancellation); none was sent for a cancellation.
    #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
    fn record_bridges(&self, outcome: Outcome, status: u16, error_type: Option<&'static str>) {
        let Some(started_at) = self.started_at else {
            return;
        };
        let answered = outcome != Outcome::Cancelled;
        #[cfg(feature = "opentelemetry")]
        if let Some(otel) = &self.shared.bridges.otel {
            otel.record(crate::otel::Finished {
                started_at,
                meta: &self.meta,
                status: answered.then_some(status),
                error_type,
            });
        }
        #[cfg(feature = "metrics")]
        if let Some(facade) = &self.shared.bridges.facade {
            facade.finish(crate::facade::Finished {
                started_at,
                meta: &self.meta,
                outcome,
                status,
                answered,
                error_type,
            });
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.shared.config
    }

    /// What was kept of the request.
    pub(crate) fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// The head went out with `status`; the body decides the outcome from here.
    pub(crate) fn streaming(&mut self, status: StatusCode) {
        self.phase = Phase::Streaming {
            status,
            polled: false,
        };
    }

    pub(crate) fn mark_polled(&mut self) {
        if let Phase::Streaming { polled, .. } = &mut self.phase {
            *polled = true;
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self.phase {
            Phase::Streaming { status, .. } => status,
            _ => StatusCode::OK,
        }
    }

    pub(crate) fn settle_ok(&mut self) {
        if !matches!(self.phase, Phase::Settled) {
            // Only when a bridge records: no `catch` on the success path otherwise.
            #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
            if self.started_at.is_some() {
                let _ = catch(|| self.record_bridges(Outcome::Ok, self.status().as_u16(), None));
            }
            self.phase = Phase::Settled;
            self.shared.ledger.finish(Outcome::Ok);
        }
    }

    pub(crate) fn settle_failure(&mut self, summary: &Summary, request_id: &str) {
        if matches!(self.phase, Phase::Settled) {
            return;
        }
        self.phase = Phase::Settled;
        let ledger = &self.shared.ledger;
        // The report runs the subscriber's code (and the exporter's): a panic there must not
        // keep the request from being counted.
        let levels = &self.shared.config.report_levels;
        let written = catch(|| ledger.fail(summary, &self.meta, request_id, levels));
        #[cfg(feature = "metrics")]
        if let Some(facade) = &self.shared.bridges.facade {
            // A panic here came from the subscriber writing the event, which the ledger had
            // already counted as reported.
            let _ = catch(|| facade.report(written.unwrap_or(true)));
        }
        #[cfg(not(feature = "metrics"))]
        let _ = written;
        #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
        let _ = catch(|| {
            self.record_bridges(summary.outcome, summary.status.as_u16(), Some(summary.code))
        });
        ledger.finish(summary.outcome);
    }

    /// Settles a failure that has no answer to render (the head is gone or never comes).
    pub(crate) fn settle_unanswered(&mut self, summary: &Summary) {
        let request_id = self.meta.request_id();
        self.settle_failure(summary, request_id_text(&request_id));
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        match self.phase {
            Phase::Settled => {}
            // A body that was never asked for (a HEAD request, a 204) was delivered whole.
            Phase::Streaming { polled: false, .. } => self.settle_ok(),
            Phase::Waiting | Phase::Streaming { polled: true, .. } => {
                self.settle_unanswered(&Summary::cancelled())
            }
        }
    }
}
