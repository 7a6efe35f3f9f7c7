//! The hand-over of the threads' tallies on read, under loom: counts in stripes, failures in
//! each thread's own tables, gathered by whoever reads.

use http::{HeaderName, Request, StatusCode};

use super::*;

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
///
/// Fails, as it should, when the end of the requests is observed through a relaxed flag in
/// place of the joins (no happens-before: the read may miss the last adds), which is why
/// exactness is promised at quiescence only.
#[test]
fn loom_a_read_gathers_every_threads_tallies_exactly_at_quiescence() {
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
        assert_eq!(after.series[0].count, 2);
        assert_eq!(after.reported + after.suppressed, 2);
        assert_eq!(after.reported, 1, "one event per window");
    });
}

/// Two threads see a new minute at once (a failure's or a read's `observe_minute`): the
/// sample of that minute is taken, once, and holds what was counted before it. A window
/// ending a minute later then starts from it, and sees no request.
///
/// Fails, as it should, when the sample can be lost: a compare-exchange against the wrong
/// value leaves the new minute unsampled, and the window reaches back to the ledger's start.
#[test]
fn loom_a_new_minute_is_sampled_once_with_the_totals_before_it() {
    stripe::model(|| {
        let ledger = Ledger::builder().max_routes(LOOM_ROUTES).build();
        ledger.start();
        ledger.finish(Outcome::Ok, meta().route_key());
        let start = budget::minute_now();
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
        assert_eq!(history.newest(), start + 1);
        let minute = std::time::Duration::from_secs(60);
        let since_start = history.budget(&current, 0.999, minute, start + 1);
        assert_eq!(since_start.iter().map(|b| b.requests).sum::<u64>(), 1);
        let since_sample = history.budget(&current, 0.999, minute, start + 2);
        assert!(since_sample.is_empty(), "{since_sample:?}");
    });
}

/// Long enough that the model's runs stay in one flood-control window.
const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

/// Route slots of a model's ledger: every per-route cell is a loom atomic that a read visits,
/// and the default 64 routes (66 slots of 7 outcomes per stripe) take a model past loom's
/// bound on branches. The protocols checked here do not depend on how many routes there are.
pub(super) const LOOM_ROUTES: usize = 1;
