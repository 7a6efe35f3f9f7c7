//! Real payloads that GitHub, GitLab, Bitbucket, Gitea and Forgejo send (collected from public sources, see
//! `fixtures/SOURCES.md`), each sent over TCP as its provider sends it: the answer must be
//! the right one, and the store must hold exactly the commits the payload carries, optional
//! fields that the payload lacks stored as absent.

mod common;

use common::*;
use serde_json::Value;
use webhook_ingest::ids::DigestId;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::StoredCommit;

/// Past the most commits any fixture holds, so one page shows everything new.
const PAGE: u32 = 200;

/// One fixture and what the service must make of it, from `fixtures/expected.json`.
struct Case {
    file: String,
    provider: Provider,
    event: String,
    status: u16,
    code: Option<String>,
    commits: Vec<Value>,
}

fn cases() -> Vec<Case> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let manifest = std::fs::read(format!("{dir}/expected.json")).unwrap();
    let manifest: Vec<Value> = serde_json::from_slice(&manifest).unwrap();
    manifest
        .into_iter()
        .map(|case| Case {
            file: format!("{dir}/{}", case["file"].as_str().unwrap()),
            provider: Provider::parse(case["vcs"].as_str().unwrap()).unwrap(),
            event: case["event"].as_str().unwrap().to_owned(),
            status: case["status"].as_u64().unwrap() as u16,
            code: case["code"].as_str().map(str::to_owned),
            commits: case["commits"].as_array().cloned().unwrap_or_default(),
        })
        .collect()
}

/// A stored commit in the manifest's terms, as the commits API lists it: absent fields as
/// JSON null.
fn as_json(stored: &StoredCommit) -> Value {
    serde_json::to_value(&stored.commit).unwrap()
}

/// The digest's commits stored after `seq`, oldest first (the order of the payload).
async fn stored_after(service: &Service, fixture: &Fixture, seq: i64) -> Vec<StoredCommit> {
    let mut newer: Vec<StoredCommit> = service
        .store
        .commits(DigestId::parse(&fixture.digest).unwrap(), None, PAGE)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.seq > seq)
        .collect();
    newer.reverse();
    newer
}

/// The request the provider would send: Bitbucket Data Center names its delivery in
/// `X-Request-Id` where Bitbucket Cloud uses `X-Request-UUID`.
fn send(
    service: &Service,
    fixture: &Fixture,
    case: &Case,
    id: &str,
    body: &[u8],
) -> reqwest::RequestBuilder {
    let mut headers = provider_headers(fixture, case.provider, &case.event, id, body);
    if case.event == "repo:refs_changed" {
        headers = headers.without("x-request-uuid").set("x-request-id", id);
    }
    post_to(service, &fixture.hook_path(case.provider), headers, body)
}

#[tokio::test]
async fn every_real_payload_is_answered_and_stored_exactly() {
    let body_limit = webhook_ingest::DEFAULT_BODY_LIMIT;
    every_real_payload(Service::start_on_file_with_limit("fixtures", body_limit).await).await;
}

#[tokio::test]
async fn every_real_payload_is_stored_exactly_in_postgres() {
    if let Some(url) = test_postgres("every_real_payload_is_stored_exactly_in_postgres") {
        every_real_payload(
            Service::start_on_postgres(&url, webhook_ingest::DEFAULT_BODY_LIMIT).await,
        )
        .await;
    }
}

async fn every_real_payload(service: Service) {
    let fixture = service.setup().await;
    let cases = cases();
    assert!(cases.len() >= 20, "the manifest lost fixtures");
    let mut last_seq = 0;
    let mut deliveries = 0;
    let mut commits = 0;
    for (n, case) in cases.iter().enumerate() {
        let body = std::fs::read(&case.file).unwrap();
        let id = format!("fixture-{n}");
        let answer = service
            .send(send(&service, &fixture, case, &id, &body))
            .await;
        assert_eq!(answer.status, case.status, "{}: {}", case.file, answer.text);
        if let Some(code) = &case.code {
            answer.assert_problem(case.status, code);
        }
        let stored = stored_after(&service, &fixture, last_seq).await;
        let stored_json: Vec<Value> = stored.iter().map(as_json).collect();
        assert_eq!(stored_json, case.commits, "{}", case.file);
        if case.status == 202 {
            assert_eq!(answer.body["status"], "ignored", "{}", case.file);
            assert_eq!(answer.body["event"], case.event.as_str(), "{}", case.file);
        }
        if case.status == 201 {
            assert_eq!(answer.body["status"], "stored", "{}", case.file);
            assert_eq!(answer.body["stored"], case.commits.len(), "{}", case.file);
            deliveries += 1;
            commits += case.commits.len();
            // The provider's redelivery of the same push stores nothing more.
            let again = service
                .send(send(&service, &fixture, case, &id, &body))
                .await;
            assert_eq!(again.status, 200, "{}: {}", case.file, again.text);
            assert_eq!(again.body["status"], "duplicate", "{}", case.file);
            assert!(stored_after(&service, &fixture, last_seq).await.len() == stored.len());
        }
        last_seq = stored.last().map_or(last_seq, |c| c.seq);
    }
    let stats = service.stats(&fixture).await;
    assert_eq!(stats["deliveries"], deliveries);
    assert_eq!(stats["commits"], commits);
}

#[tokio::test]
async fn absent_commit_fields_are_listed_as_null() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    let case = cases()
        .into_iter()
        .find(|c| c.file.ends_with("repo-push-atlassian-docs.json"))
        .unwrap();
    let body = std::fs::read(&case.file).unwrap();
    let answer = service
        .send(send(&service, &fixture, &case, "docs", &body))
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let listed = service
        .send(
            service
                .client
                .get(service.url(&format!(
                    "/api/{}/digests/{}/commits",
                    fixture.instance, fixture.digest
                )))
                .bearer_auth(&fixture.key),
        )
        .await;
    let commit = &listed.body["commits"][0];
    assert_eq!(commit["sha"], "03f4a7270240708834de475bcf21532d6134777e");
    assert_eq!(commit["author"], "Emma", "{}", listed.text);
    // Listed as null, not left out: indexing a missing key would read null too.
    assert_eq!(
        commit.get("timestamp"),
        Some(&Value::Null),
        "{}",
        listed.text
    );
}
