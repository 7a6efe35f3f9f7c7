//! The process-wide route table: every route template a request matched, interned once per
//! process as a `&'static str` with a small dense index, so that keeping a request's route
//! writes no shared reference count and per-route counters are an array.

use std::cell::RefCell;
use std::sync::{Mutex, PoisonError};

use axum::extract::MatchedPath;
use http::Request;
use rustc_hash::FxHashMap;

use crate::limits::MAX_INTERNED_ROUTES;

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
pub(super) enum Route {
    /// No route matched, or the layer sits outside the router.
    Unmatched,
    /// Interned: no reference count to bump.
    Interned(InternedRoute),
    /// Past the interning cap: axum's own shared string.
    Shared(MatchedPath),
}

/// The interned route template of `request`, if a route matched.
pub(crate) fn interned_route<B>(request: &Request<B>) -> Option<InternedRoute> {
    match request.extensions().get::<MatchedPath>().map(route_label) {
        Some(Route::Interned(route)) => Some(route),
        _ => None,
    }
}

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
pub(super) fn route_label(matched: &MatchedPath) -> Route {
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

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
