//! The OpenTelemetry bridge (cargo feature `opentelemetry`): the semantic-convention request
//! duration histogram, labelled like the ledger, and the ledger's started and outcome counts
//! as observable counters, for services that already run an OpenTelemetry collector.

use opentelemetry::metrics::{Histogram, Meter};
use opentelemetry::KeyValue;

use crate::count::Ledger;
use crate::export::labels::Finished;
use crate::export::prometheus::STARTED_HELP;
use crate::outcome::Outcome;

/// The instruments one layer records into.
#[derive(Debug)]
pub(crate) struct OpenTelemetryBridge {
    duration: Histogram<f64>,
}

impl OpenTelemetryBridge {
    /// Creates `http.server.request.duration` and registers `faultline.requests.started` and
    /// `faultline.requests`, which read `ledger` at each collection.
    pub(crate) fn new(meter: &Meter, ledger: Ledger) -> Self {
        let duration = meter
            .f64_histogram("http.server.request.duration")
            .with_unit("s")
            .with_description("Duration of HTTP server requests.")
            .build();
        let started = ledger.clone();
        meter
            .u64_observable_counter("faultline.requests.started")
            .with_description(STARTED_HELP)
            .with_callback(move |observer| observer.observe(started.snapshot().started, &[]))
            .build();
        meter
            .u64_observable_counter("faultline.requests")
            .with_description("Requests that passed the fault layer, by outcome.")
            .with_callback(move |observer| {
                let snapshot = ledger.snapshot();
                for &outcome in Outcome::ALL {
                    observer.observe(
                        snapshot.outcome(outcome),
                        &[KeyValue::new("fault.outcome", outcome.as_str())],
                    );
                }
            })
            .build();
        Self { duration }
    }

    pub(crate) fn record(&self, finished: &Finished<'_>) {
        let mut attributes = Vec::with_capacity(4);
        attributes.push(KeyValue::new("http.request.method", finished.method));
        if let Some(route) = finished.route {
            attributes.push(KeyValue::new("http.route", route.to_owned()));
        }
        if let Some(status) = finished.sent_status() {
            attributes.push(KeyValue::new(
                "http.response.status_code",
                i64::from(status),
            ));
        }
        if let Some(code) = finished.error_type {
            attributes.push(KeyValue::new("error.type", code));
        }
        self.duration
            .record(finished.started_at.elapsed().as_secs_f64(), &attributes);
    }
}
