//! What operators read: `/health` for a load balancer, `/metrics` for Prometheus, and the
//! error groups behind the admin token.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use axum::Json;
use faultline::Ledger;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::auth::bearer;
use crate::error::IngestError;
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

/// `/metrics`: the ledger's exposition, then the connection counts, the refusals, the ignored
/// events and the spool.
pub(crate) fn metrics(
    ledger: Ledger,
    connections: serve::Connections,
    state: AppState,
) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    move || {
        let mut body = ledger.snapshot().to_prometheus();
        connections.render_prometheus(&mut body);
        state.pipeline.refusals.render_prometheus(&mut body);
        state.pipeline.ignored.render_prometheus(&mut body);
        if let Some(spool) = &state.pipeline.spool {
            spool.stats().render_prometheus(&mut body);
            state.pipeline.drain_refused.render_prometheus(&mut body);
        }
        if let Some(unverified) = &state.pipeline.unverified {
            let stats = unverified.stats();
            stats.render_prometheus_as("webhook_ingest_spool_unverified", &mut body);
            state
                .pipeline
                .unverified_refused
                .render_prometheus(&mut body);
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
            spool_json["refused"] = state.pipeline.drain_refused.count().into();
            if let Some(unverified) = &state.pipeline.unverified {
                let mut unverified_json =
                    serde_json::to_value(unverified.stats()).unwrap_or_default();
                let (full, too_large) = state.pipeline.unverified_refused.counts();
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
