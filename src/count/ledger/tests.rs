use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderName, Request, StatusCode};

use super::*;
use crate::config::{ReportLevels, ReportLimits};
use crate::panic::PanicSite;

mod groups;

/// Collects what a fmt subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn subscriber(&self) -> impl tracing::Subscriber {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish()
    }
}

fn meta() -> RequestMeta {
    let request = Request::get("/hook").body(()).unwrap();
    RequestMeta::capture(&request, &HeaderName::from_static("x-request-id"))
}

fn summary(code: &'static str, message: &str, line: Option<u32>) -> Summary {
    let mut summary = Summary::cancelled();
    summary.outcome = Outcome::Handled;
    summary.status = StatusCode::UNPROCESSABLE_ENTITY;
    summary.code = code;
    summary.message = message.to_owned();
    summary.site = line.map(|line| PanicSite {
        file: "src/hook.rs".to_owned(),
        line,
    });
    summary
}

fn ledger(per_window: u32, window: Duration) -> Ledger {
    Ledger::with_limits(LedgerLimits {
        reports: ReportLimits {
            per_window,
            window,
            ..ReportLimits::default()
        },
        ..LedgerLimits::default()
    })
}

/// One failure through the ledger, as the guard reports and counts it.
fn fail(ledger: &Ledger, summary: &Summary) {
    ledger.start();
    if let Some(to_report) = ledger.fail(summary, &meta()) {
        let level = ReportLevels::default().of(summary.outcome, summary.status);
        let ToReport {
            fingerprint,
            suppressed_since,
        } = to_report;
        crate::report::emit(
            level,
            summary,
            &meta(),
            "rid",
            fingerprint,
            suppressed_since,
        );
    }
    ledger.finish(summary.outcome, RouteKey::Unmatched);
}

#[test]
fn every_outcome_counts_on_its_own_against_started() {
    let ledger = Ledger::new();
    for &outcome in Outcome::ALL {
        ledger.start();
        ledger.finish(outcome, RouteKey::Unmatched);
    }
    ledger.start();
    let snapshot = ledger.snapshot();
    assert_eq!(snapshot.started, 8);
    assert_eq!(snapshot.in_flight, 1);
    for &outcome in Outcome::ALL {
        assert_eq!(snapshot.outcome(outcome), 1, "{outcome:?}");
    }
    assert_eq!((snapshot.finished(), snapshot.failures()), (7, 6));
    assert!(snapshot.is_consistent());
}

/// The two bugs the check exists for, planted: a finish counted twice, and a finish whose
/// start was never counted. Each leaves more finishes than starts, which the check sees while
/// `in_flight`, floored at zero, reads 0 as if all were well.
#[test]
fn a_finish_counted_twice_or_a_start_lost_fails_the_check() {
    let twice = Ledger::new();
    twice.start();
    twice.start();
    twice.finish(Outcome::Ok, RouteKey::Unmatched);
    assert!(twice.snapshot().is_consistent(), "one of two in flight");
    twice.finish(Outcome::Ok, RouteKey::Unmatched);
    twice.finish(Outcome::Ok, RouteKey::Unmatched);
    let snapshot = twice.snapshot();
    assert_eq!(
        (snapshot.started, snapshot.ok, snapshot.in_flight),
        (2, 3, 0)
    );
    assert!(!snapshot.is_consistent(), "{snapshot:#?}");

    let lost = Ledger::new();
    lost.start();
    lost.finish(Outcome::Handled, RouteKey::Unmatched);
    lost.finish(Outcome::Cancelled, RouteKey::Unmatched);
    let snapshot = lost.snapshot();
    assert_eq!(
        (snapshot.started, snapshot.finished(), snapshot.in_flight),
        (1, 2, 0)
    );
    assert!(!snapshot.is_consistent(), "{snapshot:#?}");
}

#[test]
fn series_past_the_cap_fold_into_one_overflow_series_from_every_thread() {
    let ledger = Ledger::with_limits(LedgerLimits {
        max_series: 3,
        ..LedgerLimits::default()
    });
    // More threads than cores and more label sets than a thread's own table holds, so that
    // tables fill up and hand over while others count.
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for n in 0..(SERIES_PER_THREAD + 10) {
                    let route = format!("/r{n}");
                    let mut failures = lock(&ledger.stripe().0.failures);
                    failures
                        .series
                        .record_local(&route, "c", 400, &ledger.inner.series);
                    failures
                        .series
                        .record_local(&route, "c", 400, &ledger.inner.series);
                }
            });
        }
    });
    let series = ledger.snapshot().series;
    assert_eq!(series.len(), 4);
    assert!(series[..3]
        .iter()
        .all(|s| s.count == 16 && !s.is_overflow()));
    assert!(series[3].is_overflow());
    let total = 8 * 2 * (SERIES_PER_THREAD as u64 + 10);
    assert_eq!(series[3].count, total - 3 * 16);
    assert_eq!(series.iter().map(|s| s.count).sum::<u64>(), total);
    assert_eq!(lock(&ledger.inner.series).index.len(), 3);
}

#[test]
fn exposition_escapes_label_values() {
    let ledger = Ledger::new();
    lock(&ledger.stripe().0.failures).series.record_local(
        "/a\"b\\c\nd",
        "bad-request",
        400,
        &ledger.inner.series,
    );
    let text = ledger.snapshot().to_prometheus();
    assert!(
        text.contains(
            "faultline_errors_total{route=\"/a\\\"b\\\\c\\nd\",code=\"bad-request\",status=\"400\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains("faultline_requests_total{outcome=\"service_error\"} 0"));
    assert!(text.contains("faultline_in_flight 0"));
}

#[test]
fn a_flood_is_held_back_counted_and_summed_up_in_the_next_event() {
    let captured = Captured::default();
    // A window long enough that ten failures fit in one even on a loaded machine.
    const WINDOW: Duration = Duration::from_millis(200);
    let ledger = ledger(3, WINDOW);
    let failure = summary("unsupported-event", "nope", None);
    tracing::subscriber::with_default(captured.subscriber(), || {
        // Start at a window's beginning, so that the ten fall in one window.
        let window = u64::try_from(WINDOW.as_nanos()).unwrap();
        while ledger.inner.reporter.elapsed_nanos() % window > window / 4 {
            std::thread::yield_now();
        }
        for _ in 0..10 {
            fail(&ledger, &failure);
        }
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.reported, snapshot.suppressed), (3, 7));
        std::thread::sleep(WINDOW + Duration::from_millis(10));
        fail(&ledger, &failure);
    });
    let snapshot = ledger.snapshot();
    assert_eq!((snapshot.reported, snapshot.suppressed), (4, 7));
    let lines = captured.lines();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(lines[..3].iter().all(|l| l.contains("fault.suppressed=0")));
    assert!(lines[3].contains("fault.suppressed=7"), "{}", lines[3]);
    assert!(lines[3].contains("INFO"), "{}", lines[3]);
    assert!(
        lines[3].contains("error.type=\"unsupported-event\""),
        "{}",
        lines[3]
    );
}

#[test]
fn one_fingerprint_from_many_threads_writes_its_quota_and_counts_the_rest() {
    let ledger = ledger(5, Duration::from_secs(3600));
    let failure = summary("unsupported-event", "nope", None);
    std::thread::scope(|scope| {
        for _ in 0..16 {
            scope.spawn(|| (0..500).for_each(|_| fail(&ledger, &failure)));
        }
    });
    let snapshot = ledger.snapshot();
    assert_eq!((snapshot.reported, snapshot.suppressed), (5, 8000 - 5));
    assert_eq!((snapshot.handled, snapshot.in_flight), (8000, 0));
    let groups = ledger.groups();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].count, 8000);
}

#[test]
fn fingerprints_are_separate_and_the_tables_stay_bounded() {
    let ledger = Ledger::with_limits(LedgerLimits {
        reports: ReportLimits {
            per_window: 1,
            window: Duration::from_secs(60),
            max_fingerprints: 4,
            max_groups: 4,
        },
        ..LedgerLimits::default()
    });
    // 100 panic sites: each new one is written once, and the tables never pass 4.
    for line in 0..100 {
        let failure = summary("panic", "boom", Some(line));
        fail(&ledger, &failure);
        fail(&ledger, &failure);
        assert!(ledger.groups().len() <= 4);
        assert!(ledger.inner.reporter.fingerprints() <= 4);
    }
    let snapshot = ledger.snapshot();
    assert_eq!((snapshot.reported, snapshot.suppressed), (100, 100));
}
