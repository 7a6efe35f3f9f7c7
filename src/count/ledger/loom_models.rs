//! The hand-over of the threads' tallies on read, under loom: counts in stripes, failures in
//! each thread's own tables, gathered by whoever reads.

use http::{HeaderName, Request, StatusCode};

use super::*;
use crate::sync::{run_weakened, Weakening};

fn meta() -> RequestMeta {
    let request = Request::get("/hook").body(()).unwrap();
    RequestMeta::capture(&request, &HeaderName::from_static("x-request-id"))
}

fn failure() -> Summary {
    let mut summary = Summary::cancelled();
    summary.outcome = Outcome::Handled;
    summary.status = StatusCode::UNPROCESSABLE_ENTITY;
    summary.code = "unsupported-event";
    summary
}

/// Two threads each count a failed request (started, series, flood control, outcome) while
/// a third reads the ledger: that read counts each failure at most once, and once the threads
/// are joined a read is exact: every failure in its series once, one event written for the
/// window, and `reported + suppressed == failures`.
#[test]
fn loom_a_read_gathers_every_threads_tallies_exactly_at_quiescence() {
    two_failures_and_a_read();
}

/// A thread's table that hands its counts over and keeps them: a read during the failures
/// and the read after them both count what the first one gathered.
#[test]
#[should_panic(expected = "each failure in its series once")]
fn loom_a_read_gathers_every_threads_tallies_weakened_hand_over_keeps_counts() {
    run_weakened(Weakening::HandOverKeepsCounts, two_failures_and_a_read);
}

fn two_failures_and_a_read() {
    stripe::model(|| {
        let ledger = Ledger::builder()
            .report_burst(1, DAY)
            .max_routes(LOOM_ROUTES)
            .build();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let ledger = ledger.clone();
                loom::thread::spawn(move || {
                    ledger.start();
                    let failure = failure();
                    ledger.fail(&failure, &meta());
                    ledger.finish(failure.outcome, meta().route_key());
                    stripe::exit();
                })
            })
            .collect();
        let during = ledger.snapshot();
        let in_series: u64 = during.series.iter().map(|s| s.count).sum();
        assert!(during.reported + during.suppressed <= 2 && in_series <= 2);
        for thread in threads {
            thread.join().unwrap();
        }
        let after = ledger.snapshot();
        assert_eq!(
            (after.handled, after.in_flight, after.failures()),
            (2, 0, 2)
        );
        assert_eq!(after.series.len(), 1);
        assert_eq!(after.series[0].count, 2, "each failure in its series once");
        assert_eq!(after.reported + after.suppressed, 2);
        assert_eq!(after.reported, 1, "one event per window");
    });
}

/// Two threads see a new minute at once (a failure's or a read's `observe_minute`): the
/// sample of that minute is taken, once, and holds what was counted before it. A window
/// ending a minute later then starts from it, and sees no request.
#[test]
fn loom_a_new_minute_is_sampled_once_with_the_totals_before_it() {
    two_threads_see_a_new_minute();
}

/// The compare-and-swap made against the new minute instead of the one last read: it never
/// succeeds, the minute goes unsampled, and the history stays at the ledger's start.
#[test]
#[should_panic(expected = "the new minute sampled")]
fn loom_a_new_minute_is_sampled_weakened_compares_wrong_minute() {
    run_weakened(
        Weakening::SampleComparesWrongMinute,
        two_threads_see_a_new_minute,
    );
}

fn two_threads_see_a_new_minute() {
    stripe::model(|| {
        let ledger = Ledger::builder().max_routes(LOOM_ROUTES).build();
        ledger.start();
        ledger.finish(Outcome::Ok, meta().route_key());
        let start = ledger.minute_now();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let ledger = ledger.clone();
                loom::thread::spawn(move || {
                    ledger.observe_minute(start + 1);
                    stripe::exit();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let current = ledger.route_totals();
        let history = lock(&ledger.inner.history);
        assert_eq!(history.newest(), start + 1, "the new minute sampled");
        let minute = std::time::Duration::from_secs(60);
        let since_start = history.budget(&current, 0.999, minute, start + 1);
        assert_eq!(since_start.iter().map(|b| b.requests).sum::<u64>(), 1);
        let since_sample = history.budget(&current, 0.999, minute, start + 2);
        assert!(since_sample.is_empty(), "{since_sample:?}");
    });
}

/// A request starts on thread A and is handed to thread B, which finishes it, while thread C
/// takes a snapshot. A gives its stripe back before the hand-over, so that B owns it and
/// counts the finish with the owner's plain store. Whatever C reads, it never reads the finish
/// without the start: every snapshot is consistent (`finished <= started`).
#[test]
fn loom_a_read_never_sees_a_finish_without_its_start() {
    start_on_a_finish_on_b_read_on_c();
}

/// The owner's plain store relaxed: C may read B's finish and, from A's stripe, no start.
#[test]
#[should_panic(expected = "a finish without its start")]
fn loom_a_read_never_sees_a_finish_weakened_owner_store_relaxed() {
    run_weakened(
        Weakening::OwnerStoreRelaxed,
        start_on_a_finish_on_b_read_on_c,
    );
}

/// The finishes read with relaxed loads: the same, from the reader's side.
#[test]
#[should_panic(expected = "a finish without its start")]
fn loom_a_read_never_sees_a_finish_weakened_finishes_read_relaxed() {
    run_weakened(
        Weakening::FinishesReadRelaxed,
        start_on_a_finish_on_b_read_on_c,
    );
}

fn start_on_a_finish_on_b_read_on_c() {
    stripe::model(|| {
        let ledger = Ledger::builder().max_routes(LOOM_ROUTES).build();
        let a = {
            let ledger = ledger.clone();
            loom::thread::spawn(move || {
                ledger.start();
                stripe::exit();
                loom::thread::spawn(move || {
                    ledger.finish(Outcome::Ok, RouteKey::Unmatched);
                    stripe::exit();
                })
            })
        };
        let c = {
            let ledger = ledger.clone();
            loom::thread::spawn(move || {
                let snapshot = ledger.snapshot();
                assert!(snapshot.is_consistent(), "a finish without its start");
                stripe::exit();
            })
        };
        a.join().unwrap().join().unwrap();
        c.join().unwrap();
        let after = ledger.snapshot();
        assert_eq!((after.started, after.ok, after.in_flight), (1, 1, 0));
    });
}

/// Long enough that the model's runs stay in one flood-control window.
const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

/// Route slots of a model's ledger: every per-route cell is a loom atomic that a read visits,
/// and the default 64 routes (66 slots of 7 outcomes per stripe) take a model past loom's
/// bound on branches. The protocols checked here do not depend on how many routes there are.
pub(super) const LOOM_ROUTES: usize = 1;
