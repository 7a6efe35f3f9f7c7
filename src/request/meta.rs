//! What the layer keeps of a request to describe its failure, captured at `call` without
//! copying bytes and without writing memory that other cores write: the route template is
//! interned once per process (see [`route_label`]), the rest are clones of the request's own
//! parts.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{MatchedPath, OriginalUri};
use http::uri::PathAndQuery;
use http::{HeaderName, HeaderValue, Method, Request};
use rustc_hash::FxHashMap;

use crate::limits::MAX_REQUEST_ID_BYTES;
use crate::outcome::UNMATCHED_ROUTE;
use crate::text::freeze;

/// The request facts a failure's summary, problem body and report need.
#[derive(Debug)]
pub(crate) struct RequestMeta {
    method: Method,
    /// The path the client sent; only the path is ever shown, the rest of the URI is not kept.
    path: Option<PathAndQuery>,
    route: Route,
    request_id: Option<HeaderValue>,
}

/// A route template interned once per process, and its place in the order of interning:
/// a small dense number that per-route counters index by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InternedRoute {
    pub(crate) text: &'static str,
    /// Below [`MAX_INTERNED_ROUTES`].
    pub(crate) index: u16,
}

/// Which route a request's counts go to, without its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteKey {
    /// No route matched.
    Unmatched,
    /// An interned template.
    Interned(InternedRoute),
    /// A template past the interning cap: counted with the overflow.
    Uninterned,
}

/// The route template of a request.
#[derive(Debug)]
enum Route {
    /// No route matched, or the layer sits outside the router.
    Unmatched,
    /// Interned: no reference count to bump.
    Interned(InternedRoute),
    /// Past the interning cap: axum's own shared string.
    Shared(MatchedPath),
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
            request_id: request.headers().get(request_id_header).cloned(),
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
    /// [`MAX_REQUEST_ID_BYTES`]; else a new one unique to this process. A header value, so a
    /// client's id is shared, not copied, and either goes straight into the response head.
    pub(crate) fn request_id(&self) -> HeaderValue {
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
    ) -> HeaderValue {
        match &self.request_id {
            Some(id) if is_usable(id) => id.clone(),
            _ => match answered() {
                Some(id) if is_usable(id) => id.clone(),
                _ => generate_request_id(),
            },
        }
    }
}

/// The interned route template of `request`, if a route matched.
pub(crate) fn interned_route<B>(request: &Request<B>) -> Option<InternedRoute> {
    match request.extensions().get::<MatchedPath>().map(route_label) {
        Some(Route::Interned(route)) => Some(route),
        _ => None,
    }
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

/// The most route templates interned per process. Templates come from the application's own
/// routes, a few dozen; the cap only bounds what a process that builds routers from data
/// could leak. Past it, routes are kept as axum's shared string.
pub(crate) const MAX_INTERNED_ROUTES: usize = 4096;

/// Slots of the per-thread cache in front of the interned set.
const ROUTE_CACHE_SLOTS: usize = 16;

/// The route template as a `&'static str`, interned once per process.
///
/// axum hands every request of a route the same reference-counted string; keeping a clone
/// would write its count, one cache line that every core's requests of that route share.
/// Interning copies each template once; a per-thread cache keyed by the string's address
/// (and checked by its text, since an address can be reused) finds it again without a lock.
/// Kept by hand: an interning crate (`internment`, `lasso`) leaks or arenas the strings in
/// the same way behind a shared lock, and would still need this per-thread cache to keep
/// the lock off the path of every request; there is no lock-free protocol here to check.
/// Each template gets the next index as it is interned, so that counters per route are a
/// dense array rather than a table keyed by text.
fn route_label(matched: &MatchedPath) -> Route {
    const EMPTY: (usize, InternedRoute) = (0, InternedRoute { text: "", index: 0 });
    type Slots = [(usize, InternedRoute); ROUTE_CACHE_SLOTS];
    thread_local! {
        static CACHE: RefCell<Slots> = const { RefCell::new([EMPTY; ROUTE_CACHE_SLOTS]) };
    }
    static INTERNED: Mutex<Option<FxHashMap<&'static str, u16>>> = Mutex::new(None);
    let route = matched.as_str();
    let address = route.as_ptr() as usize;
    let slot = (address >> 3) % ROUTE_CACHE_SLOTS;
    // A cache gone or in use (a thread-local destructor, which cannot happen to this `const`
    // one without a destructor of its own) is a miss.
    let cached = CACHE.try_with(|cache| cache.try_borrow().ok().map(|slots| slots[slot]));
    if let Ok(Some((at, cached))) = cached {
        if at == address && cached.text == route {
            return Route::Interned(cached);
        }
    }
    let interned = {
        // Not `panic::lock`, which takes the `sync` facade's locks: this one is process-wide.
        let mut map = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        let map = map.get_or_insert_with(FxHashMap::default);
        match map.get_key_value(route) {
            Some((&text, &index)) => Some(InternedRoute { text, index }),
            None if map.len() < MAX_INTERNED_ROUTES => {
                let text: &'static str = Box::leak(route.into());
                let index = map.len() as u16;
                map.insert(text, index);
                Some(InternedRoute { text, index })
            }
            None => None,
        }
    };
    match interned {
        Some(interned) => {
            let _ = CACHE.try_with(|cache| {
                if let Ok(mut slots) = cache.try_borrow_mut() {
                    slots[slot] = (address, interned);
                }
            });
            Route::Interned(interned)
        }
        None => Route::Shared(matched.clone()),
    }
}

fn is_usable(id: &HeaderValue) -> bool {
    !id.is_empty() && id.len() <= MAX_REQUEST_ID_BYTES && id.to_str().is_ok()
}

/// The text of a request id from [`RequestMeta::request_id`], which is always printable.
pub(crate) fn request_id_text(id: &HeaderValue) -> &str {
    id.to_str().unwrap_or_default()
}

/// Digits of the per-process prefix and of the counter in a generated request id.
const PREFIX_DIGITS: usize = 8;
const COUNTER_DIGITS: usize = 12;

/// Ids a thread takes from the process-wide counter at a time, so that failures on different
/// cores do not all write one counter.
const ID_BLOCK: u64 = 1024;

/// The next number of this process's request ids: unique, increasing per thread.
fn next_id_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        /// The next number of this thread's block, and the end of the block.
        static BLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    BLOCK
        .try_with(|block| {
            let (mut next, mut end) = block.get();
            if next == end {
                next = NEXT.fetch_add(ID_BLOCK, Ordering::Relaxed);
                end = next + ID_BLOCK;
            }
            block.set((next + 1, end));
            next
        })
        // Without the block (which a `const` cell without a destructor never is): one number
        // straight from the process-wide counter, still unique.
        .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A process-unique id: a per-process prefix and a number, in hex. Made only when a failure
/// needs one and the request brought none, so it costs nothing on the success path.
fn generate_request_id() -> HeaderValue {
    /// The prefix's digits, written once.
    static PREFIX: OnceLock<[u8; PREFIX_DIGITS]> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Mixed with the pid so that processes started in the same instant differ.
        let mixed = (nanos ^ u64::from(std::process::id()).rotate_left(32))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut digits = [0; PREFIX_DIGITS];
        write_hex(&mut digits, mixed >> 32);
        digits
    });
    let n = next_id_number();
    let mut id = [b'-'; PREFIX_DIGITS + 1 + COUNTER_DIGITS];
    id[..PREFIX_DIGITS].copy_from_slice(prefix);
    write_hex(&mut id[PREFIX_DIGITS + 1..], n);
    HeaderValue::from_maybe_shared(freeze(&id))
        .expect("hex digits and a dash are a valid header value")
}

/// Writes the low hex digits of `value` into `out`, most significant first: what `{:0N$x}`
/// writes, without the formatting machinery, which costs more than the rest of the id.
fn write_hex(out: &mut [u8], value: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = out.len();
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 4 * (digits - 1 - i);
        *slot = HEX[(value >> shift & 0xf) as usize];
    }
}

#[cfg(all(test, not(loom)))]
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
        assert_eq!(request_id_text(&meta.request_id()), "abc-123");
        assert_eq!(meta.path(), "/a/b");
        assert_eq!(meta.route(), UNMATCHED_ROUTE);

        let without = Request::builder().uri("/").body(()).unwrap();
        let meta = RequestMeta::capture(&without, &header);
        let (a, b) = (meta.request_id(), meta.request_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 8 + 1 + 12);
        let mut hex = [0; 12];
        write_hex(&mut hex, 0xab_cdef_0123);
        assert_eq!(&hex, format!("{:012x}", 0xab_cdef_0123_u64).as_bytes());

        let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        let too_long = Request::get("/")
            .header("x-request-id", &long)
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&too_long, &header);
        assert_eq!(meta.request_id().len(), 8 + 1 + 12);
    }

    #[tokio::test]
    async fn route_templates_are_interned_once_and_found_again_by_text() {
        use axum::{body::Body, routing::get, Router};
        use tower::ServiceExt;

        let labels = std::sync::Arc::new(Mutex::new(Vec::new()));
        let seen = labels.clone();
        let app = Router::new().route(
            "/users/{id}",
            get(move |matched: MatchedPath| async move {
                let label = match route_label(&matched) {
                    Route::Interned(route) => route.text,
                    other => panic!("not interned: {other:?}"),
                };
                seen.lock().unwrap().push(label);
            }),
        );
        for id in 0..3 {
            let request = Request::get(format!("/users/{id}"))
                .body(Body::empty())
                .unwrap();
            app.clone().oneshot(request).await.unwrap();
        }
        let labels = labels.lock().unwrap();
        assert_eq!(labels.len(), 3);
        assert!(labels.iter().all(|l| *l == "/users/{id}"));
        // One copy, however many requests and threads ask.
        assert!(labels.iter().all(|l| std::ptr::eq(*l, labels[0])));
    }
}
