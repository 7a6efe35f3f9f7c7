//! The deliveries an inbox refused, listed for the operator who fixed their cause and now
//! picks the ones to redeliver (see `pipeline::refusals` for what is kept). The path and the
//! JSON field say `failures`, as clients have read them since the list was first served;
//! everything else says refusals.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde_json::json;

use super::auth::{authorize, inbox_id};
use crate::error::IngestError;
use crate::state::AppState;
use crate::store::REFUSALS_KEPT_PER_INBOX;

/// Refusals listed when the client names no limit.
const DEFAULT_LISTED: u32 = 100;

#[derive(serde::Deserialize)]
pub(crate) struct Listed {
    limit: Option<u32>,
}

/// `GET /api/{instance}/inboxes/{inbox}/failures`: the inbox's refused deliveries, newest
/// first, at most `?limit=` (default 100, never more than are kept).
pub(crate) async fn list_refusals(
    State(state): State<AppState>,
    Path((instance, inbox)): Path<(String, String)>,
    Query(listed): Query<Listed>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<serde_json::Value>, IngestError> {
    let row = authorize(&state.pipeline.store, &instance, &headers, &uri).await?;
    let inbox = inbox_id(&inbox)?;
    if state
        .pipeline
        .store
        .inbox(row.id.clone(), inbox.clone())
        .await?
        .is_none()
    {
        return Err(IngestError::InboxNotFound(inbox.to_string()));
    }
    let limit = listed
        .limit
        .unwrap_or(DEFAULT_LISTED)
        .clamp(1, REFUSALS_KEPT_PER_INBOX as u32);
    let rows = state.pipeline.store.refusals(row.id, inbox, limit).await?;
    let refusals: Vec<_> = rows
        .into_iter()
        .map(|row| {
            json!({
                "delivery": row.refusal.delivery,
                "refused_at": row.refused_at,
                "status": row.refusal.status,
                "code": row.refusal.code,
            })
        })
        .collect();
    Ok(Json(json!({ "failures": refusals })))
}
