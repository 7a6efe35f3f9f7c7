//! The service's words for what the providers send: which provider a delivery comes from
//! ([`Provider`], also the kind of an inbox), what its event asks of us ([`Event`]), and the shape
//! of a push payload ([`Shape`]). Every other module may use them.

use std::fmt;

use axum::http::HeaderMap;
use faultline::webhooks::Sender;
use faultline::Fault;

/// The order providers are recognized in: Forgejo also sends Gitea's and GitHub's event
/// headers, and Gitea GitHub's, so each is looked for before those it imitates.
const DETECTION_ORDER: [Provider; 5] = [
    Provider::Forgejo,
    Provider::Gitea,
    Provider::Github,
    Provider::Gitlab,
    Provider::Bitbucket,
];

/// A version control provider, and the kind of an inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    Github,
    Gitlab,
    Bitbucket,
    /// Gitea: a GitHub-shaped push, `X-Gitea-Signature`.
    Gitea,
    /// Forgejo: as Gitea, under its own header names.
    Forgejo,
}

impl Provider {
    pub const ALL: [Provider; 5] = [
        Provider::Github,
        Provider::Gitlab,
        Provider::Bitbucket,
        Provider::Gitea,
        Provider::Forgejo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Github => "github",
            Provider::Gitlab => "gitlab",
            Provider::Bitbucket => "bitbucket",
            Provider::Gitea => "gitea",
            Provider::Forgejo => "forgejo",
        }
    }

    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.as_str() == name)
    }

    /// The sender whose headers this provider's deliveries carry: its token's for GitLab,
    /// whose Standard Webhooks deliveries name their event and id in the same headers.
    fn headers_sender(self) -> Sender {
        match self {
            Provider::Github => Sender::GitHub,
            Provider::Gitlab => Sender::GitLab,
            Provider::Bitbucket => Sender::Bitbucket,
            Provider::Gitea => Sender::Gitea,
            Provider::Forgejo => Sender::Forgejo,
        }
    }

    /// The header that names the event.
    fn event_header(self) -> &'static str {
        self.headers_sender()
            .event_header()
            .expect("every provider names its event in a header")
    }

    /// The event header's value, as sent.
    pub fn event_name(self, headers: &HeaderMap) -> String {
        headers
            .get(self.event_header())
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// The sender that `faultline::webhooks` verifies a delivery of this provider as: a
    /// GitLab delivery that carries Standard Webhooks headers is checked as one (GitLab's
    /// signing token), any other by its token.
    pub fn sender(self, headers: &HeaderMap) -> Sender {
        match self {
            // The signature header's presence makes it a delivery signed with Standard Webhooks.
            Provider::Gitlab if headers.contains_key(Sender::GitLabSigned.signature_header()) => {
                Sender::GitLabSigned
            }
            provider => provider.headers_sender(),
        }
    }

    /// The headers that carry the delivery id, preferred first.
    pub(crate) fn delivery_headers(self) -> &'static [&'static str] {
        self.headers_sender().id_headers()
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a delivery asks of us.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A push, its payload of this shape.
    Push(Shape),
    Ping,
    /// An event the service acknowledges and does not store (202), by its name.
    Ignored(String),
}

/// The provider whose event header is present, and the event it names.
pub fn detect(headers: &HeaderMap) -> Result<(Provider, Event), UnknownProvider> {
    for provider in DETECTION_ORDER {
        if let Some(value) = headers.get(provider.event_header()) {
            let name = value.to_str().unwrap_or("(not text)");
            return Ok((provider, classify(provider, name)));
        }
    }
    Err(UnknownProvider)
}

/// A delivery that names no provider we take: none of their event headers is there.
#[derive(Debug, thiserror::Error, Fault)]
#[error(
    "no provider header: expected one of `X-GitHub-Event`, `X-Gitlab-Event`, `X-Event-Key`, `X-Gitea-Event`, `X-Forgejo-Event`"
)]
#[fault(status = 400, code = "unknown-provider")]
pub struct UnknownProvider;

/// What the event named `name` of `provider` asks of us.
pub fn classify(provider: Provider, name: &str) -> Event {
    match (provider, name) {
        // Gitea's and Forgejo's push payload is GitHub's, fields and names.
        (Provider::Github | Provider::Gitea | Provider::Forgejo, "push") => {
            Event::Push(Shape::Github)
        }
        (Provider::Gitlab, "Push Hook" | "Tag Push Hook") => Event::Push(Shape::Gitlab),
        (Provider::Bitbucket, "repo:push") => Event::Push(Shape::BitbucketCloud),
        // Bitbucket Data Center's push; its inboxes are Bitbucket inboxes too.
        (Provider::Bitbucket, "repo:refs_changed") => Event::Push(Shape::BitbucketServer),
        // GitHub's hook-created event and Bitbucket Server's "test connection".
        (Provider::Github, "ping") | (Provider::Bitbucket, "diagnostics:ping") => Event::Ping,
        _ => Event::Ignored(name.to_owned()),
    }
}

/// The shape of a push payload, named by the provider's event header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// GitHub `push`: one ref, `commits[]` of `id`, `message`, `timestamp`, `author.name`.
    Github,
    /// GitLab `Push Hook` and `Tag Push Hook`: as GitHub, the repository in `project`.
    Gitlab,
    /// Bitbucket Cloud `repo:push`: `push.changes[]`, each with `new` and `commits[]`.
    BitbucketCloud,
    /// Bitbucket Data Center `repo:refs_changed`: `changes[]` naming each ref's new tip only.
    BitbucketServer,
}
