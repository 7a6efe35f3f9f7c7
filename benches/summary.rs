//! The cost of the whole failure path through the public API, on the failure lab's routes: a
//! huge error (`/huge`: a `Display` that would write 10 MB, a `source()` chain 10,000 deep)
//! against a small one of the same type (`/small`), with `/ok` and `/panic` for scale.
//!
//! ```text
//! cargo bench --bench summary
//! cargo bench --bench summary -- --warm-up-time 1 --measurement-time 2
//! ```
//!
//! After criterion's groups it prints `huge/small ratio: R` from its own timing, so the figure
//! is there whatever criterion options the run was given. The summaries are bounded before
//! the work, so R should stay close to 1.

use std::hint::black_box;
use std::time::{Duration, Instant};

use axum::body::{to_bytes, Body, Bytes};
use axum::http::{Request, StatusCode};
use axum::Router;
use criterion::Criterion;
use tokio::runtime::Runtime;
use tower::ServiceExt;

/// Requests per route in each round of the ratio measurement.
const RATIO_ITERATIONS: u32 = 20_000;
/// Rounds of the ratio measurement, alternating `/small` and `/huge`.
const RATIO_ROUNDS: usize = 7;

/// Sends `GET path` through `app` and reads the whole response body.
fn send(runtime: &Runtime, app: &Router, path: &'static str) -> (StatusCode, Bytes) {
    runtime.block_on(async {
        let request = Request::get(path)
            .body(Body::empty())
            .expect("a valid request");
        let response = app.clone().oneshot(request).await.expect("infallible");
        let status = response.status();
        let body = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("a complete body");
        (status, body)
    })
}

/// Checks once, outside any measurement, that every route answers what it should.
fn check_routes(runtime: &Runtime, app: &Router) {
    let (status, body) = send(runtime, app, "/ok");
    assert_eq!((status, &body[..]), (StatusCode::OK, &b"ok"[..]));
    for path in ["/small", "/huge", "/panic"] {
        let (status, body) = send(runtime, app, path);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert!(
            body.len() <= faultline::limits::DEFAULT_MAX_BODY_BYTES,
            "{path}: {} bytes",
            body.len()
        );
        assert!(body.starts_with(b"{"), "{path}: not a problem body");
    }
}

fn bench_failure_paths(c: &mut Criterion, runtime: &Runtime, app: &Router) {
    let mut group = c.benchmark_group("failure_path");
    for path in ["/ok", "/small", "/huge"] {
        group.bench_function(path.trim_start_matches('/'), |b| {
            b.iter(|| black_box(send(runtime, app, black_box(path))))
        });
    }
    group.bench_function("panic", |b| {
        b.iter(|| black_box(send(runtime, app, black_box("/panic"))))
    });
    group.finish();
}

/// The time per request of `iterations` requests to `path`.
fn time_per_request(
    runtime: &Runtime,
    app: &Router,
    path: &'static str,
    iterations: u32,
) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(send(runtime, app, black_box(path)));
    }
    start.elapsed() / iterations
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Times `/small` and `/huge` in alternating rounds and prints the ratio of their medians.
fn print_ratio(runtime: &Runtime, app: &Router, iterations: u32, rounds: usize) {
    let mut small_times = Vec::with_capacity(rounds);
    let mut huge_times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        // Alternate which goes first, so neither always runs on a warmer cache.
        if round % 2 == 0 {
            small_times.push(time_per_request(runtime, app, "/small", iterations));
            huge_times.push(time_per_request(runtime, app, "/huge", iterations));
        } else {
            huge_times.push(time_per_request(runtime, app, "/huge", iterations));
            small_times.push(time_per_request(runtime, app, "/small", iterations));
        }
    }
    let small = median(small_times);
    let huge = median(huge_times);
    println!(
        "small: {:.2} µs/request, huge: {:.2} µs/request (median over {rounds} x {iterations} requests)",
        small.as_secs_f64() * 1e6,
        huge.as_secs_f64() * 1e6,
    );
    println!(
        "huge/small ratio: {:.2}",
        huge.as_secs_f64() / small.as_secs_f64()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    // As a service deploys it: caught panics are recorded for the report, not printed, so
    // neither stderr nor the RUST_BACKTRACE this machine's shell exports is measured.
    faultline::install_panic_hook();
    let (app, _ledger) = failure_lab::app();
    check_routes(&runtime, &app);

    let mut criterion = Criterion::default().configure_from_args();
    bench_failure_paths(&mut criterion, &runtime, &app);
    criterion.final_summary();

    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|arg| arg == "--list") {
        return;
    }
    // `cargo bench` passes `--bench`; without it (`cargo test --benches`) criterion only runs
    // each benchmark once, and a short ratio run is enough to check that it works.
    if args.iter().any(|arg| arg == "--bench") {
        print_ratio(&runtime, &app, RATIO_ITERATIONS, RATIO_ROUNDS);
    } else {
        print_ratio(&runtime, &app, 100, 1);
    }
}
