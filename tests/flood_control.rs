//! Flood control under contention, seen by a subscriber: many threads failing the same way
//! get at most the configured number of events per window written, and every other failure
//! counted as suppressed, exactly.

mod common;

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use common::threads::{hammer, send};
use faultline::{FaultLayer, Ledger};
use http::StatusCode;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// More OS threads than the cores of the machines this runs on (2), all on one layer.
const THREADS: usize = 16;

/// Every delivery of a misconfigured sender fails the same way: one fingerprint.
async fn hook() -> Result<&'static str, faultline::Error> {
    Err(faultline::Error::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "unsupported-event",
        "event `issues` is not handled here",
    ))
}

/// The failure events seen on the threads that collect into these.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<Seen>>>);

#[derive(Clone, Debug)]
struct Seen {
    fingerprint: String,
    /// `fault.suppressed`: how many of its fingerprint were held back since the last written.
    suppressed_since: u64,
    at: Instant,
}

thread_local! {
    /// Where the failure events of this thread go, if anywhere.
    static COLLECTING: RefCell<Option<Events>> = const { RefCell::new(None) };
}

impl Events {
    /// Runs `work` with the failure events of this thread collected into these.
    ///
    /// One global subscriber hands each thread's events to its collector. A subscriber per
    /// thread (`with_default`) would not see them reliably: while only one exists, tracing
    /// caches whether a call site is enabled from the first thread that reaches it.
    fn collect<T>(&self, work: impl FnOnce() -> T) -> T {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            let subscriber = tracing_subscriber::registry().with(Collector);
            tracing::subscriber::set_global_default(subscriber).unwrap();
        });
        COLLECTING.with(|collecting| *collecting.borrow_mut() = Some(self.clone()));
        let result = work();
        COLLECTING.with(|collecting| *collecting.borrow_mut() = None);
        result
    }

    fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

struct Collector;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Collector {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let at = Instant::now();
        COLLECTING.with(|collecting| {
            let Some(events) = &*collecting.borrow() else {
                return;
            };
            let mut fields = Fields::default();
            event.record(&mut fields);
            // Failure events are the ones that carry a fingerprint.
            if let Some(fingerprint) = fields.fingerprint {
                events.0.lock().unwrap().push(Seen {
                    fingerprint,
                    suppressed_since: fields.suppressed_since,
                    at,
                });
            }
        });
    }
}

#[derive(Default)]
struct Fields {
    fingerprint: Option<String>,
    suppressed_since: u64,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "fault.suppressed" {
            self.suppressed_since = value;
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "fault.fingerprint" {
            self.fingerprint = Some(format!("{value:?}"));
        }
    }
}

/// Sends `/hook` from `threads` threads collecting into `events`, for as long as
/// `more(sent by this thread)` holds; the requests sent in all.
fn flood(
    layer: FaultLayer,
    events: &Events,
    threads: usize,
    more: impl Fn(u64) -> bool + Sync,
) -> u64 {
    let app = Router::new().route("/hook", get(hook)).layer(layer);
    let sent = hammer(threads, |_| {
        events.collect(|| {
            let mut sent = 0;
            while more(sent) {
                assert_eq!(send(&app, "/hook"), Some((422, true)));
                sent += 1;
            }
            sent
        })
    });
    sent.into_iter().sum()
}

/// Checks the ledger after a flood of `total` requests: counted exactly, one group, every
/// event written seen with its fingerprint, and no more suppressions announced than made.
fn assert_flood_counted(ledger: &Ledger, seen: &[Seen], total: u64) {
    let s = ledger.snapshot();
    assert_eq!((s.started, s.handled), (total, total), "{s:#?}");
    assert_eq!((s.finished(), s.in_flight), (total, 0), "{s:#?}");
    assert_eq!(s.reported + s.suppressed, total, "{s:#?}");
    assert_eq!(seen.len() as u64, s.reported, "every event written is seen");
    let groups = ledger.groups();
    assert_eq!(groups.len(), 1, "{groups:#?}");
    assert_eq!(groups[0].count, total);
    assert!(seen.iter().all(|e| e.fingerprint == groups[0].fingerprint));
    let announced: u64 = seen.iter().map(|e| e.suppressed_since).sum();
    assert!(announced <= s.suppressed, "{announced} > {}", s.suppressed);
}

#[test]
fn one_fingerprint_from_sixteen_threads_writes_exactly_its_burst() {
    const BURST: u32 = 5;
    const PER_THREAD: u64 = 500;
    let ledger = Ledger::builder()
        .report_burst(BURST, Duration::from_secs(3600))
        .build();
    let layer = FaultLayer::with_ledger(ledger.clone());
    let events = Events::default();
    let total = flood(layer, &events, THREADS, |sent| sent < PER_THREAD);
    assert_eq!(total, THREADS as u64 * PER_THREAD);
    let seen = events.seen();
    assert_flood_counted(&ledger, &seen, total);
    assert_eq!(seen.len(), BURST as usize, "{seen:#?}");
    let s = ledger.snapshot();
    let burst = u64::from(BURST);
    assert_eq!((s.reported, s.suppressed), (burst, total - burst));
}

#[test]
fn short_windows_never_let_through_more_than_the_budget() {
    const BUDGET: u32 = 3;
    const WINDOW: Duration = Duration::from_millis(50);
    const FLOOD: Duration = Duration::from_millis(300);
    let ledger = Ledger::builder().report_burst(BUDGET, WINDOW).build();
    let layer = FaultLayer::with_ledger(ledger.clone());
    let events = Events::default();
    let start = Instant::now();
    let total = flood(layer, &events, 8, |_| start.elapsed() < FLOOD);
    let elapsed = start.elapsed();
    let seen = events.seen();
    assert_flood_counted(&ledger, &seen, total);

    // Windows may start with a fingerprint's first failure or on a clock's ticks: either way
    // no more than ceil(elapsed / window) of them start after the first.
    let windows = elapsed.as_nanos().div_ceil(WINDOW.as_nanos()) as usize + 1;
    let budget = BUDGET as usize;
    assert!(
        seen.len() <= budget * windows,
        "{} events in {elapsed:?}",
        seen.len()
    );
    // Failures never stopped, so later windows wrote events too.
    assert!(seen.len() > budget, "{} events in {elapsed:?}", seen.len());

    // The same, one window at a time, by when each event was seen. A window-long bin meets
    // at most two windows, and one more if an event is seen up to a window after flood
    // control let it through (the thread may be preempted in between).
    let first = seen.iter().map(|e| e.at).min().unwrap();
    let mut bins = vec![0; windows + 2];
    for event in &seen {
        let bin = (event.at - first).as_nanos() / WINDOW.as_nanos();
        bins[bin as usize] += 1;
    }
    assert!(
        bins.iter().all(|&n| n <= 3 * budget),
        "events per window: {bins:?}"
    );
}
