//! The `metrics` facade bridge end to end: a server over TCP, 16 clients at once, records through
//! `metrics-exporter-prometheus`, its exposition is scraped over HTTP and must pass
//! `promtool check metrics` (Debian package `prometheus`; that one check is skipped without it,
//! unless `FAULTLINE_REQUIRE_TOOLS` is set), with the ledger's exact counts.
//! `cargo test --features metrics --test metrics_prometheus`.

#![cfg(feature = "metrics")]

mod common;

use axum::routing::get;
use faultline::metrics::{HTTP_DURATION_BUCKETS, HTTP_DURATION_METRIC};
use faultline::FaultLayer;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Clients sending at once, over TCP.
const CLIENTS: u64 = 16;
/// What each client sends: path, count, expected status.
const MIX: [(&str, u64, u16); 3] = [
    ("/ok", 25, 200),
    ("/handled", 10, 422),
    ("/missing", 6, 404),
];

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

    let layer = FaultLayer::new().record_metrics();
    let ledger = layer.ledger();
    let app = common::ok_and_handled("a \"quoted\" message")
        .layer(layer)
        // Outside the layer: scrapes are not counted.
        .route("/metrics", get(move || async move { handle.render() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // Parallel clients, each on its own connections, every one sending the same mix.
    let client = reqwest::Client::new();
    let clients = (0..CLIENTS).map(|_| {
        let (client, base) = (client.clone(), base.clone());
        tokio::spawn(async move {
            for (path, count, status) in MIX {
                for _ in 0..count {
                    assert_eq!(get_text(&client, &format!("{base}{path}")).await.0, status);
                }
            }
        })
    });
    for client in futures::future::join_all(clients).await {
        client.unwrap();
    }
    let (status, exposition) = get_text(&client, &format!("{base}/metrics")).await;
    server.abort();
    assert_eq!(status, 200);

    let [ok, handled, missing] = MIX.map(|(_, count, _)| count * CLIENTS);
    let snapshot = ledger.snapshot();
    assert_eq!(
        (snapshot.ok, snapshot.handled, snapshot.rejected),
        (ok, handled, missing)
    );
    for line in [
        // `/metrics` is outside the layer: only the clients' requests started.
        format!("faultline_requests_started_total {}", ok + handled + missing),
        format!("faultline_requests_total{{outcome=\"ok\"}} {ok}"),
        format!("faultline_requests_total{{outcome=\"handled\"}} {handled}"),
        format!("faultline_requests_total{{outcome=\"rejected\"}} {missing}"),
        format!("faultline_errors_total{{route=\"/handled\",code=\"demo-invalid\",status=\"422\"}} {handled}"),
        format!("faultline_errors_total{{route=\"~unmatched\",code=\"not-found\",status=\"404\"}} {missing}"),
        "faultline_in_flight 0".to_owned(),
        format!("http_server_request_duration_count{{http_request_method=\"GET\",http_route=\"/ok\",http_response_status_code=\"200\"}} {ok}"),
    ] {
        assert!(exposition.contains(&line), "{line} missing from\n{exposition}");
    }
    assert!(exposition.contains("http_server_request_duration_bucket{"));

    common::tools::promtool_check_metrics(&exposition);
}
