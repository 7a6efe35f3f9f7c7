//! The webhook endpoint: a request's bytes and headers handed to the pipeline
//! ([`Pipeline::ingest`](crate::pipeline)), and what became of the delivery answered.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::IngestError;
use crate::ids::{InboxId, InstanceId};
use crate::pipeline::{refusals, Arrival, Delivery, Fate, Pipeline};
use crate::provider;
use crate::state::AppState;
use crate::store::Ingested;

/// Whether the request says its body is JSON (parameters such as `charset` allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The webhook endpoint: `accept`'s answer, and a refusal worth redelivering once fixed kept
/// in the inbox's refusal list. Path segments not of an id's shape name no inbox: nothing is
/// kept for them, and `accept` answers them as an inbox that does not exist.
pub(crate) async fn receive(
    State(state): State<AppState>,
    Path((instance, inbox)): Path<(String, String)>,
    mut parts: Parts,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, IngestError> {
    let pipeline = &state.pipeline;
    let headers = &parts.headers;
    let ids = InstanceId::parse(&instance).zip(InboxId::parse(&inbox));
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            if let Some((instance, inbox)) = &ids {
                let status = rejection.status();
                refusals::note_body_refused(pipeline, instance, inbox, headers, status).await;
            }
            return Ok(rejection.into_response());
        }
    };
    let to = ids.as_ref().ok_or(inbox.as_str());
    let answer = accept(pipeline, to, &mut parts, body.clone()).await;
    if let (Err(error), Some((instance, inbox))) = (&answer, &ids) {
        refusals::note_error(pipeline, instance, inbox, &parts.headers, &body, error).await;
    }
    answer
}

/// A request's delivery through the pipeline: JSON, from a provider we know, to an inbox
/// named by ids (`to`, or the path's text that names none), then [`Pipeline::ingest`] judged
/// now.
async fn accept(
    pipeline: &Pipeline,
    to: Result<&(InstanceId, InboxId), &str>,
    parts: &mut Parts,
    body: Bytes,
) -> Result<Response, IngestError> {
    if !is_json(&parts.headers) {
        return Err(IngestError::UnsupportedMediaType);
    }
    let (provider, event) = provider::detect(&parts.headers)?;
    let (instance, inbox) = to.map_err(|text| IngestError::InboxNotFound(text.to_owned()))?;
    let delivery = Delivery {
        instance: instance.clone(),
        inbox: inbox.clone(),
        provider,
        event,
        event_name: provider.event_name(&parts.headers),
        body,
    };
    let fate = pipeline.ingest(delivery, Arrival::Request(parts)).await?;
    Ok(answer(fate, inbox))
}

/// What the sender is answered for what became of its delivery.
fn answer(fate: Fate, inbox: &InboxId) -> Response {
    match fate {
        Fate::Stored {
            ingested: Ingested::Stored(stored),
            delivery,
        } => {
            tracing::debug!(%inbox, delivery = %delivery, stored, "push stored");
            (
                StatusCode::CREATED,
                Json(
                    json!({ "status": "stored", "stored": stored, "delivery": delivery.as_str() }),
                ),
            )
                .into_response()
        }
        Fate::Stored {
            ingested: Ingested::Duplicate,
            delivery,
        } => (
            StatusCode::OK,
            Json(json!({ "status": "duplicate", "stored": 0, "delivery": delivery.as_str() })),
        )
            .into_response(),
        Fate::Stored {
            ingested: Ingested::Replayed,
            delivery,
        } => (
            StatusCode::OK,
            Json(json!({ "status": "replayed", "stored": 0, "delivery": delivery.as_str() })),
        )
            .into_response(),
        Fate::Queued { delivery } => (
            StatusCode::ACCEPTED,
            Json(json!({ "status": "queued", "delivery": delivery.as_str() })),
        )
            .into_response(),
        Fate::Ignored { event } => (
            StatusCode::ACCEPTED,
            Json(json!({ "status": "ignored", "event": event })),
        )
            .into_response(),
        Fate::Ping => StatusCode::NO_CONTENT.into_response(),
    }
}
