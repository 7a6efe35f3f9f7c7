//! The webhook ingestion service's routes, behind one fault layer.
//!
//! A library so that the integration tests serve the same routes in-process; the
//! `webhook-ingest` binary serves them over TCP. Organizations ("instances") own digests; each
//! digest has inboxes; each inbox receives push webhooks from one provider and stores their
//! commits.

pub mod cli;
pub mod error;
pub mod manage;
pub mod receive;
pub mod serve;
pub mod spool;
pub mod store;
pub mod verify;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::{Json, Router};
use faultline::{FaultLayer, Ledger};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::IngestError;
use crate::manage::rotation;
use crate::receive::{ignored, refusals};
use crate::spool::drain;
use crate::store::{InstanceRow, Store};
use crate::verify::secret_cache;
use crate::verify::webhook::{self, Vcs};

/// GitHub's own cap on a webhook payload: a push larger than this never reaches us.
pub const DEFAULT_BODY_LIMIT: usize = 25 * 1024 * 1024;
/// The management routes take small JSON documents only.
const API_BODY_LIMIT: usize = 64 * 1024;
/// Commits per page when the client names no page size.
const DEFAULT_PAGE_SIZE: u32 = 50;
/// The largest page served, whatever the client asks: bounds the work and the response.
const MAX_PAGE_SIZE: u32 = 200;
/// Longest digest description and inbox name accepted, in bytes.
const MAX_TEXT_BYTES: usize = 500;
/// Random bytes in an id: at 64 bits a collision among one service's ids is vanishingly
/// unlikely, and the primary key would refuse it rather than merge two records.
const ID_BYTES: usize = 8;
/// Random bytes in an API key or webhook secret: 192 bits, beyond guessing.
pub(crate) const SECRET_BYTES: usize = 24;

/// What the service can be configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The largest webhook body accepted; larger ones get 413.
    pub body_limit: usize,
    /// The bearer token `/errors` asks for. The error groups hold internal text (5xx messages,
    /// chains, panic text) that no webhook sender may read; without a token `/errors` is not
    /// served at all.
    pub admin_token: Option<String>,
    /// How long a request's body and its answer may take, once its head has arrived.
    pub deadlines: serve::Deadlines,
    /// The connection counts served at `/metrics` beside the ledger's; the serve loop keeps
    /// them.
    pub connections: serve::Connections,
    /// How long an inbox's previous secret still passes after a rotation.
    pub secret_grace: std::time::Duration,
    /// Where verified deliveries go when the store cannot take them, answered 202 queued and
    /// drained into the store once it answers. Without one, store trouble answers 503.
    pub spool: Option<spool::Spool>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            body_limit: DEFAULT_BODY_LIMIT,
            admin_token: None,
            deadlines: serve::Deadlines::default(),
            connections: serve::Connections::default(),
            secret_grace: rotation::DEFAULT_SECRET_GRACE,
            spool: None,
        }
    }
}

#[derive(Clone)]
pub(crate) struct AppState {
    store: Store,
    secret_grace: std::time::Duration,
    refusals: Arc<refusals::RefusalCounts>,
    ignored: ignored::IgnoredEvents,
    secrets: secret_cache::SecretCache,
    spool: Option<spool::Spool>,
    spool_refused: drain::Refusals,
    /// Stops the drainer when the last router holding this state is dropped.
    _drainer: Option<Arc<AbortOnDrop>>,
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The service's router, every route behind one fault layer whose ledger is returned with it.
/// With a spool configured, it also starts the drainer (on the current tokio runtime), which
/// runs until the router is dropped.
pub fn app(store: Store, config: Config) -> (Router, Ledger) {
    let (layer, ledger) = FaultLayer::pair();
    let mut state = AppState {
        store,
        secret_grace: config.secret_grace,
        refusals: Arc::default(),
        ignored: ignored::IgnoredEvents::default(),
        secrets: secret_cache::SecretCache::default(),
        spool: config.spool,
        spool_refused: drain::Refusals::default(),
        _drainer: None,
    };
    if let Some(spool) = &state.spool {
        let drainer = drain::Drainer {
            store: state.store.clone(),
            spool: spool.clone(),
            secrets: state.secrets.clone(),
            ignored: state.ignored.clone(),
            refused: state.spool_refused.clone(),
            listed: state.refusals.clone(),
            secret_grace: state.secret_grace,
        };
        let task = tokio::spawn(drainer.run());
        state._drainer = Some(Arc::new(AbortOnDrop(task.abort_handle())));
    }
    let api = Router::new()
        .route("/api/instances", post(create_instance))
        .route("/api/instances/{instance}", get(get_instance))
        .route("/api/{instance}/stats", get(stats))
        .route("/api/{instance}/digests", post(create_digest))
        .route(
            "/api/{instance}/digests/{digest}/inboxes",
            post(create_inbox),
        )
        .route(
            "/api/{instance}/digests/{digest}/inboxes/{inbox}/secret",
            post(rotation::rotate_secret),
        )
        .route(
            "/api/{instance}/inboxes/{inbox}/failures",
            get(refusals::list_failures),
        )
        .route(
            "/api/{instance}/digests/{digest}/commits",
            get(list_commits),
        )
        .layer(DefaultBodyLimit::max(API_BODY_LIMIT));
    let hooks = Router::new().route(
        "/api/{instance}/inboxes/{inbox}/commits",
        post(receive::receive).layer(DefaultBodyLimit::max(config.body_limit)),
    );
    let metrics = get(metrics(ledger.clone(), config.connections, state.clone()));
    let mut router = api
        .merge(hooks)
        .route("/health", get(health))
        .with_state(state)
        .route("/metrics", metrics);
    if let Some(admin_token) = config.admin_token {
        // The error groups hold internal text: the JSON and the inbox page alike answer only
        // the admin token.
        router = router
            .route(
                "/errors",
                admin_only(admin_token.clone(), ledger.errors_handler()),
            )
            .route(
                "/errors/inbox",
                admin_only(admin_token, ledger.inbox_handler()),
            );
    }
    let deadlines =
        axum::middleware::from_fn_with_state(config.deadlines, serve::deadline::enforce);
    (router.layer(deadlines).layer(layer), ledger)
}

/// `GET` of `handler` for requests that send `Authorization: Bearer ADMIN_TOKEN`; a 401
/// for others.
fn admin_only<H>(admin_token: String, handler: H) -> MethodRouter
where
    H: FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static,
{
    get(move |headers: HeaderMap| async move {
        let sent = Sha256::digest(bearer(&headers).unwrap_or_default());
        let wanted = Sha256::digest(admin_token.as_bytes());
        if bool::from(sent.as_slice().ct_eq(wanted.as_slice())) {
            Ok(handler().await)
        } else {
            Err(IngestError::BadApiKey)
        }
    })
}

/// `/metrics`: the ledger's exposition, then the connection counts, the refusals, the ignored
/// events and the spool.
fn metrics(
    ledger: Ledger,
    connections: serve::Connections,
    state: AppState,
) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    move || {
        let mut body = ledger.snapshot().to_prometheus();
        connections.render_prometheus(&mut body);
        state.refusals.render_prometheus(&mut body);
        state.ignored.render_prometheus(&mut body);
        if let Some(spool) = &state.spool {
            spool.stats().render_prometheus(&mut body);
            state.spool_refused.render_prometheus(&mut body);
        }
        std::future::ready(
            (
                [(header::CONTENT_TYPE, faultline::ledger::PROMETHEUS_TEXT)],
                body,
            )
                .into_response(),
        )
    }
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    headers
        .get(header::AUTHORIZATION)?
        .as_bytes()
        .strip_prefix(b"Bearer ")
}

/// A fresh random token: `prefix` and hex.
pub(crate) fn token(prefix: &str, bytes: usize) -> String {
    let mut buffer = vec![0; bytes];
    getrandom::fill(&mut buffer).expect("the OS random source works");
    format!("{prefix}{}", webhook::hex_encode(&buffer))
}

/// The API key sent as `Authorization: Bearer KEY` or, for clients that cannot set headers,
/// `?apiKey=KEY`.
fn api_key<'a>(headers: &'a HeaderMap, uri: &'a Uri) -> Option<&'a [u8]> {
    if headers.contains_key(header::AUTHORIZATION) {
        return bearer(headers);
    }
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("apiKey="))
        .map(str::as_bytes)
}

/// The instance, if it exists and the request carries its key.
pub(crate) async fn authorize(
    store: &Store,
    instance: &str,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<InstanceRow, IngestError> {
    let row = store
        .instance(instance.to_owned())
        .await?
        .ok_or_else(|| IngestError::InstanceNotFound(instance.to_owned()))?;
    let sent = Sha256::digest(api_key(headers, uri).unwrap_or_default());
    if bool::from(sent.as_slice().ct_eq(&row.key_hash)) {
        Ok(row)
    } else {
        Err(IngestError::BadApiKey)
    }
}

/// [`authorize`], then the digest `digest` must be one of the instance's.
pub(crate) async fn authorize_digest(
    store: &Store,
    instance: &str,
    digest: &str,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<InstanceRow, IngestError> {
    let row = authorize(store, instance, headers, uri).await?;
    if store
        .digest_exists(row.id.clone(), digest.to_owned())
        .await?
    {
        Ok(row)
    } else {
        Err(IngestError::DigestNotFound(digest.to_owned()))
    }
}

/// Whether the service takes deliveries: with a spool it does while the store is down (the
/// body says so), so a load balancer keeps it in rotation; without one, a store that is down
/// is a 503.
async fn health(State(state): State<AppState>) -> Result<Json<serde_json::Value>, IngestError> {
    let store = state.store.health().await;
    let Some(spool) = &state.spool else {
        store?;
        return Ok(Json(json!({ "status": "ok", "store": "up" })));
    };
    let stats = spool.stats();
    let mut spool_json = serde_json::to_value(&stats).unwrap_or_default();
    spool_json["refused"] = state.spool_refused.count().into();
    Ok(Json(json!({
        "status": if store.is_ok() { "ok" } else { "degraded" },
        "store": if store.is_ok() { "up" } else { "down" },
        "spool": spool_json,
    })))
}

async fn create_instance(State(state): State<AppState>) -> Result<Response, IngestError> {
    let id = token("in_", ID_BYTES);
    let key = token("key_", SECRET_BYTES);
    let key_hash = Sha256::digest(key.as_bytes()).to_vec();
    state.store.create_instance(id.clone(), key_hash).await?;
    tracing::info!(instance = %id, "instance created");
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "api_key": key })),
    )
        .into_response())
}

async fn get_instance(
    State(state): State<AppState>,
    Path(instance): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<serde_json::Value>, IngestError> {
    let row = authorize(&state.store, &instance, &headers, &uri).await?;
    let stats = state.store.stats(row.id.clone()).await?;
    Ok(Json(json!({
        "id": row.id,
        "created_at": row.created_at,
        "digests": stats.digests,
        "inboxes": stats.inboxes,
    })))
}

async fn stats(
    State(state): State<AppState>,
    Path(instance): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<store::Stats>, IngestError> {
    let row = authorize(&state.store, &instance, &headers, &uri).await?;
    Ok(Json(state.store.stats(row.id).await?))
}

#[derive(serde::Deserialize)]
struct NewDigest {
    description: String,
}

/// A piece of client text that must be non-empty and short.
fn bounded_text(field: &'static str, text: &str) -> Result<(), IngestError> {
    let problem = if text.trim().is_empty() {
        "must not be empty".into()
    } else if text.len() > MAX_TEXT_BYTES {
        format!("must be at most {MAX_TEXT_BYTES} bytes").into()
    } else {
        return Ok(());
    };
    Err(IngestError::InvalidField { field, problem })
}

async fn create_digest(
    State(state): State<AppState>,
    Path(instance): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    Json(body): Json<NewDigest>,
) -> Result<Response, IngestError> {
    let row = authorize(&state.store, &instance, &headers, &uri).await?;
    bounded_text("description", &body.description)?;
    let id = token("dg_", ID_BYTES);
    state
        .store
        .create_digest(row.id, id.clone(), body.description.clone())
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "description": body.description })),
    )
        .into_response())
}

#[derive(serde::Deserialize)]
struct NewInbox {
    vcs: String,
    name: String,
}

async fn create_inbox(
    State(state): State<AppState>,
    Path((instance, digest)): Path<(String, String)>,
    headers: HeaderMap,
    uri: Uri,
    Json(body): Json<NewInbox>,
) -> Result<Response, IngestError> {
    let row = authorize_digest(&state.store, &instance, &digest, &headers, &uri).await?;
    let vcs = Vcs::parse(&body.vcs).ok_or(IngestError::InvalidField {
        field: "vcs",
        problem: "must be `github`, `gitlab` or `bitbucket`".into(),
    })?;
    bounded_text("name", &body.name)?;
    let id = token("ib_", ID_BYTES);
    let secret = token("whs_", SECRET_BYTES);
    state
        .store
        .create_inbox(store::NewInbox {
            instance: row.id.clone(),
            digest: digest.clone(),
            id: id.clone(),
            vcs,
            name: body.name.clone(),
            secret: secret.clone(),
        })
        .await?;
    // The host the client reached us by is the one its provider should use.
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1:3000");
    let url = format!("http://{host}/api/{}/inboxes/{id}/commits", row.id);
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "id": id,
            "digest": digest,
            "vcs": vcs.as_str(),
            "name": body.name,
            "secret": secret,
            "url": url,
        })),
    )
        .into_response())
}

#[derive(serde::Deserialize)]
struct Page {
    page_size: Option<u32>,
    /// The `next_before` of the previous page.
    before: Option<i64>,
}

async fn list_commits(
    State(state): State<AppState>,
    Path((instance, digest)): Path<(String, String)>,
    Query(page): Query<Page>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<serde_json::Value>, IngestError> {
    authorize_digest(&state.store, &instance, &digest, &headers, &uri).await?;
    let size = page
        .page_size
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, MAX_PAGE_SIZE);
    let commits = state.store.commits(digest, page.before, size).await?;
    let next_before = match commits.last() {
        Some(last) if commits.len() == size as usize => Some(last.seq),
        _ => None,
    };
    let commits: Vec<_> = commits
        .into_iter()
        .map(|stored| {
            let c = stored.commit;
            json!({
                "sha": c.sha,
                "message": c.message,
                "author": c.author,
                "timestamp": c.timestamp,
                "repository": c.repository,
                "branch": c.branch,
                "inbox": stored.inbox_id,
            })
        })
        .collect();
    Ok(Json(
        json!({ "commits": commits, "next_before": next_before }),
    ))
}
