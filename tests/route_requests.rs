//! Requests per route and outcome over TCP: many clients at once, exact totals per route,
//! a handler's 4xx answers apart from its 5xx ones, the route cap and its `~overflow`,
//! `~unmatched`, and the exposition checked by `promtool check metrics` (Debian package
//! `prometheus`; that one check is skipped without it, unless `FAULTLINE_REQUIRE_TOOLS` is set).

mod common;

use axum::routing::get;
use faultline::ledger::{Outcome, OVERFLOW_LABEL, UNMATCHED_ROUTE};
use faultline::{FaultLayer, Ledger};

/// Clients sending at once, each on its own connections.
const CLIENTS: u64 = 16;
/// What each client sends: path, count, expected status.
const MIX: [(&str, u64, u16); 5] = [
    ("/ok", 20, 200),
    ("/handled", 7, 422),
    ("/third/1", 5, 200),
    ("/fourth", 3, 500),
    ("/missing", 4, 404),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_route_totals_are_exact_under_parallel_clients_and_capped() {
    // Two named routes: whichever two the ledger meets first; the others fold into overflow.
    let ledger = Ledger::builder().max_routes(2).build();
    let app = common::ok_and_handled("bad")
        .route("/third/{id}", get(|| async { "third" }))
        .route(
            "/fourth",
            get(|| async {
                Err::<(), _>(faultline::Error::new(
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    "down",
                    "the store is down",
                ))
            }),
        )
        .layer(FaultLayer::with_ledger(ledger.clone()));
    let lab = common::Lab::serve(app, ledger).await;
    // The first two routes met, before the load.
    let client = reqwest::Client::new();
    for path in ["/ok", "/handled"] {
        client.get(lab.url(path)).send().await.unwrap();
    }
    let clients = (0..CLIENTS).map(|_| {
        let (client, base) = (client.clone(), lab.url(""));
        tokio::spawn(async move {
            for (path, count, status) in MIX {
                for _ in 0..count {
                    let response = client.get(format!("{base}{path}")).send().await.unwrap();
                    assert_eq!(response.status().as_u16(), status, "{path}");
                    response.bytes().await.unwrap();
                }
            }
        })
    });
    for client in futures::future::join_all(clients).await {
        client.unwrap();
    }
    let snapshot = lab.quiescent().await;
    let [ok, handled, third, fourth, missing] = MIX.map(|(_, n, _)| n * CLIENTS);
    // Per route: its outcomes with a request, and how many of its handled ones were 4xx.
    type Counted<'a> = (&'a str, Vec<(Outcome, u64)>, u64);
    let routes: Vec<Counted> = snapshot
        .routes
        .iter()
        .map(|r| {
            let counted = Outcome::ALL
                .iter()
                .map(|&o| (o, r.outcome(o)))
                .filter(|&(_, n)| n > 0)
                .collect();
            (r.route.as_str(), counted, r.handled_4xx)
        })
        .collect();
    // The 422s are the client's, the 500s the server's.
    assert_eq!(
        routes,
        [
            (
                "/handled",
                vec![(Outcome::Handled, handled + 1)],
                handled + 1
            ),
            ("/ok", vec![(Outcome::Ok, ok + 1)], 0),
            (UNMATCHED_ROUTE, vec![(Outcome::Rejected, missing)], 0),
            (
                OVERFLOW_LABEL,
                vec![(Outcome::Ok, third), (Outcome::Handled, fourth)],
                0
            ),
        ]
    );
    for &outcome in Outcome::ALL {
        let per_route: u64 = snapshot.routes.iter().map(|r| r.outcome(outcome)).sum();
        assert_eq!(per_route, snapshot.outcome(outcome), "{outcome:?}");
    }

    let exposition = snapshot.to_prometheus();
    for line in [
        format!(
            "faultline_route_requests_total{{route=\"/ok\",outcome=\"ok\"}} {}",
            ok + 1
        ),
        format!(
            "faultline_route_requests_total{{route=\"/handled\",outcome=\"handled\",class=\"4xx\"}} {}",
            handled + 1
        ),
        "faultline_route_requests_total{route=\"/handled\",outcome=\"handled\",class=\"5xx\"} 0"
            .to_owned(),
        format!(
            "faultline_route_requests_total{{route=\"~overflow\",outcome=\"handled\",class=\"5xx\"}} {fourth}"
        ),
        format!(
            "faultline_route_requests_total{{route=\"~unmatched\",outcome=\"rejected\"}} {missing}"
        ),
        format!("faultline_route_requests_total{{route=\"~overflow\",outcome=\"ok\"}} {third}"),
        "faultline_route_requests_total{route=\"/ok\",outcome=\"panicked\"} 0".to_owned(),
    ] {
        assert!(
            exposition.contains(&line),
            "{line} missing from\n{exposition}"
        );
    }
    common::tools::promtool_check_metrics(&exposition);
}
