//! Many threads on one service, without a runtime: every handler of the apps driven this way
//! answers, or waits for ever, at its first poll.

use std::sync::Barrier;
use std::thread;

use axum::body::{to_bytes, Body};
use axum::Router;
use futures::FutureExt;
use http::Request;
use tower::ServiceExt;

/// Runs `work(t)` on `threads` threads released together, and returns what each returned.
pub fn hammer<T: Send>(threads: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(threads);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    barrier.wait();
                    work(t)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

/// One request from this thread, its body read to the end: the status, and whether the body
/// was whole; `None` for a request still waiting after its first poll, which is dropped then,
/// as when a client goes away.
pub fn send(app: &Router, path: &str) -> Option<(u16, bool)> {
    let request = Request::get(path).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(request).now_or_never()?.unwrap();
    let status = response.status().as_u16();
    let body = to_bytes(response.into_body(), usize::MAX)
        .now_or_never()
        .expect("the bodies here are ready at once");
    Some((status, body.is_ok()))
}
