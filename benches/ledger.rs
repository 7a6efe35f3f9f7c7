//! The ledger's counters under contention: requests through a `FaultLayer` over a trivial
//! service, driven from one thread and from two at once on the same layer, so that both
//! threads increment the same atomics (and, for failures, the same series table).
//!
//! ```text
//! cargo bench --bench ledger
//! ```

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::sync::Barrier;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use axum::body::Body;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use faultline::{FaultLayer, Ledger};
use futures::FutureExt;
use http::{Request, Response, StatusCode};
use tower::{Layer, Service, ServiceExt};

/// A service that answers at once with an empty body of `status`.
#[derive(Clone, Copy)]
struct Answer(StatusCode);

impl Service<Request<Body>> for Answer {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Body>) -> Self::Future {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = self.0;
        ready(Ok(response))
    }
}

/// One request through the layer. The inner future is ready at once and the body is empty,
/// so the request is counted (started, then its outcome) before the response is dropped.
fn one<S>(service: &S)
where
    S: Service<Request<Body>> + Clone,
    S::Error: std::fmt::Debug,
{
    let response = service
        .clone()
        .oneshot(Request::new(Body::empty()))
        .now_or_never()
        .expect("the trivial service is ready at once");
    drop(response.expect("the layer is infallible"));
}

/// The wall time of `iters` requests split over `threads` threads started together.
fn spread<S>(service: &S, threads: usize, iters: u64) -> Duration
where
    S: Service<Request<Body>> + Clone + Sync,
    S::Error: std::fmt::Debug,
{
    let per_thread = iters.div_ceil(threads as u64);
    let barrier = Barrier::new(threads);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..per_thread {
                        one(service);
                    }
                    start.elapsed()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("worker panicked"))
            .max()
            .unwrap_or_default()
    })
}

fn contention(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger");
    for (outcome, status) in [("ok", StatusCode::OK), ("rejected", StatusCode::NOT_FOUND)] {
        for threads in [1, 2] {
            let (layer, ledger): (FaultLayer, Ledger) = FaultLayer::pair();
            let service = layer.layer(Answer(status));
            group.bench_with_input(
                BenchmarkId::new(outcome, format!("{threads} thread(s)")),
                &threads,
                |b, &threads| b.iter_custom(|iters| spread(&service, threads, iters)),
            );
            let snapshot = ledger.snapshot();
            assert!(snapshot.is_balanced() && snapshot.in_flight == 0);
        }
    }
    group.finish();
}

criterion_group!(benches, contention);
criterion_main!(benches);
