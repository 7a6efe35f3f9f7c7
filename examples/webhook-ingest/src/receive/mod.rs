//! The webhook endpoint: authenticity on the raw bytes first, then the event, then the store,
//! and the spool when the store cannot take a delivery.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use faultline::webhooks::{LookupError, Secrets};
use serde_json::json;
use std::time::SystemTime;

pub mod ignored;
mod inboxes;
pub mod payload;
pub mod refusals;

use crate::error::IngestError;
use crate::spool::spooled::SpooledDelivery;
use crate::spool::{Spool, SpoolError};
use crate::store::{Ingested, StoreError};
use crate::verify::keys;
use crate::verify::webhook::{self, Event, Proof, Vcs};
use crate::AppState;
use inboxes::Found;

/// Whether the request says its body is JSON (parameters such as `charset` allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The webhook endpoint: `accept`'s answer, and a refusal worth redelivering once fixed kept
/// in the inbox's failure list.
pub(crate) async fn receive(
    State(state): State<AppState>,
    Path((instance, inbox)): Path<(String, String)>,
    mut parts: Parts,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, IngestError> {
    let headers = &parts.headers;
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let status = rejection.status();
            refusals::note_body_refused(&state, &instance, &inbox, headers, status).await;
            return Ok(rejection.into_response());
        }
    };
    let answer = accept(&state, &instance, &inbox, &mut parts, body.clone()).await;
    if let Err(error) = &answer {
        refusals::note_error(&state, &instance, &inbox, &parts.headers, &body, error).await;
    }
    answer
}

/// A delivery: authenticity on the raw bytes first, then the event, then the store, else the
/// spool.
async fn accept(
    state: &AppState,
    instance: &str,
    inbox: &str,
    parts: &mut Parts,
    body: Bytes,
) -> Result<Response, IngestError> {
    if !is_json(&parts.headers) {
        return Err(IngestError::UnsupportedMediaType);
    }
    let (sent, event) = webhook::detect(&parts.headers)?;
    let (instance, inbox) = (instance.to_owned(), inbox.to_owned());
    let looked_up = state.keys(parts).await;
    let headers = &parts.headers;
    let found = parts.extensions.get::<Found>().cloned();
    let (keys, row, from_store) = match (looked_up, found) {
        (Ok(keys), Some(Found::Stored(row))) => (keys, row, true),
        (Ok(keys), Some(Found::Remembered(row))) => (keys, row, false),
        (Err(LookupError::Unavailable(error)), _) if state.spool.is_some() => {
            tracing::debug!(%error, "the inbox's secrets are not at hand");
            let unverified = Unverified {
                instance,
                inbox,
                vcs: sent,
            };
            return unverified.spool(state, event, headers, body).await;
        }
        (Err(error @ LookupError::Unavailable(_)), _) => {
            let error = inboxes::store_error(error).unwrap_or(StoreError::Connecting);
            return Err(error.into());
        }
        _ => return Err(IngestError::InboxNotFound(inbox)),
    };
    if row.vcs != sent {
        return Err(IngestError::WrongProvider {
            inbox: row.vcs,
            sent,
        });
    }
    let now = SystemTime::now();
    keys::verify_with(&keys, headers, &body, now)?;
    let shape = match event {
        Event::Ping => return Ok(StatusCode::NO_CONTENT.into_response()),
        Event::Ignored(event) => return Ok(ignored(state, sent, event)),
        Event::Push(shape) => shape,
    };
    let delivery = webhook::delivery_id(sent, headers, &body)?;
    let commits = payload::parse_push(shape, &body)?;
    let inbox_id = row.id.clone();
    if from_store {
        match state
            .store
            .ingest(instance.clone(), row, delivery.clone(), commits)
            .await
        {
            Ok(ingested) => return Ok(answer(ingested, &inbox_id, delivery)),
            Err(error) if state.spool.is_some() => {
                tracing::debug!(%error, "the store cannot take the delivery");
            }
            Err(error) => return Err(error.into()),
        }
    }
    let spooled = SpooledDelivery {
        instance,
        inbox: inbox_id,
        vcs: sent,
        event: sent.event_name(headers),
        delivery,
        proof: None,
        received: Some(now),
        body: body.to_vec(),
    };
    spool(state, spooled).await
}

/// 202 ignored, counted.
pub(crate) fn ignored(state: &AppState, vcs: Vcs, event: String) -> Response {
    state.ignored.count(vcs, &event);
    (
        StatusCode::ACCEPTED,
        Json(json!({ "status": "ignored", "event": event })),
    )
        .into_response()
}

fn answer(ingested: Ingested, inbox: &str, delivery: String) -> Response {
    match ingested {
        Ingested::Stored(stored) => {
            tracing::debug!(inbox, delivery = %delivery, stored, "push stored");
            (
                StatusCode::CREATED,
                Json(json!({ "status": "stored", "stored": stored, "delivery": delivery })),
            )
                .into_response()
        }
        Ingested::Duplicate => (
            StatusCode::OK,
            Json(json!({ "status": "duplicate", "stored": 0, "delivery": delivery })),
        )
            .into_response(),
    }
}

/// A delivery to an inbox whose secret is not at hand.
struct Unverified {
    instance: String,
    inbox: String,
    vcs: Vcs,
}

impl Unverified {
    /// Everything that can be checked without the secret is checked now (a proof that is
    /// there and well formed, a delivery id, a push that parses); the signature itself when
    /// drained. A ping stores nothing, so it is answered as always. What anyone could send
    /// goes to the small unverified spool, and past its bound or its per-body cap is 503.
    async fn spool(
        self,
        state: &AppState,
        event: Event,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response, IngestError> {
        let received = SystemTime::now();
        keys::check_headers(self.vcs, headers, received)?;
        let proof = Proof::read(self.vcs, headers);
        if let Event::Ping = event {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        // The cap before the parse: a flood of large bodies costs no parsing.
        let Some(unverified) = &state.unverified else {
            return Err(IngestError::UnverifiedBound);
        };
        if body.len() > state.unverified_max_body {
            state.unverified_refused.too_large();
            return Err(IngestError::UnverifiedBound);
        }
        let delivery = webhook::delivery_id(self.vcs, headers, &body)?;
        if let Event::Push(shape) = event {
            payload::parse_push(shape, &body)?;
        }
        let spooled = SpooledDelivery {
            instance: self.instance,
            inbox: self.inbox,
            vcs: self.vcs,
            event: self.vcs.event_name(headers),
            delivery,
            proof: Some(proof),
            received: Some(received),
            body: body.to_vec(),
        };
        match append(unverified, spooled).await {
            Err(IngestError::SpoolFull) => {
                state.unverified_refused.full();
                Err(IngestError::UnverifiedBound)
            }
            answer => answer,
        }
    }
}

/// Appends the verified delivery to the spool and answers 202 queued once it is on disk.
async fn spool(state: &AppState, delivery: SpooledDelivery) -> Result<Response, IngestError> {
    let spool = state
        .spool
        .as_ref()
        .ok_or(IngestError::StoreUnavailable(StoreError::Connecting))?;
    append(spool, delivery).await
}

/// Appends the delivery to `spool` and answers 202 queued once it is on disk.
async fn append(spool: &Spool, delivery: SpooledDelivery) -> Result<Response, IngestError> {
    let id = delivery.delivery.clone();
    match spool.append(delivery.encode()).await {
        Ok(()) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({ "status": "queued", "delivery": id })),
        )
            .into_response()),
        Err(SpoolError::Full) => Err(IngestError::SpoolFull),
        Err(error) => Err(IngestError::SpoolUnavailable(error)),
    }
}
