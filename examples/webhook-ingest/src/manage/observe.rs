//! What operators read: `/health` for a load balancer, `/metrics` for Prometheus, and the
//! error groups behind the admin token.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use axum::Json;
use faultline::Ledger;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::registry::Registry;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::auth::bearer;
use crate::error::IngestError;
use crate::pipeline::Pipeline;
use crate::serve;
use crate::state::AppState;

/// `GET` of `handler` for requests that send `Authorization: Bearer ADMIN_TOKEN`; a 401
/// for others.
pub(crate) fn admin_only<H>(admin_token: String, handler: H) -> MethodRouter
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

/// `/metrics`: the ledger's exposition, then the service's own registry encoded in the same
/// text format (the connection counts, the refusals, the ignored events and the spools).
pub(crate) fn metrics(
    ledger: Ledger,
    connections: serve::Connections,
    state: &AppState,
) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    let mut registry = registry(&connections, &state.pipeline);
    state.catchup.metrics.register(&mut registry);
    let registry = Arc::new(registry);
    move || {
        let mut body = ledger.snapshot().to_prometheus();
        // Writing into a `String` cannot fail, nor can the encoders, which only write.
        let _ = prometheus_text::encode(&mut body, &registry);
        std::future::ready(
            (
                [(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
                body,
            )
                .into_response(),
        )
    }
}

/// The service's own metrics, registered once: each part keeps its counts and the registry
/// reads them at each scrape. A spool's names start `webhook_ingest_spool_`, the unverified
/// one's `webhook_ingest_spool_unverified_`.
fn registry(connections: &serve::Connections, pipeline: &Pipeline) -> Registry {
    let mut registry = Registry::default();
    connections.register(&mut registry);
    pipeline.refusals.register(&mut registry);
    pipeline.ignored.register(&mut registry);
    pipeline.replays_refused.register(&mut registry);
    if let Some(spool) = &pipeline.spool {
        spool.register("webhook_ingest_spool", &mut registry);
        pipeline.refusals.register_at_drain(&mut registry);
    }
    if let Some(unverified) = &pipeline.unverified {
        unverified.register("webhook_ingest_spool_unverified", &mut registry);
        pipeline.refusals.register_unverified(&mut registry);
    }
    registry
}

/// Whether the service takes deliveries: with a spool it does while the store is down (the
/// body says so), so a load balancer keeps it in rotation; without one, a store that is down
/// is a 503. `durable` says whether a 201 survives a power cut under the store's settings
/// (`null` until the store is open).
pub(crate) async fn health(
    State(state): State<AppState>,
) -> Result<Json<serde_json::Value>, IngestError> {
    let store = state.pipeline.store.health().await;
    let mut body = match &state.pipeline.spool {
        None => {
            store?;
            json!({ "status": "ok", "store": "up" })
        }
        Some(spool) => {
            let mut spool_json = serde_json::to_value(spool.stats()).unwrap_or_default();
            spool_json["refused"] = state.pipeline.refusals.at_drain().into();
            if let Some(unverified) = &state.pipeline.unverified {
                let mut unverified_json =
                    serde_json::to_value(unverified.stats()).unwrap_or_default();
                let (full, too_large) = state.pipeline.refusals.unverified();
                unverified_json["refused_full"] = full.into();
                unverified_json["refused_too_large"] = too_large.into();
                spool_json["unverified"] = unverified_json;
            }
            spool_json["known_inboxes"] = state.pipeline.secrets.len().into();
            spool_json["inbox_refreshes"] = state.pipeline.refreshes.done().into();
            json!({
                "status": if store.is_ok() { "ok" } else { "degraded" },
                "store": if store.is_ok() { "up" } else { "down" },
                "spool": spool_json,
            })
        }
    };
    body["catchup"] = state.catchup.metrics.health();
    // Whether an answer that says stored survives a power cut: false, with the reason, when
    // the store's settings let a commit return first; not known (null) until the store is
    // open, since they are read then. The spool's 202 is fsynced either way.
    if !state.pipeline.store.is_open() {
        body["durable"] = serde_json::Value::Null;
        body["not_durable"] = "not known until the store is open".into();
    } else if let Some(why) = state.pipeline.store.not_durable() {
        body["durable"] = false.into();
        body["not_durable"] = why.into();
    } else {
        body["durable"] = true.into();
    }
    Ok(Json(body))
}
