//! Instances, their digests and their inboxes: created here, each answered once with the key
//! or secret it alone holds.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::auth::{authorize, authorize_digest, inbox_secret, token, ID_BYTES, SECRET_BYTES};
use crate::error::IngestError;
use crate::ids::{DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::state::AppState;
use crate::store;

/// Longest digest description and inbox name accepted, in bytes.
const MAX_TEXT_BYTES: usize = 500;

/// `POST /api/instances`: a new instance and its API key, which is answered this once and
/// kept only as its SHA-256.
pub(crate) async fn create_instance(
    State(state): State<AppState>,
) -> Result<Response, IngestError> {
    let id = InstanceId::stored(token("in_", ID_BYTES));
    let key = token("key_", SECRET_BYTES);
    let key_hash = Sha256::digest(key.as_bytes()).to_vec();
    state
        .pipeline
        .store
        .create_instance(id.clone(), key_hash)
        .await?;
    tracing::info!(instance = %id, "instance created");
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "api_key": key })),
    )
        .into_response())
}

/// `GET /api/instances/{instance}`: the instance, with its digest and inbox counts.
pub(crate) async fn get_instance(
    State(state): State<AppState>,
    Path(instance): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<serde_json::Value>, IngestError> {
    let row = authorize(&state.pipeline.store, &instance, &headers, &uri).await?;
    let stats = state.pipeline.store.stats(row.id.clone()).await?;
    Ok(Json(json!({
        "id": row.id,
        "created_at": row.created_at,
        "digests": stats.digests,
        "inboxes": stats.inboxes,
    })))
}

/// `GET /api/{instance}/stats`: the instance's row counts, for the load scripts' reconciliation.
pub(crate) async fn stats(
    State(state): State<AppState>,
    Path(instance): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<store::Stats>, IngestError> {
    let row = authorize(&state.pipeline.store, &instance, &headers, &uri).await?;
    Ok(Json(state.pipeline.store.stats(row.id).await?))
}

/// The body of `POST /api/{instance}/digests`.
#[derive(serde::Deserialize)]
pub(crate) struct DigestRequest {
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

/// `POST /api/{instance}/digests`: a new digest of the instance.
pub(crate) async fn create_digest(
    State(state): State<AppState>,
    Path(instance): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    Json(body): Json<DigestRequest>,
) -> Result<Response, IngestError> {
    let row = authorize(&state.pipeline.store, &instance, &headers, &uri).await?;
    bounded_text("description", &body.description)?;
    let id = DigestId::stored(token("dg_", ID_BYTES));
    state
        .pipeline
        .store
        .create_digest(row.id, id.clone(), body.description.clone())
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "description": body.description })),
    )
        .into_response())
}

/// The body of `POST /api/{instance}/digests/{digest}/inboxes`; the store's row to create is
/// [`store::NewInbox`].
#[derive(serde::Deserialize)]
pub(crate) struct InboxRequest {
    /// The provider's name, as [`Provider::parse`] reads it; `vcs` on the wire.
    #[serde(rename = "vcs")]
    provider: String,
    name: String,
}

/// `POST /api/{instance}/digests/{digest}/inboxes`: a new inbox for one provider, with its
/// webhook secret (answered this once) and the URL its provider is to call.
pub(crate) async fn create_inbox(
    State(state): State<AppState>,
    Path((instance, digest)): Path<(String, String)>,
    headers: HeaderMap,
    uri: Uri,
    Json(body): Json<InboxRequest>,
) -> Result<Response, IngestError> {
    let (row, digest) =
        authorize_digest(&state.pipeline.store, &instance, &digest, &headers, &uri).await?;
    let provider = Provider::parse(&body.provider).ok_or(IngestError::InvalidField {
        field: "vcs",
        problem: "must be `github`, `gitlab`, `bitbucket`, `gitea` or `forgejo`".into(),
    })?;
    bounded_text("name", &body.name)?;
    let id = InboxId::stored(token("ib_", ID_BYTES));
    let secret = inbox_secret(provider);
    state
        .pipeline
        .store
        .create_inbox(store::NewInbox {
            instance: row.id.clone(),
            digest: digest.clone(),
            id: id.clone(),
            provider,
            name: body.name.clone(),
            secret: secret.clone(),
        })
        .await?;
    // Known here at once, in memory and in the file of known inboxes before the answer, so
    // that a delivery in the next instant of an outage is verified, after a restart too.
    let known = store::InboxRow {
        id: id.clone(),
        digest_id: digest.clone(),
        provider,
        secret: secret.clone(),
        previous: None,
    };
    let pipeline = &state.pipeline;
    let _ = pipeline.secrets.remember(&row.id, &known);
    let written = pipeline.refreshes.write_now(&pipeline.secrets).await;
    written.map_err(IngestError::KnownInboxesUnwritable)?;
    pipeline.refreshes.want();
    // From the configured public URL: the request's Host is the client's to choose, and
    // behind TLS or a proxy it is not what the provider must call.
    let url = format!("{}/api/{}/inboxes/{id}/commits", state.public_url, row.id);
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "id": id,
            "digest": digest,
            "vcs": provider.as_str(),
            "name": body.name,
            "secret": secret,
            "url": url,
        })),
    )
        .into_response())
}
