//! What the layer keeps of a request to describe its failure: captured at `call` by
//! reference-counted clones only, so the success path copies no bytes.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::MatchedPath;
use http::{HeaderName, HeaderValue, Method, Request, Uri};

use crate::ledger::UNMATCHED_ROUTE;

/// The longest request id taken from a client: it is echoed in a header, the problem body and
/// every report, so a client must not be able to make it large. UUIDs and the ids of common
/// tracing systems are well under it.
pub(crate) const MAX_REQUEST_ID_BYTES: usize = 128;

/// The request facts a failure's summary, problem body and report need.
#[derive(Debug)]
pub(crate) struct RequestMeta {
    method: Method,
    uri: Uri,
    route: Option<MatchedPath>,
    request_id: Option<HeaderValue>,
}

impl RequestMeta {
    pub(crate) fn capture<B>(request: &Request<B>, request_id_header: &HeaderName) -> Self {
        Self {
            method: request.method().clone(),
            uri: request.uri().clone(),
            route: request.extensions().get::<MatchedPath>().cloned(),
            request_id: request.headers().get(request_id_header).cloned(),
        }
    }

    pub(crate) fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The route template from axum's `MatchedPath`, never the raw path.
    pub(crate) fn route(&self) -> &str {
        self.route
            .as_ref()
            .map_or(UNMATCHED_ROUTE, MatchedPath::as_str)
    }

    /// The route template, when a route matched.
    #[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
    pub(crate) fn matched_route(&self) -> Option<&str> {
        self.route.as_ref().map(MatchedPath::as_str)
    }

    /// The request path without its query: query strings carry API keys.
    pub(crate) fn path(&self) -> &str {
        self.uri.path()
    }

    /// The request id the client sent, if it is printable and at most
    /// [`MAX_REQUEST_ID_BYTES`]; else a new one unique to this process.
    pub(crate) fn request_id(&self) -> Cow<'_, str> {
        match self.request_id.as_ref().map(HeaderValue::to_str) {
            Some(Ok(id)) if !id.is_empty() && id.len() <= MAX_REQUEST_ID_BYTES => Cow::Borrowed(id),
            _ => Cow::Owned(generate_request_id()),
        }
    }
}

/// A process-unique id: a per-process prefix and a counter. Made only when a failure needs
/// one and the request brought none, so it costs nothing on the success path.
fn generate_request_id() -> String {
    static PREFIX: OnceLock<u32> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = *PREFIX.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Mixed with the pid so that processes started in the same instant differ.
        let mixed = (nanos ^ u64::from(std::process::id()).rotate_left(32))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> 32) as u32
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix:08x}-{n:012x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_id_comes_from_the_header_or_is_generated_unique() {
        let header = HeaderName::from_static("x-request-id");
        let with = Request::builder()
            .uri("/a/b?apiKey=secret")
            .header("x-request-id", "abc-123")
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&with, &header);
        assert_eq!(meta.request_id(), "abc-123");
        assert_eq!(meta.path(), "/a/b");
        assert_eq!(meta.route(), UNMATCHED_ROUTE);

        let without = Request::builder().uri("/").body(()).unwrap();
        let meta = RequestMeta::capture(&without, &header);
        let (a, b) = (meta.request_id(), meta.request_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 8 + 1 + 12);

        let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        let too_long = Request::get("/")
            .header("x-request-id", &long)
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&too_long, &header);
        assert_eq!(meta.request_id().len(), 8 + 1 + 12);
    }
}
