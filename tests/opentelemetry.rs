//! The OpenTelemetry bridge, with the `opentelemetry` feature on:
//! `cargo test --features opentelemetry --test opentelemetry`.

#![cfg(feature = "opentelemetry")]

mod common;

use axum::body::Body;
use axum::http::Request;
use faultline::FaultLayer;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

fn attribute<'a>(attributes: impl Iterator<Item = &'a KeyValue>, key: &str) -> Option<Value> {
    attributes
        .into_iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// A histogram point: route, status, error type, count.
type Point = (Option<Value>, Option<Value>, Option<Value>, u64);

/// The `/ok` and `/handled` router behind a layer that records into an in-memory exporter.
fn recorded_app() -> (InMemoryMetricExporter, SdkMeterProvider, axum::Router) {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let layer = FaultLayer::new().record_opentelemetry(&provider.meter("test"));
    let app = common::ok_and_handled("nope").layer(layer);
    (exporter, provider, app)
}

#[tokio::test]
async fn requests_are_recorded_with_semantic_convention_names() {
    let (exporter, provider, app) = recorded_app();
    for path in ["/ok", "/ok", "/handled", "/nowhere"] {
        common::oneshot::send(&app, common::oneshot::get_request(path)).await;
    }
    provider.force_flush().unwrap();

    let exported = exporter.get_finished_metrics().unwrap();
    let metrics: Vec<_> = exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .collect();

    let duration = metrics
        .iter()
        .find(|m| m.name() == "http.server.request.duration")
        .expect("the duration histogram");
    assert_eq!(duration.unit(), "s");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = duration.data() else {
        panic!("not an f64 histogram: {:?}", duration.data());
    };
    let mut points: Vec<Point> = histogram
        .data_points()
        .map(|p| {
            (
                attribute(p.attributes(), "http.route"),
                attribute(p.attributes(), "http.response.status_code"),
                attribute(p.attributes(), "error.type"),
                p.count(),
            )
        })
        .collect();
    points.sort_by_key(|p| format!("{p:?}"));
    assert_eq!(
        points,
        vec![
            (None, Some(Value::I64(404)), Some("not-found".into()), 1),
            (
                Some("/handled".into()),
                Some(Value::I64(422)),
                Some("demo-invalid".into()),
                1
            ),
            (Some("/ok".into()), Some(Value::I64(200)), None, 2),
        ]
    );

    let requests = metrics
        .iter()
        .find(|m| m.name() == "faultline.requests")
        .expect("the outcome counter");
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = requests.data() else {
        panic!("not a u64 sum: {:?}", requests.data());
    };
    let count = |outcome: &str| {
        sum.data_points()
            .find(|p| attribute(p.attributes(), "fault.outcome") == Some(outcome.to_owned().into()))
            .map(|p| p.value())
    };
    assert_eq!(count("ok"), Some(2));
    assert_eq!(count("handled"), Some(1));
    assert_eq!(count("rejected"), Some(1));
    assert_eq!(count("panicked"), Some(0));

    // The four requests sent started, each counted in its outcome above.
    let started = metrics
        .iter()
        .find(|m| m.name() == "faultline.requests.started")
        .expect("the started counter");
    let AggregatedMetrics::U64(MetricData::Sum(started)) = started.data() else {
        panic!("not a u64 sum: {:?}", started.data());
    };
    let started: Vec<u64> = started.data_points().map(|p| p.value()).collect();
    assert_eq!(started, [4]);
    let finished: u64 = sum.data_points().map(|p| p.value()).sum();
    assert_eq!(finished, 4);
}

/// A client's made-up methods fold into `_OTHER`, as in the `metrics` bridge: they must not
/// make one attribute set each.
#[tokio::test]
async fn methods_a_client_makes_up_share_one_attribute() {
    let (exporter, provider, app) = recorded_app();
    for method in ["GET", "PURGE", "BREW", "get"] {
        let request = Request::builder()
            .method(method)
            .uri("/ok")
            .body(Body::empty())
            .unwrap();
        common::oneshot::send(&app, request).await;
    }
    provider.force_flush().unwrap();

    let exported = exporter.get_finished_metrics().unwrap();
    let duration = exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == "http.server.request.duration")
        .expect("the duration histogram");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = duration.data() else {
        panic!("not an f64 histogram: {:?}", duration.data());
    };
    let mut methods: Vec<(Option<Value>, u64)> = histogram
        .data_points()
        .map(|p| (attribute(p.attributes(), "http.request.method"), p.count()))
        .collect();
    methods.sort_by_key(|p| format!("{p:?}"));
    assert_eq!(
        methods,
        vec![(Some("GET".into()), 1), (Some("_OTHER".into()), 3)]
    );
}
