//! The per-request drop guard: a request's place in the ledger from `call` until its outcome
//! is counted. Dropped before that, it counts the request as cancelled, so no request can
//! leave the layer uncounted.
//!
//! A request counts once per ledger. When one layer (one ledger) wraps both a nested router
//! and the router around it, the outer layer counts the request and the inner one passes it
//! through: while a layer calls or polls its inner service, the thread notes that it counts
//! for its ledger ([`Record::counting`]), and a layer of the same ledger called under that
//! note ([`counted_by`]) takes no guard of its own. A failure it meets that is not yet a
//! response (a service error) goes out to the counting layer as a [`PassedFailure`] summary.

use std::cell::RefCell;
use std::sync::Arc;

use http::{Request, StatusCode};

use crate::config::Config;
use crate::count::ToReport;
use crate::error::{take_waiting, WaitingFault};
use crate::middleware::shared::StripeHandle;
use crate::outcome::Outcome;
use crate::panic::catch;
use crate::report::emit;
use crate::request::{
    take_attached, take_nested_route, AnswerHook, CountingFor, RequestId, RequestMeta, COUNTING,
};
use crate::summary::Summary;

mod nesting;
use nesting::Kept;
pub(crate) use nesting::{counted_by, passing_through, polled_by_a_fault_layer, PassedFailure};

/// One request's place in the ledger, from `call` until its outcome is counted. Dropped
/// before that, it counts the request as cancelled.
///
/// The guard is one pointer: what it keeps of the request lives in a record on the heap, so
/// that the response future and the watched body, which carry the guard and are moved with
/// every step of a request, move eight bytes instead of the record. Records are reused per
/// thread ([`SPARE_RECORDS`]), so a request allocates none in steady state.
#[derive(Debug)]
pub(crate) struct RequestGuard {
    /// Always `Some` until the guard is dropped, when the box goes back to the thread's spares.
    space: Option<Box<RecordSpace>>,
}

/// A record's allocation; `None` while it waits among the spares.
#[derive(Debug)]
struct RecordSpace(Option<Record>);

/// What a guard keeps of its request, and where the request stands; the guard derefs to it.
#[derive(Debug)]
pub(crate) struct Record {
    /// The shared state, through the handle of the thread that started the request.
    shared: Arc<StripeHandle>,
    meta: RequestMeta,
    phase: Phase,
    /// Told the status of the answer's head, if code inside the request asked (a webhook
    /// delivery's replay reservation); dropped with the record otherwise.
    on_answer: Option<Box<dyn AnswerHook>>,
    /// A handler's fault made into a response during a call or poll, with that response's
    /// status, for the layer to render when the response comes ([`crate::error::leave_for_layer`]).
    fault: Option<WaitingFault>,
    /// When the request started, if a metrics bridge records durations.
    #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
    started_at: Option<std::time::Instant>,
    /// The span current at `call`, whose status a failure sets.
    #[cfg(feature = "tracing-opentelemetry")]
    span: crate::export::RequestSpan,
}

/// Record allocations a thread keeps for reuse. A request takes one on the thread that calls
/// the service and gives it back on the thread that ends it, so a runtime's workers trade
/// them back and forth; this many per thread covers the requests a worker has in flight at
/// once in all but floods, when the extra ones are freed.
///
/// Kept by hand: the pool is a thread-local `Vec` of boxes, with no lock-free protocol (a box
/// crosses threads by being moved with its request, as any value does). A pool crate
/// (`sharded-slab`'s `Pool`, `object-pool`) would add a shared structure where this has none;
/// what it must hold is the ledger bench's figure, 0 allocations per successful request.
const SPARE_RECORDS: usize = 64;

thread_local! {
    // The boxes are the point: their allocations are what is kept for reuse.
    #[allow(clippy::vec_box)]
    static SPARE: RefCell<Vec<Box<RecordSpace>>> = const { RefCell::new(Vec::new()) };
}

impl RecordSpace {
    /// An empty space: a spare one of this thread's if any, else a new one.
    fn spare() -> Box<RecordSpace> {
        SPARE
            .try_with(|spare| spare.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| Box::new(RecordSpace(None)))
    }

    /// Empties `space` (dropping the record in place) and keeps it among the spares, if there
    /// is room.
    fn give_back(mut space: Box<RecordSpace>) {
        space.0 = None;
        let _ = SPARE.try_with(|spare| {
            if let Ok(mut spare) = spare.try_borrow_mut() {
                if spare.len() < SPARE_RECORDS {
                    spare.push(space);
                }
            }
        });
    }
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for the inner service's response.
    Waiting,
    /// The head went out and the body is streaming: `ok` once it reaches its end.
    Streaming { status: StatusCode },
    /// Counted.
    Settled,
}

impl RequestGuard {
    /// Counts `request` as started, keeping what a failure of it needs.
    pub(crate) fn start<B>(shared: Arc<StripeHandle>, request: &Request<B>) -> Self {
        shared.ledger.start();
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &shared.bridges.metrics {
            metrics.start();
        }
        // Written into its allocation, not moved there.
        let mut space = RecordSpace::spare();
        space.0 = Some(Record {
            #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
            started_at: shared.bridges.time_requests().then(std::time::Instant::now),
            #[cfg(feature = "tracing-opentelemetry")]
            span: crate::export::RequestSpan::current(),
            meta: RequestMeta::capture(request, &shared.config.request_id_header),
            shared,
            phase: Phase::Waiting,
            on_answer: None,
            fault: None,
        });
        Self { space: Some(space) }
    }
}

impl std::ops::Deref for RequestGuard {
    type Target = Record;

    fn deref(&self) -> &Record {
        self.space
            .as_ref()
            .and_then(|space| space.0.as_ref())
            .expect("a guard holds its record until dropped")
    }
}

impl std::ops::DerefMut for RequestGuard {
    fn deref_mut(&mut self) -> &mut Record {
        self.space
            .as_mut()
            .and_then(|space| space.0.as_mut())
            .expect("a guard holds its record until dropped")
    }
}

impl Record {
    /// Tells the metrics bridges that are configured how the request ended. `status` is the
    /// one the ledger counts (499 for a cancellation); none was sent for a cancellation.
    #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
    fn record_bridges(&self, outcome: Outcome, status: u16, error_type: Option<&'static str>) {
        let Some(started_at) = self.started_at else {
            return;
        };
        let finished =
            crate::export::Finished::new(started_at, &self.meta, outcome, status, error_type);
        #[cfg(feature = "opentelemetry")]
        if let Some(opentelemetry) = &self.shared.bridges.opentelemetry {
            opentelemetry.record(&finished);
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.shared.bridges.metrics {
            metrics.finish(&finished);
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The shared state, through the handle of the thread that started the request.
    pub(crate) fn handle(&self) -> &Arc<StripeHandle> {
        &self.shared
    }

    /// Runs `f`, a [`catch`] around a call or a poll of the inner service, with the thread
    /// noting that it is inside a request this guard's ledger counts: a layer of the same
    /// ledger called inside passes the request through, and may name its route. Notes nest, for
    /// layers of different ledgers stacked.
    ///
    /// Inlined into the call and the poll: out of line, the inner poll's result (a response)
    /// is copied once more on its way out (ledger-grind's ok row: 1,970 instructions per
    /// request out of line, 1,946 inlined).
    #[inline(always)]
    pub(crate) fn counting<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let note = CountingFor::new(self.shared.ledger.id());
        let outer = COUNTING.try_with(|counting| counting.replace(note));
        // What an outer layer's note has waiting shares the slots this note's would take:
        // kept aside until this note is done.
        let kept = match outer {
            Ok(outer) if outer.has_any_waiting() => Kept::take(outer),
            _ => None,
        };
        let result = f();
        let note = outer.and_then(|outer| COUNTING.try_with(|counting| counting.replace(outer)));
        if let Ok(note) = note {
            if note.has_any_waiting() {
                self.take_left(note);
            }
        }
        if let Some(kept) = kept {
            kept.restore();
        }
        result
    }

    /// Takes what code inside left during the call or poll that returned, out of line: the
    /// poll of a request that left nothing stays as it was.
    #[inline(never)]
    fn take_left(&mut self, note: CountingFor) {
        if note.has_nested_route() {
            if let Some(route) = take_nested_route() {
                self.meta.refine_route(route);
            }
        }
        if note.has_attached_hook() {
            self.attach(take_attached());
        }
        if note.has_waiting_fault() {
            // The latest: the response made last is the one more likely returned.
            if let Some(fault) = take_waiting() {
                self.fault = Some(fault);
            }
        }
    }

    /// The handler's fault waiting for a response of `status`, if one waits.
    pub(crate) fn has_fault_for(&self, status: StatusCode) -> bool {
        self.fault.as_ref().is_some_and(|(_, made)| *made == status)
    }

    /// Takes the handler's fault waiting, for the response that came.
    pub(crate) fn take_fault(&mut self) -> Option<WaitingFault> {
        self.fault.take()
    }

    /// Keeps the hook attached during a poll, out of line: the poll of a request without one
    /// stays as it was.
    #[inline(never)]
    fn attach(&mut self, hook: Option<Box<dyn AnswerHook>>) {
        // One per request: a second would replace the first, which then hears nothing.
        if self.on_answer.is_none() {
            self.on_answer = hook;
        }
    }

    /// The answer's head leaves with `status`: tells the hook attached, if any.
    pub(crate) fn answered(&mut self, status: StatusCode) {
        if let Some(hook) = self.on_answer.take() {
            let _ = catch(move || hook.answered(status));
        }
    }

    /// What was kept of the request.
    pub(crate) fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// The head went out with `status`; the body decides the outcome from here.
    pub(crate) fn streaming(&mut self, status: StatusCode) {
        self.phase = Phase::Streaming { status };
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self.phase {
            Phase::Streaming { status } => status,
            _ => StatusCode::OK,
        }
    }

    pub(crate) fn settle_ok(&mut self) {
        if !matches!(self.phase, Phase::Settled) {
            // Only when a bridge records: no `catch` on the success path otherwise.
            #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
            if self.started_at.is_some() {
                let _ = catch(|| self.record_bridges(Outcome::Ok, self.status().as_u16(), None));
            }
            self.phase = Phase::Settled;
            self.shared
                .ledger
                .finish(Outcome::Ok, self.meta.route_key());
        }
    }

    pub(crate) fn settle_failure(&mut self, summary: &Summary, request_id: &RequestId) {
        if matches!(self.phase, Phase::Settled) {
            return;
        }
        self.phase = Phase::Settled;
        let ledger = &self.shared.ledger;
        // Reported, then counted: the ledger tallies the failure and lets its event through
        // or holds it back, the event is written here, and the end is counted last. The
        // phase is already settled, so a panic in the tally must not skip the count below:
        // the request would stay in flight for good.
        let to_report = match catch(|| ledger.fail(summary, &self.meta)) {
            Ok(to_report) => to_report,
            // Held back, as flood control would: no event, and the failure counts suppressed.
            Err(_) => {
                let _ = catch(|| ledger.unjudged());
                None
            }
        };
        if let Some(ToReport {
            fingerprint,
            suppressed_since,
        }) = to_report
        {
            let level = self
                .config()
                .report_levels
                .of(summary.outcome, summary.status);
            // The event runs the subscriber's code (and the exporter's): a panic there must
            // not keep the request from being counted.
            let _ = catch(|| {
                emit(
                    level,
                    summary,
                    &self.meta,
                    request_id.text(),
                    fingerprint,
                    suppressed_since,
                )
            });
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.shared.bridges.metrics {
            let _ = catch(|| metrics.report(to_report.is_some()));
        }
        #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
        let _ = catch(|| {
            self.record_bridges(summary.outcome, summary.status.as_u16(), Some(summary.code))
        });
        // The subscriber's code runs here too.
        #[cfg(feature = "tracing-opentelemetry")]
        let _ = catch(|| {
            self.span
                .set_status(summary.outcome, summary.status, summary.code)
        });
        ledger.finish_answered(summary.outcome, summary.status, self.meta.route_key());
    }

    /// Settles a failure that has no answer to render (the head is gone or never comes).
    pub(crate) fn settle_unanswered(&mut self, summary: &Summary) {
        self.settle_failure(summary, &self.meta.request_id());
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let record: &mut Record = self;
        match record.phase {
            Phase::Settled => {}
            // A body that was not sent to its end, polled or not, was not delivered: answers
            // that send no body (a HEAD, a 204, a 304) and bodies of length 0 were settled
            // `ok` when the head went out.
            Phase::Waiting | Phase::Streaming { .. } => {
                record.settle_unanswered(&Summary::cancelled())
            }
        }
        if let Some(space) = self.space.take() {
            RecordSpace::give_back(space);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
