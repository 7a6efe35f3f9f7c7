//! `GET /`: what a newcomer's first request finds. What this service is, the one request that
//! creates an instance, where the guide is, and where health and metrics are; HTML for a
//! browser (an `Accept` that names `text/html`), JSON for anything else.
//!
//! Every URL on it is built from the service's public URL (`--public-url`, else the listen
//! address), never from the request's `Host` header, which the client chooses.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::state::AppState;

/// Where the guide lives, as the repository names it.
pub const GUIDE: &str = "docs/reference-service.md";
/// What the service is, in one sentence.
const ABOUT: &str = "webhook-ingest receives push webhooks from GitHub, GitLab, Bitbucket, \
                     Gitea and Forgejo, verifies their signatures and stores their commits; every failure goes \
                     through faultline.";

/// The first page, in the form the client asked for.
pub(crate) async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let base = state.public_url.as_ref();
    let create = format!("curl -X POST {base}/api/instances");
    if wants_html(&headers) {
        return Html(page(base, &create)).into_response();
    }
    Json(json!({
        "service": "webhook-ingest",
        "about": ABOUT,
        "create_instance": create,
        "guide": GUIDE,
        "health": format!("{base}/health"),
        "metrics": format!("{base}/metrics"),
    }))
    .into_response()
}

/// Whether the client's `Accept` names HTML, as a browser's does; anything else gets JSON.
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|media| {
            let mut parts = media.split(';');
            let name = parts.next().unwrap_or_default().trim();
            // `q=0` says "not this one".
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case("text/html") && !refused
        })
}

fn page(base: &str, create: &str) -> String {
    let (base, create) = (escape(base), escape(create));
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">\
         <title>webhook-ingest</title></head>\n<body>\n\
         <h1>webhook-ingest</h1>\n<p>{about}</p>\n\
         <h2>Start here</h2>\n<p>Create an instance; the answer holds its id and API key:</p>\n\
         <pre>{create}</pre>\n\
         <p>The guide, <code>{GUIDE}</code>, goes on from there: digests, inboxes, signed \
         pushes, the spool, every flag.</p>\n\
         <h2>For operators</h2>\n<ul>\n\
         <li>health: <a href=\"{base}/health\">{base}/health</a></li>\n\
         <li>metrics: <a href=\"{base}/metrics\">{base}/metrics</a></li>\n\
         </ul>\n</body>\n</html>\n",
        about = escape(ABOUT),
    )
}

/// `text` safe inside HTML text and double-quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
