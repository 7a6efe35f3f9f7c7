//! The management API: instances, their digests and inboxes, an inbox's secret and its
//! refused deliveries, a digest's commits; and what operators read (`/health`, `/metrics`,
//! `/errors`), and the first page a newcomer finds at `/` ([`home`]).
//!
//! Every route but `POST /api/instances` answers only the instance's API key
//! (`auth`), sent as `Authorization: Bearer KEY` or `?apiKey=KEY`.

mod auth;
mod catchup;
mod commits;
pub mod home;
mod instances;
pub(crate) mod observe;
mod refusals;
pub mod rotation;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The management routes take small JSON documents only.
const API_BODY_LIMIT: usize = 64 * 1024;

/// The `/api` routes that manage instances, digests and inboxes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/instances", post(instances::create_instance))
        .route("/api/instances/{instance}", get(instances::get_instance))
        .route("/api/{instance}/stats", get(instances::stats))
        .route("/api/{instance}/digests", post(instances::create_digest))
        .route(
            "/api/{instance}/digests/{digest}/inboxes",
            post(instances::create_inbox),
        )
        .route(
            "/api/{instance}/digests/{digest}/inboxes/{inbox}/secret",
            post(rotation::rotate_secret),
        )
        .route(
            "/api/{instance}/digests/{digest}/inboxes/{inbox}/catchup",
            get(catchup::show)
                .put(catchup::give)
                .delete(catchup::take_away),
        )
        .route(
            "/api/{instance}/inboxes/{inbox}/failures",
            get(refusals::list_refusals),
        )
        .route(
            "/api/{instance}/digests/{digest}/commits",
            get(commits::list_commits),
        )
        .layer(DefaultBodyLimit::max(API_BODY_LIMIT))
}
