//! A digest's commits, newest first, a page at a time.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;

use super::auth::authorize_digest;
use crate::error::IngestError;
use crate::state::AppState;
use crate::store::Commit;

/// Commits per page when the client names no page size.
const DEFAULT_PAGE_SIZE: u32 = 50;
/// The largest page served, whatever the client asks: bounds the work and the response.
const MAX_PAGE_SIZE: u32 = 200;

/// A page of commits as listed: `next_before` names the next page, null after the last.
#[derive(serde::Serialize)]
pub(crate) struct CommitsPage {
    commits: Vec<Listed>,
    next_before: Option<i64>,
}

/// A commit as listed: its own fields, and the inbox it came through.
#[derive(serde::Serialize)]
struct Listed {
    #[serde(flatten)]
    commit: Commit,
    inbox: String,
}

#[derive(serde::Deserialize)]
pub(crate) struct Page {
    page_size: Option<u32>,
    /// The `next_before` of the previous page.
    before: Option<i64>,
}

/// `GET /api/{instance}/digests/{digest}/commits`: a page of the digest's commits, newest
/// first; `next_before` names the next page.
pub(crate) async fn list_commits(
    State(state): State<AppState>,
    Path((instance, digest)): Path<(String, String)>,
    Query(page): Query<Page>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<CommitsPage>, IngestError> {
    let (_, digest) =
        authorize_digest(&state.pipeline.store, &instance, &digest, &headers, &uri).await?;
    let size = page
        .page_size
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, MAX_PAGE_SIZE);
    let commits = state
        .pipeline
        .store
        .commits(digest, page.before, size)
        .await?;
    let next_before = match commits.last() {
        Some(last) if commits.len() == size as usize => Some(last.seq),
        _ => None,
    };
    let commits = commits
        .into_iter()
        .map(|stored| Listed {
            commit: stored.commit,
            inbox: stored.inbox_id,
        })
        .collect();
    Ok(Json(CommitsPage {
        commits,
        next_before,
    }))
}
