//! Rotating an inbox's secret without losing a push: the new secret is answered once, and
//! the one it replaces stays valid for a grace period while the provider is updated.
//!
//! A provider signs with the one secret it holds, and none of the three retries a 401. So a
//! rotation that switched at once would refuse every push sent between the rotation and the
//! moment someone pastes the new secret into the provider's settings. The previous secret
//! passes for `--secret-grace` after the rotation (one day by default: time to update the
//! hook in the provider's settings, on a working day). The age of a rotation is measured by
//! the database's clock and read with the inbox, so every node of a fleet decides the
//! same. An inbox keeps one previous secret: rotating again within the grace ends the older
//! one's grace at once.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde_json::json;

use super::auth::{authorize_digest, inbox_id, inbox_secret};
use crate::error::IngestError;
use crate::ids::InstanceId;
use crate::provider::Provider;
use crate::state::AppState;
use crate::store::{InboxRow, PreviousSecret};

/// How long a replaced secret still passes, unless `--secret-grace` says otherwise: a working
/// day to change the provider's settings, which nobody does at the minute of the rotation.
pub const DEFAULT_SECRET_GRACE: Duration = Duration::from_secs(24 * 60 * 60);

/// `POST /api/{instance}/digests/{digest}/inboxes/{inbox}/secret`: a new secret for the
/// inbox, answered once; the previous one passes for the grace period.
pub(crate) async fn rotate_secret(
    State(state): State<AppState>,
    Path((instance, digest, inbox)): Path<(String, String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<serde_json::Value>, IngestError> {
    let (row, digest) =
        authorize_digest(&state.pipeline.store, &instance, &digest, &headers, &uri).await?;
    let inbox = inbox_id(&inbox)?;
    // The inbox's provider says the secret's form; an inbox not found is the rotation's
    // own 404 below.
    let known = state
        .pipeline
        .store
        .inbox(row.id.clone(), inbox.clone())
        .await?;
    let secret = inbox_secret(
        known
            .as_ref()
            .map_or(Provider::Github, |known| known.provider),
    );
    let rotated = state
        .pipeline
        .store
        .rotate_secret(row.id.clone(), digest, inbox.clone(), secret.clone())
        .await?;
    let (true, Some(known)) = (rotated, known) else {
        return Err(IngestError::InboxNotFound(inbox.to_string()));
    };
    remember_rotated(&state, &row.id, known, &secret).await?;
    // The inbox, never either secret: logs are read by more people than the secret is for.
    tracing::info!(inbox = %inbox, "inbox secret rotated");
    Ok(Json(json!({
        "id": inbox,
        "secret": secret,
        "previous_secret_valid_for_secs": state.pipeline.secret_grace.as_secs(),
    })))
}

/// The rotated inbox known here at once, in memory and in the file of known inboxes before
/// the answer: its new secret, and the one it replaced as the previous secret from now, as
/// the store keeps them.
async fn remember_rotated(
    state: &AppState,
    instance: &InstanceId,
    before: InboxRow,
    secret: &str,
) -> Result<(), IngestError> {
    let rotated = InboxRow {
        secret: secret.to_owned(),
        previous: Some(PreviousSecret {
            secret: before.secret.clone(),
            age: Duration::ZERO,
        }),
        ..before
    };
    let pipeline = &state.pipeline;
    let _ = pipeline.secrets.remember(instance, &rotated);
    let written = pipeline.refreshes.write_now(&pipeline.secrets).await;
    written.map_err(IngestError::KnownInboxesUnwritable)?;
    pipeline.refreshes.want();
    Ok(())
}
