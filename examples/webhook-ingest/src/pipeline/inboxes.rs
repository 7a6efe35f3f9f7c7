//! The service's inboxes plugged into `faultline::webhooks` as its [`Secrets`]: the store
//! first, and while it cannot answer, the inboxes as last seen, when a spool can keep what
//! they verify.
//!
//! A lookup reads the inbox the pipeline names in the request's extensions ([`Addressed`],
//! the ids parsed once from the path), answers the keys to verify with, and leaves the inbox
//! it found there too ([`Looked`]) for the pipeline, which stores the delivery in it. The library's
//! two refusals mean here: `UnknownInbox`, the store knows no such inbox (404); and
//! `Unavailable`, the store did not answer and the inbox was not seen here, which the
//! pipeline answers by queueing the delivery unverified when it can.

use std::time::SystemTime;

use axum::http::request::Parts;
use faultline::webhooks::{Keys, LookupError, Secrets};

use super::Pipeline;
use crate::error::IngestError;
use crate::ids::{InboxId, InstanceId};
use crate::store::{InboxRow, StoreError};
use crate::verify::keys::inbox_keys;

/// The inbox a request's delivery goes to, by the ids its path named: what the library's
/// lookup, which is handed only the request, reads.
#[derive(Clone)]
pub(super) struct Addressed {
    pub(super) instance: InstanceId,
    pub(super) inbox: InboxId,
}

/// The inbox a lookup found, and where from.
#[derive(Clone)]
pub(super) enum Looked {
    /// The store answered: it can take the delivery too.
    Stored(InboxRow),
    /// The store did not answer; the inbox as seen before.
    Remembered(InboxRow),
}

impl Looked {
    /// The inbox, and whether the store answered for it.
    pub(super) fn into_row(self) -> (InboxRow, bool) {
        match self {
            Looked::Stored(row) => (row, true),
            Looked::Remembered(row) => (row, false),
        }
    }
}

impl Secrets for Pipeline {
    async fn keys(&self, request: &mut Parts) -> Result<Keys, LookupError> {
        let Some(Addressed { instance, inbox }) = request.extensions.get::<Addressed>().cloned()
        else {
            return Err(LookupError::UnknownInbox);
        };
        let found = look_up(self, &instance, &inbox).await?;
        let (Looked::Stored(row) | Looked::Remembered(row)) = &found;
        let sender = row.provider.sender(&request.headers);
        let keys = inbox_keys(row, sender, self.secret_grace, SystemTime::now());
        request.extensions.insert(found);
        keys.map_err(LookupError::unavailable)
    }
}

/// Remembers what the store answered for `row`; an inbox new here (made on another node
/// since the last refresh) is written to the file of known inboxes now rather than at the
/// next period. Only inboxes that exist get here, so no sender can make refreshes by the
/// request.
pub(super) fn remember(pipeline: &Pipeline, instance: &InstanceId, row: &InboxRow) {
    if pipeline.secrets.remember(instance, row) {
        pipeline.refreshes.want();
    }
}

/// The inbox from the store, else, when there is a spool to fall back on, as remembered.
async fn look_up(
    state: &Pipeline,
    instance: &InstanceId,
    inbox: &InboxId,
) -> Result<Looked, LookupError> {
    match state.store.inbox(instance.clone(), inbox.clone()).await {
        Ok(Some(row)) => {
            remember(state, instance, &row);
            Ok(Looked::Stored(row))
        }
        Ok(None) => Err(LookupError::UnknownInbox),
        Err(error) if state.spool.is_some() => {
            tracing::debug!(%error, "the store cannot look the inbox up");
            match state.secrets.get(instance, inbox) {
                Some(row) => Ok(Looked::Remembered(row)),
                None => Err(LookupError::unavailable(error)),
            }
        }
        Err(error) => Err(LookupError::unavailable(error)),
    }
}

/// What a failed lookup of `inbox` means: `Ok` when the store did not answer and a spool can
/// keep the delivery unverified; the store's trouble when none can; else no such inbox.
pub(super) fn unavailable(
    pipeline: &Pipeline,
    error: LookupError,
    inbox: &InboxId,
) -> Result<(), IngestError> {
    match error {
        LookupError::Unavailable(error) if pipeline.spool.is_some() => {
            tracing::debug!(%error, "the inbox's secrets are not at hand");
            Ok(())
        }
        LookupError::Unavailable(source) => {
            let error = source
                .downcast::<StoreError>()
                .map_or(StoreError::Connecting, |e| *e);
            Err(error.into())
        }
        _ => Err(IngestError::InboxNotFound(inbox.to_string())),
    }
}
