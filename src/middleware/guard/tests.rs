//! The guard's own tests: records reused per thread, and a panic in a failure's tally.

use super::*;
use crate::config::Config;
use crate::count::Ledger;
use crate::middleware::shared::{Bridges, Shared};

fn guard(handle: &Arc<StripeHandle>) -> RequestGuard {
    let request = Request::get("/hook").body(()).unwrap();
    RequestGuard::start(handle.clone(), &request)
}

fn address(guard: &RequestGuard) -> *const RecordSpace {
    &**guard.space.as_ref().unwrap()
}

#[test]
fn records_are_reused_per_thread_up_to_the_cap_and_every_request_is_counted() {
    let ledger = Ledger::new();
    let handles = Shared::new(Config::default(), ledger.clone(), Bridges::default()).into_handles();
    let handle = &handles[0];
    // A settled guard gives its record back: the next request on this thread reuses it.
    let mut first = guard(handle);
    let reused = address(&first);
    first.settle_ok();
    drop(first);
    let second = guard(handle);
    assert_eq!(address(&second), reused);
    // Unsettled: counted as cancelled, and its record given back too.
    drop(second);
    // More guards alive at once than spares: every record past the cap is freed.
    let many: Vec<RequestGuard> = (0..SPARE_RECORDS * 2).map(|_| guard(handle)).collect();
    drop(many);
    assert_eq!(SPARE.with(|spare| spare.borrow().len()), SPARE_RECORDS);
    let s = ledger.snapshot();
    assert_eq!(s.started, 2 + 2 * SPARE_RECORDS as u64);
    assert_eq!(s.outcome(Outcome::Ok), 1);
    assert_eq!(s.outcome(Outcome::Cancelled), 1 + 2 * SPARE_RECORDS as u64);
    assert_eq!((s.finished(), s.in_flight), (s.started, 0));
}

/// A router whose one route answers a handled 502, behind a layer, and its ledger.
fn failing_app() -> (axum::Router, Ledger) {
    let (layer, ledger) = crate::FaultLayer::pair();
    let down = || async {
        Err::<(), _>(crate::Error::new(
            StatusCode::BAD_GATEWAY,
            "upstream",
            "down",
        ))
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::get(down))
        .layer(layer);
    (app, ledger)
}

/// The status `app` answers one request with, run on this thread (where the switch of
/// the tally is set); `None` if the request unwound instead.
fn send(runtime: &tokio::runtime::Runtime, app: &axum::Router) -> Option<StatusCode> {
    use tower::ServiceExt;
    let request = Request::get("/hook")
        .body(axum::body::Body::empty())
        .unwrap();
    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(app.clone().oneshot(request)).unwrap()
    }));
    answered.ok().map(|response| response.status())
}

/// A handled failure whose tally panics (with its stripe's lock held, so the lock is
/// poisoned too) is still answered and counted once; so is a cancellation whose tally
/// panics as its guard drops; and the next failure on the thread is tallied whole.
#[test]
fn a_panic_in_the_tally_of_a_failure_still_counts_the_request_once() {
    use crate::count::TALLY_PANICS;

    let (app, ledger) = failing_app();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    TALLY_PANICS.with(|armed| armed.set(true));
    let first = send(&runtime, &app);
    let s = ledger.snapshot();
    assert_eq!(
        (s.started, s.handled, s.in_flight),
        (1, 1, 0),
        "the request whose tally panicked"
    );
    assert_eq!(
        first,
        Some(StatusCode::BAD_GATEWAY),
        "its answer still goes out"
    );

    let handles = Shared::new(Config::default(), ledger.clone(), Bridges::default()).into_handles();
    TALLY_PANICS.with(|armed| armed.set(true));
    let handle = &handles[0];
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(guard(handle))));
    let s = ledger.snapshot();
    assert_eq!(
        (s.started, s.cancelled, s.in_flight),
        (2, 1, 0),
        "the cancellation whose tally panicked"
    );
    assert!(dropped.is_ok(), "the panic did not leave the guard's drop");

    assert_eq!(send(&runtime, &app), Some(StatusCode::BAD_GATEWAY));
    let s = ledger.snapshot();
    assert_eq!(
        (s.started, s.handled, s.cancelled, s.in_flight),
        (3, 2, 1, 0)
    );
    assert_eq!(s.finished(), s.started);
    // The two panicked tallies stopped before flood control and count suppressed; the
    // third failure was judged, behind the lock the panics poisoned.
    assert_eq!(s.reported + s.suppressed, 3);
    assert!(s.suppressed >= 2, "{} suppressed", s.suppressed);
}
