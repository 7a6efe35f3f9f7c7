//! The service's inboxes plugged into `faultline::webhooks` as its [`Secrets`]: the store
//! first, and while it cannot answer, the inboxes as last seen, when a spool can keep what
//! they verify.
//!
//! A lookup answers the keys to verify with, and leaves the inbox it found in the request's
//! extensions ([`Found`]) for the handler, which stores the delivery in it. The library's
//! two refusals mean here: `UnknownInbox`, the store knows no such inbox (404); and
//! `Unavailable`, the store did not answer and the inbox was not seen here, which the
//! handler answers by spooling the delivery unverified when it can.

use std::time::SystemTime;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use faultline::webhooks::{Keys, LookupError, Secrets};

use crate::store::{InboxRow, StoreError};
use crate::verify::keys::inbox_keys;
use crate::AppState;

/// The inbox a lookup found, and where from.
#[derive(Clone)]
pub(crate) enum Found {
    /// The store answered: it can take the delivery too.
    Stored(InboxRow),
    /// The store did not answer; the inbox as seen before.
    Remembered(InboxRow),
}

impl Secrets for AppState {
    async fn keys(&self, request: &mut Parts) -> Result<Keys, LookupError> {
        let Ok(Path((instance, inbox))) =
            Path::<(String, String)>::from_request_parts(request, &()).await
        else {
            return Err(LookupError::UnknownInbox);
        };
        let found = look_up(self, &instance, &inbox).await?;
        let (Found::Stored(row) | Found::Remembered(row)) = &found;
        let sender = row.vcs.sender(&request.headers);
        let keys = inbox_keys(row, sender, self.secret_grace, SystemTime::now());
        request.extensions.insert(found);
        keys.map_err(LookupError::unavailable)
    }
}

/// The inbox from the store, else, when there is a spool to fall back on, as remembered.
async fn look_up(state: &AppState, instance: &str, inbox: &str) -> Result<Found, LookupError> {
    match state
        .store
        .inbox(instance.to_owned(), inbox.to_owned())
        .await
    {
        Ok(Some(row)) => {
            // An inbox new here (made on another instance since the last refresh) is written
            // to the file of known inboxes now rather than at the next period. Only inboxes
            // that exist get here, so no sender can make refreshes by the request.
            if state.secrets.remember(instance, &row) {
                state.refreshes.want();
            }
            Ok(Found::Stored(row))
        }
        Ok(None) => Err(LookupError::UnknownInbox),
        Err(error) if state.spool.is_some() => {
            tracing::debug!(%error, "the store cannot look the inbox up");
            match state.secrets.get(instance, inbox) {
                Some(row) => Ok(Found::Remembered(row)),
                None => Err(LookupError::unavailable(error)),
            }
        }
        Err(error) => Err(LookupError::unavailable(error)),
    }
}

/// The store's error behind an `Unavailable` lookup, for the answer it gives.
pub(crate) fn store_error(error: LookupError) -> Option<StoreError> {
    match error {
        LookupError::Unavailable(source) => source.downcast::<StoreError>().ok().map(|e| *e),
        _ => None,
    }
}
