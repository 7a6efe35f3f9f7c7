//! What the layer keeps of a request: clones of the request's own parts, and its route
//! template as interned in the route table (`route.rs`).

use axum::extract::{MatchedPath, OriginalUri};
use http::uri::PathAndQuery;
use http::{HeaderName, HeaderValue, Method, Request};

use super::id::{generate_request_id, is_usable, RequestId};
use super::route::{route_label, InternedRoute, Route, RouteKey};
use crate::outcome::UNMATCHED_ROUTE;

/// The request facts a failure's summary, problem body and report need.
#[derive(Debug)]
pub(crate) struct RequestMeta {
    method: Method,
    /// The path the client sent; only the path is ever shown, the rest of the URI is not kept.
    path: Option<PathAndQuery>,
    route: Route,
    request_id: Option<HeaderValue>,
}

impl RequestMeta {
    // Inlined into the guard's start, so that the meta is written straight into the record's
    // allocation: out of line it is returned and copied twice (ledger-grind's ok row, 1,803
    // instructions inlined, 1,876 not).
    #[inline(always)]
    pub(crate) fn capture<B>(request: &Request<B>, request_id_header: &HeaderName) -> Self {
        Self {
            method: request.method().clone(),
            path: sent_uri(request).path_and_query().cloned(),
            route: request
                .extensions()
                .get::<MatchedPath>()
                .map_or(Route::Unmatched, route_label),
            request_id: sent_header(request.headers(), request_id_header).cloned(),
        }
    }

    /// Takes the route template a layer nested inside saw, when this one saw none.
    pub(crate) fn refine_route(&mut self, route: InternedRoute) {
        if let Route::Unmatched = self.route {
            self.route = Route::Interned(route);
        }
    }

    pub(crate) fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The request's method as http's type, for what depends on it besides its label.
    pub(crate) fn http_method(&self) -> &Method {
        &self.method
    }

    /// The route template from axum's `MatchedPath`, never the raw path.
    pub(crate) fn route(&self) -> &str {
        self.matched_route().unwrap_or(UNMATCHED_ROUTE)
    }

    /// The route template, when a route matched.
    pub(crate) fn matched_route(&self) -> Option<&str> {
        match &self.route {
            Route::Unmatched => None,
            Route::Interned(route) => Some(route.text),
            Route::Shared(matched) => Some(matched.as_str()),
        }
    }

    /// Which route the request's counts go to.
    pub(crate) fn route_key(&self) -> RouteKey {
        match &self.route {
            Route::Unmatched => RouteKey::Unmatched,
            Route::Interned(route) => RouteKey::Interned(*route),
            Route::Shared(_) => RouteKey::Uninterned,
        }
    }

    /// The request path without its query: query strings carry API keys.
    pub(crate) fn path(&self) -> &str {
        // As `Uri::path` says it: no path at all (authority form) is empty.
        self.path.as_ref().map_or("", PathAndQuery::path)
    }

    /// The request id the client sent, if it is printable and at most
    /// [`MAX_REQUEST_ID_BYTES`](crate::limits::MAX_REQUEST_ID_BYTES); else a new one unique to
    /// this process. A client's id is a header value, shared, not copied, into the response
    /// head; a made one is text until an answer renders it.
    pub(crate) fn request_id(&self) -> RequestId {
        self.request_id_or(|| None)
    }

    /// As [`request_id`](Self::request_id), but when the request came without one, the id an
    /// inner layer wrote on the response (`answered`, looked up only then), if usable, before
    /// a new one: a layer such as tower-http's `SetRequestIdLayer` placed inside this one set
    /// the id that the handlers and their spans saw, and its `PropagateRequestIdLayer` wrote
    /// it back.
    pub(crate) fn request_id_or<'a>(
        &self,
        answered: impl FnOnce() -> Option<&'a HeaderValue>,
    ) -> RequestId {
        match &self.request_id {
            Some(id) if is_usable(id) => RequestId::Sent(id.clone()),
            _ => match answered() {
                Some(id) if is_usable(id) => RequestId::Sent(id.clone()),
                _ => generate_request_id(),
            },
        }
    }
}

/// Up to this many distinct header names, the request id's header is found by comparing
/// names, not by hashing its own: a name of another length or a standard header is told
/// apart by one or two comparisons, and hashing a custom name of 12 bytes (`x-request-id`)
/// cost more than comparing it with a few (`bench-smoke`'s `/ok`, BENCHMARKS.md, "Third
/// round"). Past it, the map's hash lookup.
const SCANNED_HEADER_NAMES: usize = 8;

/// The first value of `name` in `headers`, as [`HeaderMap::get`](http::HeaderMap::get) finds
/// it.
fn sent_header<'a>(headers: &'a http::HeaderMap, name: &HeaderName) -> Option<&'a HeaderValue> {
    match headers.keys_len() {
        0 => return None,
        n if n > SCANNED_HEADER_NAMES => return headers.get(name),
        _ => {}
    }
    // `iter` yields each name's first value first, the one `get` returns.
    headers
        .iter()
        .find_map(|(sent, value)| (sent == name).then_some(value))
}

/// The URI as the client sent it. A router nested under a prefix (`Router::nest`) strips the
/// prefix from the request's URI before its layers see it; axum keeps the original in
/// [`OriginalUri`], which the outermost router inserts.
fn sent_uri<B>(request: &Request<B>) -> &http::Uri {
    request
        .extensions()
        .get::<OriginalUri>()
        .map_or(request.uri(), |original| &original.0)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::limits::MAX_REQUEST_ID_BYTES;

    #[test]
    fn request_id_comes_from_the_header_or_is_generated_unique() {
        let header = HeaderName::from_static("x-request-id");
        let with = Request::builder()
            .uri("/a/b?apiKey=secret")
            .header("x-request-id", "abc-123")
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&with, &header);
        assert_eq!(meta.request_id().text(), "abc-123");
        assert_eq!(meta.path(), "/a/b");
        assert_eq!(meta.route(), UNMATCHED_ROUTE);

        let without = Request::builder().uri("/").body(()).unwrap();
        let meta = RequestMeta::capture(&without, &header);
        let (a, b) = (meta.request_id(), meta.request_id());
        let (a, b) = (a.text(), b.text());
        assert_ne!(a, b);
        assert_eq!(a.len(), 8 + 1 + 12);

        let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        let too_long = Request::get("/")
            .header("x-request-id", &long)
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&too_long, &header);
        assert_eq!(meta.request_id().text().len(), 8 + 1 + 12);
    }

    /// Compared name by name or looked up by hash, the id's header is found as
    /// `HeaderMap::get` finds it: its first value, among few names or many.
    #[test]
    fn the_request_id_header_is_found_as_get_finds_it() {
        let name = HeaderName::from_static("x-request-id");
        for others in [0, 1, SCANNED_HEADER_NAMES - 1, SCANNED_HEADER_NAMES, 40] {
            let mut headers = http::HeaderMap::new();
            for i in 0..others {
                let other = HeaderName::from_bytes(format!("x-other-{i}").as_bytes()).unwrap();
                headers.insert(other, HeaderValue::from_static("x"));
            }
            assert_eq!(sent_header(&headers, &name), None, "{others} others");
            headers.append(&name, HeaderValue::from_static("first"));
            headers.insert(http::header::HOST, HeaderValue::from_static("host"));
            headers.append(&name, HeaderValue::from_static("second"));
            assert_eq!(
                sent_header(&headers, &name),
                headers.get(&name),
                "{others} others"
            );
            assert_eq!(sent_header(&headers, &name).unwrap(), "first");
        }
    }
}
