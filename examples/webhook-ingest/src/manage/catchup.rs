//! An inbox's catch-up credentials: given (`PUT`), shown without their secrets (`GET`), taken
//! away (`DELETE`), at `/api/{instance}/digests/{digest}/inboxes/{inbox}/catchup`. Only a
//! GitHub or a GitLab inbox has catch-up: the other providers' APIs cannot list and resend a
//! hook's failed deliveries (`docs/reference-service.md` says what each offers).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Json;
use serde_json::Value;

use super::auth::{authorize_digest, inbox_id};
use crate::catchup::credentials::{describe, CatchUpRequest};
use crate::error::IngestError;
use crate::ids::{InboxId, InstanceId};
use crate::provider::Provider;
use crate::state::AppState;

/// The instance, checked with its key, and the provider of the inbox, which must be a GitHub
/// or a GitLab inbox of the digest.
async fn catchup_inbox(
    state: &AppState,
    (instance, digest, inbox): &(String, String, String),
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<(InstanceId, InboxId, Provider), IngestError> {
    let store = &state.pipeline.store;
    let (row, digest) = authorize_digest(store, instance, digest, headers, uri).await?;
    let inbox = inbox_id(inbox)?;
    match store.inbox(row.id.clone(), inbox.clone()).await? {
        Some(found)
            if found.digest_id == digest
                && matches!(found.provider, Provider::Github | Provider::Gitlab) =>
        {
            Ok((row.id, inbox, found.provider))
        }
        Some(found) if found.digest_id == digest => Err(IngestError::InvalidField {
            field: "inbox",
            problem: "has no catch-up: only GitHub and GitLab list and resend a hook's failed \
                      deliveries"
                .into(),
        }),
        _ => Err(IngestError::InboxNotFound(inbox.to_string())),
    }
}

/// `PUT …/catchup`: gives the inbox its catch-up, replacing any it had, and starts a round.
/// The answer shows the hook and how it is asked, never the token or the key.
pub(crate) async fn give(
    State(state): State<AppState>,
    Path(path): Path<(String, String, String)>,
    headers: HeaderMap,
    uri: Uri,
    Json(body): Json<CatchUpRequest>,
) -> Result<Json<Value>, IngestError> {
    let (instance, inbox, provider) = catchup_inbox(&state, &path, &headers, &uri).await?;
    let row = body.into_row(instance.clone(), inbox.clone(), provider)?;
    let store = &state.pipeline.store;
    store.set_catchup(row).await?;
    tracing::info!(%inbox, "catch-up credentials given");
    state.catchup.wake();
    let kept = store.catchup(instance, inbox.clone()).await?;
    let kept = kept.ok_or_else(|| IngestError::InboxNotFound(inbox.to_string()))?;
    Ok(Json(describe(&kept)))
}

/// `GET …/catchup`: the inbox's catch-up and how it goes, without its secrets.
pub(crate) async fn show(
    State(state): State<AppState>,
    Path(path): Path<(String, String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, IngestError> {
    let (instance, inbox, _) = catchup_inbox(&state, &path, &headers, &uri).await?;
    let kept = state.pipeline.store.catchup(instance, inbox).await?;
    let kept = kept.ok_or_else(|| IngestError::InvalidField {
        field: "inbox",
        problem: "has no catch-up credentials".into(),
    })?;
    Ok(Json(describe(&kept)))
}

/// `DELETE …/catchup`: the inbox's catch-up and its credentials are forgotten.
pub(crate) async fn take_away(
    State(state): State<AppState>,
    Path(path): Path<(String, String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<StatusCode, IngestError> {
    let (instance, inbox, _) = catchup_inbox(&state, &path, &headers, &uri).await?;
    state
        .pipeline
        .store
        .delete_catchup(instance, inbox.clone())
        .await?;
    tracing::info!(%inbox, "catch-up credentials taken away");
    Ok(StatusCode::NO_CONTENT)
}
