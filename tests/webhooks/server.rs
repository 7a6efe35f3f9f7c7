//! A receiver behind the extractor, served over TCP: one inbox per sender, a second GitHub
//! inbox with a secret of its own, a rotating inbox, and an inbox whose store is down.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::{FromRef, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::routing::post;
use axum::{Json, Router};
use faultline::webhooks::{
    Intake, Keys, LookupError, Secret, SecretSet, Secrets, Sender, Verified,
};
use faultline::FaultLayer;
use serde_json::{json, Value};

use crate::common::Lab;

/// The bound the test receiver reads bodies under.
pub const MAX_BODY: usize = 64 * 1024;

/// The inboxes, their sender and the one secret they sign with in the tests.
pub const INBOXES: [(&str, Sender, &str); 10] = [
    ("github", Sender::GitHub, "gh-secret"),
    ("gitlab", Sender::GitLab, "glt-token"),
    (
        "gitlab-signed",
        Sender::GitLabSigned,
        "whsec_c2lnbmluZyB0b2tlbiBvZiBhIGdpdGxhYiBob29rIQ==",
    ),
    ("bitbucket", Sender::Bitbucket, "bb-secret"),
    ("gitea", Sender::Gitea, "gitea-secret"),
    ("forgejo", Sender::Forgejo, "forgejo-secret"),
    (
        "standard",
        Sender::StandardWebhooks,
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ),
    ("stripe", Sender::Stripe, "whsec_stripe_signing_secret"),
    ("slack", Sender::Slack, "8f742231b10e8888abcd99yyyzzz85a5"),
    ("shopify", Sender::Shopify, "shpss_shopify_secret"),
];

/// A second GitHub inbox: a delivery signed for it must not pass at `github`.
pub const OTHER_GITHUB: (&str, &str) = ("github-other", "another inbox's secret");
/// Rotating: `new` and `old` pass; `retired` expired an hour ago.
pub const ROTATING: &str = "rotating";
/// The inbox whose store fails; its error text must reach no client.
pub const BROKEN: &str = "broken";
pub const STORE_ERROR: &str = "connection to 10.0.0.7:5432 refused";

pub struct Inboxes(HashMap<String, Keys>);

impl Secrets for Inboxes {
    async fn keys(&self, request: &mut Parts) -> Result<Keys, LookupError> {
        let Ok(Path(inbox)) = Path::<String>::from_request_parts(request, &()).await else {
            return Err(LookupError::UnknownInbox);
        };
        if inbox == BROKEN {
            return Err(LookupError::unavailable(std::io::Error::other(STORE_ERROR)));
        }
        self.0.get(&inbox).cloned().ok_or(LookupError::UnknownInbox)
    }
}

pub fn secret(sender: Sender, text: &str) -> Secret {
    Secret::for_sender(sender, text).unwrap()
}

fn inboxes() -> Inboxes {
    let mut map: HashMap<String, Keys> = INBOXES
        .iter()
        .map(|&(name, sender, text)| {
            let set = SecretSet::new([secret(sender, text)]).unwrap();
            (name.to_owned(), Keys::new(sender, set).unwrap())
        })
        .collect();
    let other = SecretSet::one(OTHER_GITHUB.1).unwrap();
    map.insert(
        OTHER_GITHUB.0.into(),
        Keys::new(Sender::GitHub, other).unwrap(),
    );
    let now = SystemTime::now();
    let hour = Duration::from_secs(3600);
    let rotating = SecretSet::new([
        Secret::new("new").unwrap(),
        Secret::new("old").unwrap().expires_at(now + hour),
        Secret::new("retired").unwrap().expires_at(now - hour),
    ])
    .unwrap();
    map.insert(
        ROTATING.into(),
        Keys::new(Sender::GitHub, rotating).unwrap(),
    );
    Inboxes(map)
}

#[derive(Clone)]
pub struct App {
    intake: Intake<Inboxes>,
    pub kept: Arc<AtomicU64>,
}

impl FromRef<App> for Intake<Inboxes> {
    fn from_ref(app: &App) -> Self {
        app.intake.clone()
    }
}

async fn receive(State(app): State<App>, delivery: Verified<Inboxes>) -> Json<Value> {
    app.kept.fetch_add(1, Ordering::Relaxed);
    Json(json!({
        "sender": delivery.sender().name(),
        "id": delivery.id(),
        "event": delivery.event(),
        "timestamp": delivery.timestamp().map(crate::sign::unix),
        "body": String::from_utf8_lossy(delivery.body()),
    }))
}

/// The receiver, served on 127.0.0.1, and the count of deliveries its handler ran for.
pub async fn start() -> (Lab, Arc<AtomicU64>) {
    let app = App {
        intake: Intake::new(inboxes()).max_body_bytes(MAX_BODY),
        kept: Arc::default(),
    };
    let kept = Arc::clone(&app.kept);
    let (layer, ledger) = FaultLayer::pair();
    let router = Router::new()
        .route("/hooks/{inbox}", post(receive))
        .with_state(app)
        .layer(layer);
    (Lab::serve(router, ledger).await, kept)
}

/// Posts `body` with `headers` to inbox `inbox`: the status and the JSON answer.
pub async fn post_to(
    lab: &Lab,
    inbox: &str,
    headers: &[(&'static str, String)],
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = client.post(lab.url(&format!("/hooks/{inbox}")));
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.body(body).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}
