//! The list of refused deliveries over TCP: what is kept and what is not, newest first, never
//! a body or a secret, bounded per inbox under parallel senders, and best effort.

mod common;

use std::sync::Arc;

use common::*;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::REFUSALS_KEPT_PER_INBOX;

impl Service {
    /// The inbox's refusal list, served at `…/failures` (the word the wire keeps).
    async fn refusals(&self, fixture: &Fixture, inbox: &str, key: &str, query: &str) -> Answer {
        let path = format!("/api/{}/inboxes/{inbox}/failures{query}", fixture.instance);
        self.send(self.client.get(self.url(&path)).bearer_auth(key))
            .await
    }

    /// A counter of `/metrics`.
    async fn counter(&self, name: &str) -> u64 {
        let text = self.send(self.client.get(self.url("/metrics"))).await.text;
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .parse()
            .unwrap()
    }
}

fn listed(answer: &Answer) -> Vec<(String, u64, String)> {
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let refused_at = f["refused_at"].as_str().unwrap();
            assert!(refused_at.ends_with('Z') && refused_at.contains('T'), "{f}");
            (
                f["delivery"].as_str().unwrap_or("(none)").to_owned(),
                f["status"].as_u64().unwrap(),
                f["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn refusals_of_a_known_inbox_are_listed_newest_first_without_body_or_secret() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    let (inbox, secret) = fixture.inbox(Provider::Github);
    let path = fixture.hook_path(Provider::Github);
    let push = github_push(&["ok1"]);
    let headers =
        |id: &str, body: &[u8]| provider_headers(&fixture, Provider::Github, "push", id, body);
    let cases = [
        (
            "d-bad-signature",
            headers("d-bad-signature", &push)
                .set("x-hub-signature-256", format!("sha256={}", "0".repeat(64))),
            push.clone(),
            401,
        ),
        (
            "d-malformed",
            headers("d-malformed", b"{\"ref\":1}"),
            b"{\"ref\":1}".to_vec(),
            400,
        ),
        (
            "d-wrong-provider",
            provider_headers(
                &fixture,
                Provider::Gitlab,
                "Push Hook",
                "d-wrong-provider",
                &push,
            ),
            push.clone(),
            400,
        ),
        (
            "d-not-json",
            headers("d-not-json", &push).set("content-type", "text/plain"),
            push.clone(),
            415,
        ),
        (
            "d-too-large",
            headers("d-too-large", &[b' '; TEST_BODY_LIMIT + 1]),
            vec![b' '; TEST_BODY_LIMIT + 1],
            413,
        ),
        ("d-stored", headers("d-stored", &push), push.clone(), 201),
    ];
    for (id, headers, body, status) in cases {
        let answer = service.send(post_to(&service, &path, headers, &body)).await;
        assert_eq!(answer.status, status, "{id}: {}", answer.text);
    }
    // An inbox that does not exist keeps nothing, anywhere.
    let unknown = format!("/api/{}/inboxes/ib_none/commits", fixture.instance);
    let answer = service
        .send(post_to(
            &service,
            &unknown,
            headers("d-unknown", &push),
            &push,
        ))
        .await;
    answer.assert_problem(404, "inbox-not-found");

    let answer = service.refusals(&fixture, inbox, &fixture.key, "").await;
    assert_eq!(
        listed(&answer),
        [
            ("d-too-large".into(), 413, "payload-too-large".into()),
            ("d-not-json".into(), 415, "unsupported-media-type".into()),
            ("d-wrong-provider".into(), 400, "wrong-provider".into()),
            ("d-malformed".into(), 400, "malformed-payload".into()),
            ("d-bad-signature".into(), 401, "bad-signature".into()),
        ]
    );
    for leaked in [secret, "ok1", "commit ok1", "acme/widgets"] {
        assert!(!answer.text.contains(leaked), "{leaked} in {}", answer.text);
    }
    let limited = service
        .refusals(&fixture, inbox, &fixture.key, "?limit=2")
        .await;
    assert_eq!(listed(&limited).len(), 2);
    assert_eq!(
        service
            .counter("webhook_ingest_refusals_recorded_total")
            .await,
        5
    );
    for (provider, other, _) in &fixture.inboxes {
        if *provider != Provider::Github {
            let answer = service.refusals(&fixture, other, &fixture.key, "").await;
            assert!(listed(&answer).is_empty(), "{provider}");
        }
    }
    let snapshot = service.quiescent().await;
    // Ok: setup (7), the stored push (1), the two lists (2), `/metrics` (1) and the other
    // inboxes' lists (4). Failed: the five refusals and the unknown inbox.
    assert_eq!((snapshot.started, snapshot.ok), (21, 15), "{snapshot:#?}");
    assert_eq!(snapshot.failures(), 6, "{snapshot:#?}");
}

#[tokio::test]
async fn only_the_instances_key_lists_and_only_its_own_inboxes() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    let other = service.setup().await;
    let (inbox, _) = fixture.inbox(Provider::Github);
    service
        .refusals(&fixture, inbox, "key_wrong", "")
        .await
        .assert_problem(401, "bad-api-key");
    service
        .refusals(&fixture, inbox, &other.key, "")
        .await
        .assert_problem(401, "bad-api-key");
    let (foreign, _) = other.inbox(Provider::Github);
    service
        .refusals(&fixture, foreign, &fixture.key, "")
        .await
        .assert_problem(404, "inbox-not-found");
}

/// A service on a fresh file that keeps `per_second` refusals a second at most.
async fn start_keeping(name: &str, per_second: u32) -> Service {
    let path = temp_path(name, "db");
    let store = webhook_ingest::store::Store::open(path.to_str().unwrap())
        .await
        .unwrap();
    let config = webhook_ingest::Config {
        refusals_per_second: per_second,
        ..Service::config(TEST_BODY_LIMIT)
    };
    Service::serve_with(store, Some(path), config).await
}

/// `sent` deliveries with a made-up signature to the GitHub inbox, from `SENDERS` parallel
/// clients; each one's status.
async fn send_bad(service: &Arc<Service>, fixture: &Arc<Fixture>, sent: usize) -> Vec<u16> {
    const SENDERS: usize = 16;
    let tasks: Vec<_> = (0..SENDERS)
        .map(|sender| {
            let (service, fixture) = (service.clone(), fixture.clone());
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for n in (sender..sent).step_by(SENDERS) {
                    let body = github_push(&["x"]);
                    let id = format!("bad-{n}");
                    let headers = provider_headers(&fixture, Provider::Github, "push", &id, &body)
                        .set("x-hub-signature-256", format!("sha256={}", "1".repeat(64)));
                    let request = post_to(
                        &service,
                        &fixture.hook_path(Provider::Github),
                        headers,
                        &body,
                    );
                    statuses.push(service.send(request).await.status);
                }
                statuses
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.extend(task.await.unwrap());
    }
    statuses
}

/// Parallel senders of bad deliveries: every one answered 401, every one counted, and the
/// inbox keeps exactly the newest `REFUSALS_KEPT_PER_INBOX`.
#[tokio::test]
async fn the_list_is_bounded_per_inbox_under_parallel_senders() {
    let sent = REFUSALS_KEPT_PER_INBOX as usize + 40;
    let service = Arc::new(start_keeping("refusals-bound", u32::MAX).await);
    let fixture = Arc::new(service.setup().await);
    let statuses = send_bad(&service, &fixture, sent).await;
    assert_eq!(statuses.len(), sent);
    assert!(statuses.iter().all(|&s| s == 401), "{statuses:?}");
    let (inbox, _) = fixture.inbox(Provider::Github);
    let answer = service
        .refusals(&fixture, inbox, &fixture.key, "?limit=100000")
        .await;
    let kept = listed(&answer);
    assert_eq!(kept.len(), REFUSALS_KEPT_PER_INBOX as usize);
    let distinct: std::collections::HashSet<_> = kept.iter().map(|k| &k.0).collect();
    assert_eq!(distinct.len(), kept.len());
    assert_eq!(
        service
            .counter("webhook_ingest_refusals_recorded_total")
            .await,
        sent as u64
    );
    assert_eq!(
        service
            .counter("webhook_ingest_refusals_unrecorded_total")
            .await,
        0
    );
    let snapshot = service.quiescent().await;
    // Ok: setup (7), the list (1) and `/metrics` twice; the refusals are handled 401s.
    assert_eq!(
        (snapshot.started, snapshot.ok),
        (10 + sent as u64, 10),
        "{snapshot:#?}"
    );
    assert_eq!(snapshot.handled, sent as u64, "{snapshot:#?}");
    assert_eq!(snapshot.failures(), sent as u64, "{snapshot:#?}");
}

/// A refusal the store cannot keep still gets its answer, and is counted.
#[tokio::test]
async fn a_refusal_that_cannot_be_kept_changes_no_answer() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    service.outage.begin();
    let body = github_push(&["x"]);
    let headers = provider_headers(&fixture, Provider::Github, "push", "d1", &body)
        .set("content-type", "text/plain");
    let answer = service
        .send(post_to(
            &service,
            &fixture.hook_path(Provider::Github),
            headers,
            &body,
        ))
        .await;
    answer.assert_problem(415, "unsupported-media-type");
    assert_eq!(
        service
            .counter("webhook_ingest_refusals_unrecorded_total")
            .await,
        1
    );
    assert_eq!(
        service
            .counter("webhook_ingest_refusals_recorded_total")
            .await,
        0
    );
}

/// The same list on PostgreSQL, which keeps it for a fleet. Runs when
/// `WEBHOOK_INGEST_TEST_POSTGRES` names a database.
#[tokio::test]
async fn refusals_are_kept_and_listed_on_postgres() {
    let Some(url) = test_postgres("refusals_are_kept_and_listed_on_postgres") else {
        return;
    };
    let fleet = [
        Service::start_on_postgres(&url, TEST_BODY_LIMIT).await,
        Service::start_on_postgres(&url, TEST_BODY_LIMIT).await,
    ];
    let fixture = fleet[0].setup().await;
    for (n, service) in fleet.iter().enumerate() {
        let body = github_push(&["x"]);
        let id = format!("pg-bad-{n}");
        let headers = provider_headers(&fixture, Provider::Github, "push", &id, &body)
            .set("x-hub-signature-256", format!("sha256={}", "2".repeat(64)));
        let request = post_to(
            service,
            &fixture.hook_path(Provider::Github),
            headers,
            &body,
        );
        service
            .send(request)
            .await
            .assert_problem(401, "bad-signature");
    }
    let (inbox, _) = fixture.inbox(Provider::Github);
    let answer = fleet[1].refusals(&fixture, inbox, &fixture.key, "").await;
    assert_eq!(
        listed(&answer),
        [
            ("pg-bad-1".into(), 401, "bad-signature".into()),
            ("pg-bad-0".into(), 401, "bad-signature".into()),
        ]
    );
}

/// A flood of made-up signatures to a real inbox's URL, past the rate refusals are kept at:
/// every one is answered 401 and counted, at most the rate's worth per second becomes a write
/// of the store, and real deliveries sent at the same time are stored.
#[tokio::test]
async fn refusals_past_the_rate_are_counted_not_kept() {
    const PER_SECOND: u32 = 20;
    const SENT: usize = 400;
    const REAL: usize = 10;
    let service = Arc::new(start_keeping("refusals-rate", PER_SECOND).await);
    let fixture = Arc::new(service.setup().await);
    let started = std::time::Instant::now();
    let real = {
        let (service, fixture) = (service.clone(), fixture.clone());
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            for n in 0..REAL {
                let body = github_push(&[&format!("real{n}")]);
                let id = format!("real-{n}");
                let request = delivery(&service, &fixture, Provider::Github, "push", &id, &body);
                statuses.push(service.send(request).await.status);
            }
            statuses
        })
    };
    let statuses = send_bad(&service, &fixture, SENT).await;
    let real = real.await.unwrap();
    // The limit's seconds count from the service's start, not from `started`: a span of s
    // seconds overlaps at most floor(s) + 2 of them.
    let seconds = started.elapsed().as_secs() + 2;
    assert_eq!(statuses.len(), SENT);
    assert!(statuses.iter().all(|&s| s == 401), "{statuses:?}");
    assert_eq!(real, vec![201; REAL]);
    let recorded = service
        .counter("webhook_ingest_refusals_recorded_total")
        .await;
    let skipped = service
        .counter("webhook_ingest_refusals_skipped_total")
        .await;
    let unrecorded = service
        .counter("webhook_ingest_refusals_unrecorded_total")
        .await;
    assert_eq!(recorded + skipped + unrecorded, SENT as u64);
    assert_eq!(unrecorded, 0);
    assert!(recorded >= u64::from(PER_SECOND), "{recorded} kept");
    assert!(
        recorded <= u64::from(PER_SECOND) * seconds,
        "{recorded} kept over at most {seconds} windows of a second"
    );
    let (inbox, _) = fixture.inbox(Provider::Github);
    let answer = service
        .refusals(&fixture, inbox, &fixture.key, "?limit=100000")
        .await;
    assert_eq!(listed(&answer).len() as u64, recorded);
    assert_eq!(service.stats(&fixture).await["commits"], REAL as u64);
}
