//! What a test service is set up with: an instance, a digest, an inbox per provider, and
//! the pushes each provider sends.

use serde_json::{json, Value};
use webhook_ingest::provider;
use webhook_ingest::verify::webhook;

use super::Service;

/// The requests [`Service::setup`] sends, every one ok: the instance, the digest and an inbox
/// per provider.
pub const SETUP_REQUESTS: u64 = 2 + provider::Provider::ALL.len() as u64;

pub struct Fixture {
    pub instance: String,
    pub key: String,
    pub digest: String,
    pub inboxes: Vec<(provider::Provider, String, String)>,
}

impl Fixture {
    pub fn inbox(&self, provider: provider::Provider) -> (&str, &str) {
        let (_, id, secret) = self
            .inboxes
            .iter()
            .find(|(v, _, _)| *v == provider)
            .unwrap();
        (id, secret)
    }

    pub fn hook_path(&self, provider: provider::Provider) -> String {
        format!(
            "/api/{}/inboxes/{}/commits",
            self.instance,
            self.inbox(provider).0
        )
    }
}

impl Service {
    /// A service on an in-memory store with an instance, a digest and an inbox per provider.
    pub async fn with_fixture() -> (Self, Fixture) {
        let service = Self::start().await;
        let fixture = service.setup().await;
        (service, fixture)
    }

    /// An instance, one digest, and one inbox per provider.
    pub async fn setup(&self) -> Fixture {
        let created = self
            .send(self.client.post(self.url("/api/instances")))
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
        let instance = created.str("id");
        let key = created.str("api_key");
        let digest = self
            .post_json(
                &format!("/api/{instance}/digests"),
                &key,
                json!({ "description": "platform team" }),
            )
            .await;
        assert_eq!(digest.status, 201, "{}", digest.text);
        let digest = digest.str("id");
        let mut inboxes = Vec::new();
        for provider in provider::Provider::ALL {
            let inbox = self
                .post_json(
                    &format!("/api/{instance}/digests/{digest}/inboxes"),
                    &key,
                    json!({ "vcs": provider.as_str(), "name": format!("{provider} hooks") }),
                )
                .await;
            assert_eq!(inbox.status, 201, "{}", inbox.text);
            assert_eq!(
                inbox.str("url"),
                self.url(&format!(
                    "/api/{instance}/inboxes/{}/commits",
                    inbox.str("id")
                ))
            );
            inboxes.push((provider, inbox.str("id"), inbox.str("secret")));
        }
        Fixture {
            instance,
            key,
            digest,
            inboxes,
        }
    }

    /// The instance's stats, which must be answered 200.
    pub async fn stats(&self, fixture: &Fixture) -> Value {
        let answer = self
            .send(
                self.client
                    .get(self.url(&format!("/api/{}/stats", fixture.instance)))
                    .bearer_auth(&fixture.key),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.body
    }
}

/// A GitHub push whose body is its own ([`named`]).
pub fn github_push_named(id: &str, shas: &[&str]) -> Vec<u8> {
    named(&github_push(shas), id)
}

/// `push` made a delivery of its own: `after` (the head commit GitHub and GitLab name in
/// every push) set to `id`, so that two pushes of the same commits, or of none, are two
/// deliveries and not a replay of one.
pub fn named(push: &[u8], id: &str) -> Vec<u8> {
    let mut push: Value = serde_json::from_slice(push).unwrap();
    push["after"] = json!(id);
    push.to_string().into_bytes()
}

pub fn github_push(shas: &[&str]) -> Vec<u8> {
    let commits: Vec<Value> = shas
        .iter()
        .map(|sha| {
            json!({
                "id": sha,
                "message": format!("commit {sha}"),
                "timestamp": "2026-11-29T10:00:00Z",
                "author": { "name": "Ada" },
            })
        })
        .collect();
    json!({
        "ref": "refs/heads/main",
        "repository": { "full_name": "acme/widgets" },
        "commits": commits,
    })
    .to_string()
    .into_bytes()
}

pub fn gitlab_push() -> Vec<u8> {
    json!({
        "object_kind": "push",
        "ref": "refs/heads/develop",
        "project": { "path_with_namespace": "acme/gadgets" },
        "commits": [
            { "id": "gl1", "message": "first", "timestamp": "2026-11-29T10:00:00+01:00",
              "author": { "name": "Grace", "email": "grace@example.com" } },
        ],
    })
    .to_string()
    .into_bytes()
}

pub fn bitbucket_push() -> Vec<u8> {
    json!({
        "repository": { "full_name": "acme/gizmos" },
        "push": { "changes": [
            { "new": { "type": "branch", "name": "feature" },
              "commits": [
                { "hash": "bb2", "message": "second", "date": "2026-11-29T10:01:00+00:00",
                  "author": { "raw": "Linus <linus@example.com>" } },
                { "hash": "bb1", "message": "first", "date": "2026-11-29T10:00:00+00:00",
                  "author": { "raw": "Linus <linus@example.com>" } },
              ] },
            { "new": null, "commits": [] },
        ] },
    })
    .to_string()
    .into_bytes()
}
