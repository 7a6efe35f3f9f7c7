//! The `metrics` facade bridge end to end: a server over TCP records through
//! `metrics-exporter-prometheus`, its exposition is scraped over HTTP and must pass
//! `promtool check metrics` (Debian package `prometheus`), with the ledger's exact counts.
//! `cargo test --features metrics --test metrics_prometheus`.

#![cfg(feature = "metrics")]

use std::io::Write as _;
use std::process::{Command, Stdio};

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use faultline::{FaultLayer, HTTP_DURATION_BUCKETS, HTTP_DURATION_METRIC};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

async fn get_text(client: &reqwest::Client, url: &str) -> (u16, String) {
    let response = client.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prometheus_exposition_passes_promtool() {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(HTTP_DURATION_METRIC.to_owned()),
            HTTP_DURATION_BUCKETS,
        )
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).unwrap();

    let layer = FaultLayer::new().record_metrics(true);
    let ledger = layer.ledger();
    let app = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/handled",
            get(|| async {
                Err::<(), _>(faultline::Error::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "demo-invalid",
                    "a \"quoted\" message",
                ))
            }),
        )
        .layer(layer)
        // Outside the layer: scrapes are not counted.
        .route("/metrics", get(move || async move { handle.render() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let client = reqwest::Client::new();
    let mut sent = Vec::new();
    for (path, count) in [("/ok", 30), ("/handled", 12), ("/missing", 7)] {
        let url = format!("{base}{path}");
        let requests = (0..count).map(|_| get_text(&client, &url));
        sent.extend(futures::future::join_all(requests).await);
    }
    assert_eq!(sent.len(), 49);
    let (status, exposition) = get_text(&client, &format!("{base}/metrics")).await;
    server.abort();
    assert_eq!(status, 200);

    let snapshot = ledger.snapshot();
    assert_eq!(
        (snapshot.ok, snapshot.handled, snapshot.rejected),
        (30, 12, 7)
    );
    for line in [
        "faultline_requests_total{outcome=\"ok\"} 30",
        "faultline_requests_total{outcome=\"handled\"} 12",
        "faultline_requests_total{outcome=\"rejected\"} 7",
        "faultline_errors_total{route=\"/handled\",code=\"demo-invalid\",status=\"422\"} 12",
        "faultline_errors_total{route=\"~unmatched\",code=\"not-found\",status=\"404\"} 7",
        "faultline_in_flight 0",
        "http_server_request_duration_count{http_request_method=\"GET\",http_route=\"/ok\",http_response_status_code=\"200\"} 30",
    ] {
        assert!(exposition.contains(line), "{line} missing from\n{exposition}");
    }
    assert!(exposition.contains("http_server_request_duration_bucket{"));

    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package `prometheus`; .ci/run installs it)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{exposition}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}
