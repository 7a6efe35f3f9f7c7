//! `/metrics` after known traffic over real TCP: the service's own families beside the
//! ledger's, each value exactly what was sent, one exposition that `promtool check metrics`
//! accepts.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use webhook_ingest::provider::Provider;
use webhook_ingest::serve::default_max_connections;
use webhook_ingest::store::Store;
use webhook_ingest::verify::webhook;

/// Pushes stored while the store is up.
const STORED: u64 = 4;
/// Deliveries of events the service does not store, per (provider, event) label; the last
/// name needs escaping in a label value.
const IGNORED: [(Provider, &str, u64); 3] = [
    (Provider::Gitlab, "Merge Request Hook", 3),
    (Provider::Github, "issues", 2),
    (Provider::Github, "we\"ird\\name", 1),
];
/// Pushes with a wrong signature: each refused 401 and kept for the inbox's refusal list.
const BAD_SIGNATURES: u64 = 3;
/// Pushes queued in the spool while the store is down, drained once it is back.
const QUEUED: u64 = 5;
/// Pushes to an inbox no one made, while the store is down: queued unverified, refused when
/// drained.
const MADE_UP: u64 = 2;
/// Pushes to that inbox past the unverified spool's per-body cap: refused 503.
const TOO_LARGE: u64 = 1;
/// The unverified spool's per-body cap in this test: above the made-up pushes, below the
/// large one.
const UNVERIFIED_MAX_BODY: usize = 512;
/// How long the connections of the requests before a scrape may take to be seen closed.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// A `/metrics` answer as a map from each series (name and labels, as written) to its value.
struct Scrape {
    text: String,
    series: BTreeMap<String, String>,
}

impl Scrape {
    async fn of(service: &Service) -> Self {
        let answer = service
            .send(service.client.get(service.url("/metrics")))
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(
            answer.headers["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let series = answer
            .text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("a series and its value");
                (series.to_owned(), value.to_owned())
            })
            .collect();
        Self {
            text: answer.text,
            series,
        }
    }

    /// The value of `series`, which must be exposed, as a whole number.
    fn get(&self, series: &str) -> u64 {
        let value = self
            .series
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in\n{}", self.text));
        value.parse().unwrap_or_else(|_| panic!("{series} {value}"))
    }

    /// The series of the family `name`, with their values.
    fn family(&self, name: &str) -> Vec<(&str, u64)> {
        self.series
            .keys()
            .filter(|series| {
                series
                    .strip_prefix(name)
                    .is_some_and(|l| l.starts_with('{'))
            })
            .map(|series| (series.as_str(), self.get(series)))
            .collect()
    }
}

/// A label value as the text format writes it: backslash, quote and newline escaped.
fn escaped(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A service with a spool, on a fresh SQLite file, whose client opens a connection for each
/// request, so that the connections accepted are the requests the ledger started.
async fn service(dir: &SpoolDir) -> Service {
    let db = temp_path("metrics", "db");
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    let config = webhook_ingest::Config {
        spool: Some(dir.open(1 << 30)),
        unverified_max_body: UNVERIFIED_MAX_BODY,
        ..Service::config(TEST_BODY_LIMIT)
    };
    let mut service = Service::serve_with(store, Some(db), config).await;
    service.client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    service
}

/// A push to an inbox of the fixture's instance that no one made, signed with a made-up
/// secret.
fn made_up(service: &Service, fixture: &Fixture, id: &str, body: &[u8]) -> reqwest::RequestBuilder {
    let signature = format!("sha256={}", webhook::sign(b"made-up", body));
    let headers = provider_headers(fixture, Provider::Github, "push", id, body)
        .set("x-hub-signature-256", signature);
    let path = format!("/api/{}/inboxes/nosuchinbox/commits", fixture.instance);
    post_to(service, &path, headers, body)
}

/// Sends the traffic the test counts on: stored, ignored and refused while the store is up,
/// then queued, queued unverified and refused 503 while it is down.
async fn send_known_traffic(service: &Service, fixture: &Fixture) {
    for n in 0..STORED {
        let body = github_push(&[&format!("stored-{n}")]);
        let id = format!("stored-{n}");
        let sent = delivery(service, fixture, Provider::Github, "push", &id, &body);
        assert_eq!(service.send(sent).await.status, 201);
    }
    for (provider, event, times) in IGNORED {
        for n in 0..times {
            let id = format!("ignored-{provider}-{n}-{}", event.len());
            let sent = delivery(service, fixture, provider, event, &id, b"{}");
            let answer = service.send(sent).await;
            assert_eq!(answer.body["status"], "ignored", "{}", answer.text);
        }
    }
    for n in 0..BAD_SIGNATURES {
        let body = github_push(&[&format!("bad-{n}")]);
        service
            .signed(fixture, Provider::Github, "push", &body)
            .set("x-hub-signature-256", "sha256=00")
            .assert_problem(401, "bad-signature")
            .await;
    }
    service.outage.begin();
    for n in 0..QUEUED {
        let body = github_push(&[&format!("queued-{n}")]);
        let sent = delivery(
            service,
            fixture,
            Provider::Github,
            "push",
            &format!("q-{n}"),
            &body,
        );
        assert_eq!(service.send(sent).await.body["status"], "queued");
    }
    for n in 0..MADE_UP {
        let body = github_push(&[&format!("made-up-{n}")]);
        let answer = service
            .send(made_up(service, fixture, &format!("m-{n}"), &body))
            .await;
        assert_eq!(answer.body["status"], "queued", "{}", answer.text);
    }
    let shas: Vec<String> = (0..UNVERIFIED_MAX_BODY / 8)
        .map(|n| format!("large-{n}"))
        .collect();
    let large = github_push(&shas.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(large.len() > UNVERIFIED_MAX_BODY);
    for n in 0..TOO_LARGE {
        let answer = service
            .send(made_up(service, fixture, &format!("l-{n}"), &large))
            .await;
        assert_eq!(answer.status, 503, "{}", answer.text);
    }
}

/// Scrapes until only the scrape's own connection is open (the server sees the others close
/// a moment after their answers), and answers that scrape.
async fn settled_scrape(service: &Service) -> Scrape {
    let start = Instant::now();
    loop {
        let scrape = Scrape::of(service).await;
        if scrape.get("webhook_ingest_open_connections") == 1 {
            return scrape;
        }
        assert!(
            start.elapsed() < CLOSE_WAIT,
            "connections left open:\n{}",
            scrape.text
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn after_known_traffic_every_count_is_exact_and_promtool_accepts_the_text() {
    let dir = SpoolDir::new("metrics");
    let service = service(&dir).await;
    let fixture = service.setup().await;
    until(&service, "every inbox known", |health| {
        health["spool"]["known_inboxes"] == Provider::ALL.len()
    })
    .await;
    send_known_traffic(&service, &fixture).await;

    let down = Scrape::of(&service).await;
    assert_eq!(down.get("webhook_ingest_spool_depth"), QUEUED);
    assert_eq!(down.get("webhook_ingest_spool_spooled_total"), QUEUED);
    assert_eq!(down.get("webhook_ingest_spool_unverified_depth"), MADE_UP);
    assert_eq!(down.get("webhook_ingest_spool_refused_total"), 0);
    promtool_check_metrics(&down.text);

    service.outage.end();
    drained(&service).await;
    let up = settled_scrape(&service).await;
    assert_the_counts_after_the_drain(&up);
    // One connection a request, this scrape's included: the accept loop's count and the
    // ledger's, read apart, agree.
    assert_eq!(
        up.get("webhook_ingest_connections_accepted_total"),
        up.get("faultline_requests_started_total"),
        "{}",
        up.text
    );
    promtool_check_metrics(&up.text);
}

/// Every service series after the drain, exactly as the traffic makes it.
fn assert_the_counts_after_the_drain(up: &Scrape) {
    let ignored: Vec<(String, u64)> = IGNORED
        .iter()
        .map(|(provider, event, n)| {
            let series = format!(
                "webhook_ingest_ignored_events_total{{provider=\"{provider}\",event=\"{}\"}}",
                escaped(event)
            );
            (series, *n)
        })
        .collect();
    let mut exposed = up.family("webhook_ingest_ignored_events_total");
    exposed.sort();
    let mut wanted: Vec<(&str, u64)> = ignored.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    wanted.sort();
    assert_eq!(exposed, wanted, "{}", up.text);
    for (series, value) in [
        ("webhook_ingest_refusals_recorded_total", BAD_SIGNATURES),
        ("webhook_ingest_refusals_unrecorded_total", 0),
        ("webhook_ingest_refusals_skipped_total", 0),
        ("webhook_ingest_spool_depth", 0),
        ("webhook_ingest_spool_bytes", 0),
        ("webhook_ingest_spool_spooled_total", QUEUED),
        ("webhook_ingest_spool_drained_total", QUEUED),
        ("webhook_ingest_spool_cut_total", 0),
        ("webhook_ingest_spool_cut_bytes_total", 0),
        ("webhook_ingest_spool_full_total", 0),
        ("webhook_ingest_spool_refused_total", MADE_UP),
        ("webhook_ingest_spool_unverified_depth", 0),
        ("webhook_ingest_spool_unverified_spooled_total", MADE_UP),
        ("webhook_ingest_spool_unverified_drained_total", MADE_UP),
        (
            "webhook_ingest_unverified_refused_total{reason=\"full\"}",
            0,
        ),
        (
            "webhook_ingest_unverified_refused_total{reason=\"too_large\"}",
            TOO_LARGE,
        ),
        ("webhook_ingest_open_connections", 1),
        (
            "webhook_ingest_connection_limit",
            default_max_connections() as u64,
        ),
    ] {
        assert_eq!(up.get(series), value, "{series} in\n{}", up.text);
    }
}
