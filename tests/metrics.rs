//! The `metrics` facade bridge against `metrics-util`'s debugging recorder, with the
//! `metrics` feature on: `cargo test --features metrics --test metrics`.
//!
//! A process has one global recorder, so this file holds one test: every outcome a known
//! number of times, then the cardinality cap, each checked against the ledger exactly.

#![cfg(feature = "metrics")]

mod common;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use faultline::ledger::{Outcome, OVERFLOW_LABEL};
use faultline::metrics::HTTP_DURATION_METRIC;
use faultline::{FaultLayer, Ledger};
use futures::FutureExt;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tower::{Layer, ServiceExt};

use common::oneshot::send_gets;

/// The recorded metrics: name and sorted labels to value.
type Recorded = BTreeMap<(String, Vec<(String, String)>), DebugValue>;

fn recorded(snapshotter: &Snapshotter) -> Recorded {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (_, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            ((key.name().to_owned(), labels), value)
        })
        .collect()
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut labels: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.sort();
    labels
}

fn counter(recorded: &Recorded, name: &str, pairs: &[(&str, &str)]) -> u64 {
    match recorded.get(&(name.to_owned(), labels(pairs))) {
        Some(DebugValue::Counter(n)) => *n,
        other => panic!("{name}{pairs:?}: {other:?}"),
    }
}

fn observations(recorded: &Recorded, pairs: &[(&str, &str)]) -> usize {
    match recorded.get(&(HTTP_DURATION_METRIC.to_owned(), labels(pairs))) {
        Some(DebugValue::Histogram(values)) => values.len(),
        other => panic!("{HTTP_DURATION_METRIC}{pairs:?}: {other:?}"),
    }
}

async fn panics() -> &'static str {
    panic!("on purpose")
}

/// The routes of every outcome but `service_error`, and beside them an inner service that
/// fails with an error, behind the same layer.
fn app(layer: FaultLayer) -> (Router, Router) {
    let broken = tower::service_fn(|_: Request<Body>| async {
        Err::<Response<Body>, _>(std::io::Error::other("the upstream is gone"))
    });
    let broken =
        Router::new().route_service("/broken", layer.layer(broken).map_err(Infallible::from));
    let routes = common::ok_and_handled("nope")
        .route("/panic", get(panics))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }),
        )
        .layer(layer);
    (routes, broken)
}

#[tokio::test]
async fn the_facade_mirrors_the_ledger_exactly() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();
    faultline::install_panic_hook();

    let layer = FaultLayer::new().record_metrics();
    let ledger = layer.ledger();
    let (app, broken) = app(layer);
    send_gets(&app, "/ok", 5).await;
    send_gets(&app, "/handled", 4).await;
    send_gets(&app, "/nowhere", 3).await;
    send_gets(&app, "/panic", 2).await;
    send_gets(&broken, "/broken", 2).await;
    // Cancelled: polled once, then dropped, as when the client goes away.
    let request = Request::get("/slow").body(Body::empty()).unwrap();
    assert!(app.clone().oneshot(request).now_or_never().is_none());

    let snapshot = ledger.snapshot();
    let expected = [
        (Outcome::Ok, 5),
        (Outcome::Handled, 4),
        (Outcome::Rejected, 3),
        (Outcome::Panicked, 2),
        (Outcome::ServiceError, 2),
        (Outcome::Cancelled, 1),
        (Outcome::Aborted, 0),
    ];
    let recorded = recorded(&snapshotter);
    for (outcome, count) in expected {
        assert_eq!(snapshot.outcome(outcome), count, "{outcome:?}");
        let name = "faultline_requests_total";
        let value = counter(&recorded, name, &[("outcome", outcome.as_str())]);
        assert_eq!(value, count, "{outcome:?}");
    }
    assert_eq!(
        recorded[&("faultline_in_flight".to_owned(), vec![])],
        DebugValue::Gauge(0.0.into())
    );
    // Every request sent above started, and each ended in the outcome counted for it.
    let sent = expected.iter().map(|&(_, n)| n).sum::<u64>();
    let started = counter(&recorded, "faultline_requests_started_total", &[]);
    assert_eq!((started, snapshot.started), (sent, sent));
    for (disposition, count) in [
        ("reported", snapshot.reported),
        ("suppressed", snapshot.suppressed),
    ] {
        let name = "faultline_reports_total";
        assert_eq!(
            counter(&recorded, name, &[("disposition", disposition)]),
            count
        );
    }
    assert_eq!(snapshot.reported + snapshot.suppressed, 12);
    // Every series of the ledger, under the same labels.
    assert_eq!(snapshot.series.len(), 5);
    for series in &snapshot.series {
        let status = series.status.to_string();
        let pairs = [
            ("route", series.route.as_str()),
            ("code", series.code.as_str()),
            ("status", status.as_str()),
        ];
        let value = counter(&recorded, "faultline_errors_total", &pairs);
        assert_eq!(value, series.count, "{series:?}");
    }
    let route = |r| ("http.route", r);
    let method = ("http.request.method", "GET");
    let ok = [method, route("/ok"), ("http.response.status_code", "200")];
    assert_eq!(observations(&recorded, &ok), 5);
    let handled = [
        method,
        route("/handled"),
        ("http.response.status_code", "422"),
        ("error.type", "demo-invalid"),
    ];
    assert_eq!(observations(&recorded, &handled), 4);
    // No response went out: no status.
    let cancelled = [method, route("/slow"), ("error.type", "cancelled")];
    assert_eq!(observations(&recorded, &cancelled), 1);

    series_past_the_cap_fold_into_the_overflow_labels(&snapshotter).await;
}

/// A layer whose ledger holds 2 series: the third label set is counted under the overflow
/// labels, by the ledger and by the facade alike.
async fn series_past_the_cap_fold_into_the_overflow_labels(snapshotter: &Snapshotter) {
    let ledger = Ledger::builder().max_series(2).build();
    let layer = FaultLayer::with_ledger(ledger.clone()).record_metrics();
    let fail =
        || async { Err::<(), _>(faultline::Error::new(StatusCode::CONFLICT, "capped", "no")) };
    let app = Router::new()
        .route("/cap/a", get(fail))
        .route("/cap/b", get(fail))
        .route("/cap/c", get(fail))
        .layer(layer);
    for path in ["/cap/a", "/cap/b", "/cap/c", "/cap/c"] {
        send_gets(&app, path, 1).await;
    }
    let overflow = ledger
        .snapshot()
        .series
        .into_iter()
        .find(|s| s.is_overflow());
    assert_eq!(overflow.map(|s| s.count), Some(2));
    let recorded = recorded(snapshotter);
    let pairs = [
        ("route", OVERFLOW_LABEL),
        ("code", OVERFLOW_LABEL),
        ("status", OVERFLOW_LABEL),
    ];
    assert_eq!(counter(&recorded, "faultline_errors_total", &pairs), 2);
    let status = ("status", "409");
    for route in ["/cap/a", "/cap/b"] {
        let pairs = [("route", route), ("code", "capped"), status];
        assert_eq!(counter(&recorded, "faultline_errors_total", &pairs), 1);
    }
    let pairs = [("route", "/cap/c"), ("code", "capped"), status];
    let key = ("faultline_errors_total".to_owned(), labels(&pairs));
    assert!(!recorded.contains_key(&key));
}
