//! Waiting for quiescence: a future that resolves when no request is in flight, for tests
//! and graceful shutdown, at no cost to requests while nobody waits beyond one fence and one
//! read of a word that only waiters write.
//!
//! A waiter registers its waker and raises `armed`, then reads the counters; a request, once
//! its outcome is counted, reads `armed` and wakes the waiters if it is up. A fence on each
//! side between its write and its read makes sure that one of the two sees the other's
//! write: the waiter sees the request finished, or the request sees the waiter and wakes it.
//! No wake-up is lost, and no timer or runtime is needed.
//!
//! Kept by hand: a notifier crate (`event-listener`, tokio's `Notify`) would put a locked
//! instruction or a shared write on the path of every request, where this puts one fence and
//! one read of a word nobody writes while nobody waits. Both fences are load-bearing: the
//! loom model below fails without either of them (`NoFenceInFinished`, `NoFenceInRegister`).
//!
//! The fences make the two sides see each other's word; what the waiter sees of the counts
//! is the counters' own ordering (`counters.rs`): every finish it reads has its start read, so
//! it never reads "nothing in flight" while a request it could know of runs.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::Ledger;
use crate::panic::lock;
use crate::sync::{fence, weakenable, AtomicBool, Mutex, Ordering};

/// The tasks waiting for quiescence of one ledger.
#[derive(Debug, Default)]
pub(super) struct Waiters {
    /// Whether `wakers` holds any: the only word a finishing request reads here.
    armed: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Waiters {
    /// Called once a request's outcome is counted.
    pub(super) fn finished(&self) {
        if weakenable!(NoFenceInFinished: true, weakened: false) {
            fence(Ordering::SeqCst);
        }
        if self.armed.load(Ordering::Relaxed) {
            self.wake_all();
        }
    }

    #[cold]
    fn wake_all(&self) {
        let wakers = {
            let mut wakers = lock(&self.wakers);
            self.armed.store(false, Ordering::Relaxed);
            std::mem::take(&mut *wakers)
        };
        // Outside the lock: a waker may run the task right here.
        for waker in wakers {
            waker.wake();
        }
    }

    fn register(&self, waker: &Waker) {
        {
            let mut wakers = lock(&self.wakers);
            if !wakers.iter().any(|known| known.will_wake(waker)) {
                wakers.push(waker.clone());
            }
            self.armed.store(true, Ordering::Relaxed);
        }
        if weakenable!(NoFenceInRegister: true, weakened: false) {
            fence(Ordering::SeqCst);
        }
    }
}

/// Resolves when the ledger has no request in flight.
pub(super) struct Quiescent {
    pub(super) ledger: Ledger,
}

impl Future for Quiescent {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.ledger.in_flight() == 0 {
            return Poll::Ready(());
        }
        self.ledger.inner.waiters.register(cx.waker());
        if self.ledger.in_flight() == 0 {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use crate::count::ledger::Ledger;
    use crate::outcome::Outcome;
    use crate::request::RouteKey;

    /// Rounds of the race between a waiter and the request that finishes last: a lost
    /// wake-up would leave one waiter waiting for ever.
    const ROUNDS: usize = 2_000;

    /// Far longer than a thread takes to start and finish one request, on a loaded machine.
    const PATIENCE: Duration = Duration::from_secs(5);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_last_request_to_finish_wakes_every_waiter_on_another_thread() {
        let ledger = Ledger::new();
        tokio::time::timeout(Duration::from_secs(1), ledger.quiescent())
            .await
            .expect("nothing in flight: ready at once");
        for _ in 0..ROUNDS {
            ledger.start();
            let waiters = [ledger.quiescent(), ledger.quiescent()];
            let finisher = {
                let ledger = ledger.clone();
                std::thread::spawn(move || ledger.finish(Outcome::Ok, RouteKey::Unmatched))
            };
            for waiter in waiters {
                // Not `timeout`, which polls the waiter once more when its time is up and so
                // would hide a lost wake-up.
                tokio::select! {
                    biased;
                    () = tokio::time::sleep(PATIENCE) => panic!("a wake-up was lost"),
                    () = waiter => {}
                }
            }
            finisher.join().unwrap();
        }
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.ok, snapshot.in_flight), (ROUNDS as u64, 0));
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use loom::sync::Arc;

    use crate::count::ledger::loom_models::LOOM_ROUTES;
    use crate::count::ledger::Ledger;
    use crate::outcome::Outcome;
    use crate::request::RouteKey;
    use crate::stripe;
    use crate::sync::{run_weakened, AtomicBool, Ordering, Weakening};

    /// Two requests in flight, finished on two threads while a task waits for quiescence: the
    /// waiter is woken (a lost wake-up leaves it parked, which loom reports as a deadlock),
    /// and only once both are counted (the snapshot after it shows both, none in flight).
    #[test]
    fn loom_quiescent_wakes_once_nothing_is_in_flight_and_not_before() {
        two_finishers_and_a_waiter();
    }

    /// Without the fence in `Waiters::finished`, the request may read `armed` from before the
    /// waiter raised it while the waiter reads the counters from before the finish: nobody
    /// wakes the waiter.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn loom_quiescent_wakes_weakened_no_fence_in_finished() {
        run_weakened(Weakening::NoFenceInFinished, two_finishers_and_a_waiter);
    }

    /// Without the fence in `Waiters::register`, the same lost wake-up from the waiter's side.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn loom_quiescent_wakes_weakened_no_fence_in_register() {
        run_weakened(Weakening::NoFenceInRegister, two_finishers_and_a_waiter);
    }

    fn two_finishers_and_a_waiter() {
        stripe::model(|| {
            let ledger = Ledger::builder().max_routes(LOOM_ROUTES).build();
            ledger.start();
            ledger.start();
            let finishers: Vec<_> = (0..2)
                .map(|_| {
                    let ledger = ledger.clone();
                    loom::thread::spawn(move || {
                        ledger.finish(Outcome::Ok, RouteKey::Unmatched);
                        stripe::exit();
                    })
                })
                .collect();
            loom::future::block_on(ledger.quiescent());
            let snapshot = ledger.snapshot();
            assert_eq!((snapshot.ok, snapshot.in_flight), (2, 0));
            for finisher in finishers {
                finisher.join().unwrap();
            }
        });
    }

    /// The waiting thread C has a request of its own in flight (the second). The first starts
    /// on thread A, is handed to thread B (the spawn synchronizes as a runtime's queue does),
    /// and B finishes both, the first before the second. However the threads interleave and
    /// whatever each read returns that the memory model allows, C resolves only once both
    /// requests have reached their finish: when it reads the first's finish it reads its start
    /// on A too, so it never counts "nothing in flight" while its own request runs.
    #[test]
    fn loom_quiescent_never_resolves_while_a_request_is_in_flight() {
        finish_on_another_thread_than_the_start();
    }

    /// The finish added with a relaxed `fetch_add` (B writes the shared stripe): C may read
    /// the first request's finish without its start and resolve with its own in flight.
    #[test]
    #[should_panic(expected = "resolved while a request was in flight")]
    fn loom_quiescent_never_resolves_weakened_shared_add_relaxed() {
        run_weakened(
            Weakening::SharedAddRelaxed,
            finish_on_another_thread_than_the_start,
        );
    }

    /// The starts read before the finishes: C may read the first request's start as not yet
    /// made, then its finish, and resolve with its own in flight.
    #[test]
    #[should_panic(expected = "resolved while a request was in flight")]
    fn loom_quiescent_never_resolves_weakened_starts_read_first() {
        run_weakened(
            Weakening::StartsReadFirst,
            finish_on_another_thread_than_the_start,
        );
    }

    fn finish_on_another_thread_than_the_start() {
        stripe::model(|| {
            let ledger = Ledger::builder().max_routes(LOOM_ROUTES).build();
            // Set by B just before it counts each finish: what C may rely on once it resolved.
            let reached = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
            ledger.start();
            let a = {
                let (ledger, reached) = (ledger.clone(), reached.clone());
                loom::thread::spawn(move || {
                    ledger.start();
                    let b = loom::thread::spawn(move || {
                        for request in &*reached {
                            request.store(true, Ordering::Relaxed);
                            ledger.finish(Outcome::Ok, RouteKey::Unmatched);
                        }
                        stripe::exit();
                    });
                    stripe::exit();
                    b
                })
            };
            loom::future::block_on(ledger.quiescent());
            let done = reached.iter().all(|r| r.load(Ordering::Relaxed));
            assert!(done, "resolved while a request was in flight");
            a.join().unwrap().join().unwrap();
            let snapshot = ledger.snapshot();
            assert_eq!(
                (snapshot.started, snapshot.ok, snapshot.in_flight),
                (2, 2, 0)
            );
        });
    }
}
