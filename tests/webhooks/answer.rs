//! The replay guard decides on the answer, over TCP: a delivery is taken only when it was
//! answered 2xx. A retry after a 5xx, a panic, a cancelled request or a node that died
//! holding the key is handled anew, in both modes; a copy that arrives while the first is in
//! hand is answered 503 `webhook-in-progress`. Each rule has its plant, a store that breaks
//! it, and the scenario that holds with `ReplayMemory` fails with the plant.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use faultline::webhooks::senders::GitHub;
use faultline::webhooks::{
    Delivery, Intake, Keys, OnRepeat, ReplayKey, ReplayMemory, ReplayStore, SecretSet, Seen,
    Sender, Verified,
};
use faultline::FaultLayer;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

use crate::common::Lab;
use crate::sign::{replace, signed, Headers};

const SECRET: &str = "gh-answer-secret";
/// The lease of the scenarios that let it run out: short, so that the test is.
const SHORT_LEASE: Duration = Duration::from_millis(300);

/// What the handler does with the next delivery it is not told is a duplicate.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// Answers 503, as a handler whose database is down.
    Fail,
    Panic,
    /// Waits until told to go on, then keeps it.
    Hang,
    Keep,
}

#[derive(Clone, Default)]
struct Script {
    acts: Arc<Mutex<VecDeque<Act>>>,
    kept: Arc<AtomicU64>,
    duplicates: Arc<AtomicU64>,
    entered: Arc<Notify>,
    go_on: Arc<Notify>,
}

impl Script {
    fn then(self, acts: &[Act]) -> Self {
        self.acts.lock().unwrap().extend(acts);
        self
    }

    fn counts(&self) -> (u64, u64) {
        let kept = self.kept.load(Ordering::Relaxed);
        (kept, self.duplicates.load(Ordering::Relaxed))
    }
}

#[derive(Clone, FromRef)]
struct App {
    script: Script,
    github: Intake<GitHub>,
}

async fn github(
    State(script): State<Script>,
    delivery: Verified<GitHub>,
) -> (StatusCode, &'static str) {
    if delivery.is_duplicate() {
        script.duplicates.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::OK, "duplicate");
    }
    let act = script.acts.lock().unwrap().pop_front().unwrap_or(Act::Keep);
    match act {
        Act::Fail => return (StatusCode::SERVICE_UNAVAILABLE, "database down"),
        Act::Panic => panic!("the handler's bug"),
        Act::Hang => {
            script.entered.notify_one();
            script.go_on.notified().await;
        }
        Act::Keep => {}
    }
    script.kept.fetch_add(1, Ordering::Relaxed);
    (StatusCode::OK, "kept")
}

fn keys() -> Keys {
    Keys::new(Sender::GitHub, SecretSet::one(SECRET).unwrap()).unwrap()
}

/// A receiver whose intake remembers in `store` with `on_repeat`, its lease `lease`.
async fn start(
    store: impl ReplayStore,
    on_repeat: OnRepeat,
    lease: Duration,
    script: Script,
) -> Lab {
    let intake = Intake::new(GitHub::new(SecretSet::one(SECRET).unwrap()).unwrap())
        .replays(store, on_repeat)
        .replay_lease(lease);
    let (layer, ledger) = FaultLayer::pair();
    let router = Router::new()
        .route("/hooks/github", post(github))
        .with_state(App {
            script,
            github: intake,
        })
        .layer(layer);
    Lab::serve(router, ledger).await
}

/// A receiver remembering in a memory of its own, flagging repeats.
async fn in_memory(script: Script) -> Lab {
    let minute = Duration::from_secs(60);
    start(ReplayMemory::new(), OnRepeat::Flag, minute, script).await
}

/// The one delivery of these tests, under the unsigned id `id`.
fn delivery(id: &str) -> (Headers, Vec<u8>) {
    let body = br#"{"ref":"refs/heads/main","after":"c0ffee"}"#.to_vec();
    let mut headers = signed(Sender::GitHub, SECRET, &body, SystemTime::now());
    replace(&mut headers, "x-github-delivery", id.to_owned());
    (headers, body)
}

fn key() -> ReplayKey {
    let (headers, body) = delivery("any");
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(name, value.parse().unwrap());
    }
    let verified = Delivery::verify(&keys(), &map, body.into(), SystemTime::now()).unwrap();
    ReplayKey::of(&verified)
}

/// Sends the delivery under `id`: its status and answer.
async fn send(lab: &Lab, id: &str) -> (u16, String) {
    let response = post_delivery(lab, id).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Posts the delivery under `id`: the response.
async fn post_delivery(lab: &Lab, id: &str) -> reqwest::Response {
    let (headers, body) = delivery(id);
    let mut request = reqwest::Client::new().post(lab.url("/hooks/github"));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    request.body(body).send().await.unwrap()
}

/// How a first handling ends without a 2xx.
#[derive(Clone, Copy, Debug)]
enum Failure {
    Status,
    Panic,
    Cancel,
}

/// The delivery's first handling ends in `failure`; the sender's retry, under a fresh id,
/// must be handled anew and kept, and a third copy is then a repeat.
async fn a_retry_after(
    store: impl ReplayStore,
    on_repeat: OnRepeat,
    failure: Failure,
) -> Result<(), String> {
    let act = match failure {
        Failure::Status => Act::Fail,
        Failure::Panic => Act::Panic,
        Failure::Cancel => Act::Hang,
    };
    let script = Script::default().then(&[act]);
    let lab = start(store, on_repeat, Duration::from_secs(60), script.clone()).await;
    match failure {
        Failure::Status => assert_eq!(send(&lab, "first").await.0, 503),
        Failure::Panic => assert_eq!(send(&lab, "first").await.0, 500),
        Failure::Cancel => cancel(&lab, &script).await,
    }
    let retry = send(&lab, "retry").await;
    if retry != (200, "kept".to_owned()) {
        return Err(format!(
            "the retry after {failure:?} was answered {retry:?}"
        ));
    }
    let repeat = send(&lab, "replay").await;
    let expected = match on_repeat {
        OnRepeat::Flag => 200,
        OnRepeat::Refuse => 409,
    };
    assert_eq!(repeat.0, expected, "{repeat:?}");
    let flagged = u64::from(on_repeat == OnRepeat::Flag);
    assert_eq!(script.counts(), (1, flagged));
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.started, 3);
    Ok(())
}

/// Sends the delivery over a bare connection, waits until the handler holds it, and hangs
/// up: the server drops the request's future, and the ledger counts it cancelled.
async fn cancel(lab: &Lab, script: &Script) {
    let (headers, body) = delivery("cancelled");
    let mut request = format!(
        "POST /hooks/github HTTP/1.1\r\nhost: lab\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut stream = tokio::net::TcpStream::connect(lab.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(&body).await.unwrap();
    script.entered.notified().await;
    drop(stream);
    lab.wait_for(|snapshot| snapshot.cancelled == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_5xx_a_panic_or_a_cancelled_request_is_kept_in_both_modes() {
    for on_repeat in [OnRepeat::Flag, OnRepeat::Refuse] {
        for failure in [Failure::Status, Failure::Panic, Failure::Cancel] {
            let kept = a_retry_after(ReplayMemory::new(), on_repeat, failure).await;
            assert_eq!(kept, Ok(()), "{on_repeat:?}, {failure:?}");
        }
    }
}

/// A node that reserved the key died: nothing settles it, and the lease frees it. Until
/// then a copy is answered 503 `webhook-in-progress`, with `Retry-After`.
async fn a_key_held_by_a_dead_node<S: ReplayStore + Clone>(store: S) -> Result<(), String> {
    let script = Script::default();
    let lab = start(store.clone(), OnRepeat::Flag, SHORT_LEASE, script.clone()).await;
    let lease = SystemTime::now() + SHORT_LEASE;
    let seen = store
        .reserve(key(), lease)
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(seen, Seen::First);
    let held = send(&lab, "while-held").await;
    assert_eq!(held.0, 503, "{held:?}");
    assert!(
        held.1.contains(r#""code":"webhook-in-progress""#),
        "{held:?}"
    );
    tokio::time::sleep(SHORT_LEASE + Duration::from_millis(200)).await;
    let after = send(&lab, "after-the-lease").await;
    if after != (200, "kept".to_owned()) {
        return Err(format!("after the lease: {after:?}"));
    }
    assert_eq!(script.counts(), (1, 0));
    Ok(())
}

#[tokio::test]
async fn a_key_held_by_a_dead_node_is_free_once_its_lease_ends() {
    assert_eq!(a_key_held_by_a_dead_node(ReplayMemory::new()).await, Ok(()));
}

#[tokio::test]
async fn a_copy_in_hand_is_answered_503_with_retry_after_and_its_retry_is_a_repeat() {
    let script = Script::default().then(&[Act::Hang]);
    let lab = Arc::new(in_memory(script.clone()).await);
    let first = tokio::spawn({
        let lab = Arc::clone(&lab);
        async move { send(&lab, "first").await }
    });
    script.entered.notified().await;
    let copy = post_delivery(&lab, "copy").await;
    assert_eq!(copy.status(), 503);
    assert_eq!(copy.headers()["retry-after"], "5");
    let text = copy.text().await.unwrap();
    assert!(text.contains(r#""code":"webhook-in-progress""#), "{text}");
    script.go_on.notify_one();
    assert_eq!(first.await.unwrap(), (200, "kept".to_owned()));
    assert_eq!(
        send(&lab, "copy-again").await,
        (200, "duplicate".to_owned())
    );
    assert_eq!(script.counts(), (1, 1));
}

/// Copies of one delivery from many clients at once, each retried while a copy is in hand,
/// and the first handling fails: exactly one copy is kept, every other one is a duplicate,
/// and the ledger's counts are exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copies_at_once_after_a_failure_are_kept_once_and_counted_exactly() {
    const CLIENTS: usize = 16;
    let script = Script::default().then(&[Act::Fail]);
    let lab = Arc::new(in_memory(script.clone()).await);
    let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS));
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (lab, barrier) = (Arc::clone(&lab), Arc::clone(&barrier));
        clients.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut tries = [0_u64; 3]; // failed, in progress, answered 2xx
            loop {
                let (status, text) = send(&lab, &format!("client-{client}")).await;
                match status {
                    200 => return (tries, text),
                    503 if text.contains("webhook-in-progress") => tries[1] += 1,
                    503 => tries[0] += 1,
                    _ => panic!("{status}: {text}"),
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }));
    }
    let (mut failed, mut in_progress, mut kept) = (0, 0, 0);
    for client in clients {
        let (tries, text) = client.await.unwrap();
        failed += tries[0];
        in_progress += tries[1];
        kept += u64::from(text == "kept");
    }
    assert_eq!((failed, kept), (1, 1));
    assert_eq!(script.counts(), (1, CLIENTS as u64 - 1));
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.ok, CLIENTS as u64);
    // The handler's 503 is an answer without a fault: rejected; the copies in hand, handled.
    assert_eq!((snapshot.rejected, snapshot.handled), (failed, in_progress));
    assert_eq!(snapshot.started, CLIENTS as u64 + failed + in_progress);
}

#[tokio::test]
async fn without_a_fault_layer_the_guard_refuses_and_keeps_nothing_reserved() {
    let memory = ReplayMemory::new();
    let intake = Intake::new(GitHub::new(SecretSet::one(SECRET).unwrap()).unwrap())
        .replays(memory.clone(), OnRepeat::Flag);
    let script = Script::default();
    let router = Router::new()
        .route("/hooks/github", post(github))
        .with_state(App {
            script: script.clone(),
            github: intake,
        });
    let lab = Lab::serve(router, faultline::Ledger::new()).await;
    let (status, text) = send(&lab, "unguarded").await;
    // No layer renders the refusal: its status is all that leaves.
    assert_eq!(status, 500, "{text}");
    assert_eq!((script.counts(), memory.len()), ((0, 0), 0));
}

// The plants: stores that break one rule each, and the scenario that catches it.

/// Confirms a key as soon as it is reserved: taken before the answer, as the guard once was.
#[derive(Clone, Default)]
struct ConfirmedAtOnce(ReplayMemory);

/// Never releases: a key of a delivery answered otherwise stays held until its lease ends.
#[derive(Clone, Default)]
struct ReleaseForgotten(ReplayMemory);

/// Holds a key for an hour whatever lease it is given: a dead node's key is never freed in
/// time.
#[derive(Clone, Default)]
struct LeaseIgnored(ReplayMemory);

const AN_HOUR: Duration = Duration::from_secs(3_600);

impl ReplayStore for ConfirmedAtOnce {
    type Error = std::convert::Infallible;

    async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, Self::Error> {
        let seen = self.0.reserve(key, lease).await?;
        if seen == Seen::First {
            self.0.confirm(key, lease + AN_HOUR).await?;
        }
        Ok(seen)
    }
    async fn confirm(&self, key: ReplayKey, until: SystemTime) -> Result<(), Self::Error> {
        self.0.confirm(key, until).await
    }
    async fn release(&self, key: ReplayKey, lease: SystemTime) -> Result<(), Self::Error> {
        self.0.release(key, lease).await
    }
}

impl ReplayStore for ReleaseForgotten {
    type Error = std::convert::Infallible;

    async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, Self::Error> {
        self.0.reserve(key, lease).await
    }
    async fn confirm(&self, key: ReplayKey, until: SystemTime) -> Result<(), Self::Error> {
        self.0.confirm(key, until).await
    }
    async fn release(&self, _: ReplayKey, _: SystemTime) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl ReplayStore for LeaseIgnored {
    type Error = std::convert::Infallible;

    async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, Self::Error> {
        self.0.reserve(key, lease + AN_HOUR).await
    }
    async fn confirm(&self, key: ReplayKey, until: SystemTime) -> Result<(), Self::Error> {
        self.0.confirm(key, until).await
    }
    async fn release(&self, key: ReplayKey, lease: SystemTime) -> Result<(), Self::Error> {
        self.0.release(key, lease + AN_HOUR).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_planted_store_fails_the_scenario_of_its_rule() {
    for on_repeat in [OnRepeat::Flag, OnRepeat::Refuse] {
        let early = a_retry_after(ConfirmedAtOnce::default(), on_repeat, Failure::Status).await;
        assert!(
            early.is_err(),
            "confirmed before the answer, {on_repeat:?}: {early:?}"
        );
        for failure in [Failure::Status, Failure::Panic, Failure::Cancel] {
            let kept = a_retry_after(ReleaseForgotten::default(), on_repeat, failure).await;
            assert!(
                kept.is_err(),
                "release forgotten, {on_repeat:?}, {failure:?}"
            );
        }
    }
    let held = a_key_held_by_a_dead_node(LeaseIgnored::default()).await;
    assert!(held.is_err(), "lease ignored: {held:?}");
}

/// Reserves in memory, and fails every confirm and release as a store that went down
/// after the reservation.
#[derive(Clone, Default)]
struct SettleFails(ReplayMemory);

/// The error `SettleFails` gives, to be looked for in the reports.
const SETTLE_ERROR: &str = "replay table at 10.0.0.7 went away";

impl ReplayStore for SettleFails {
    type Error = std::io::Error;

    async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, Self::Error> {
        self.0
            .reserve(key, lease)
            .await
            .map_err(|never| match never {})
    }
    async fn confirm(&self, _: ReplayKey, _: SystemTime) -> Result<(), Self::Error> {
        Err(std::io::Error::other(SETTLE_ERROR))
    }
    async fn release(&self, _: ReplayKey, _: SystemTime) -> Result<(), Self::Error> {
        Err(std::io::Error::other(SETTLE_ERROR))
    }
}

/// The report's line of the store's failure to `settle` (confirm or release), if any.
fn settle_report(settle: &str) -> Option<String> {
    let wanted = format!("could not {settle} a delivery's key");
    let text = crate::load::reports().text();
    text.lines()
        .find(|line| line.contains(&wanted))
        .map(str::to_owned)
}

/// A store that cannot settle a key is reported, at once and as a warning, with its
/// error and never the delivery's secret; the answer is the handler's.
#[tokio::test]
async fn a_store_that_cannot_settle_a_key_is_reported() {
    crate::load::reports();
    for (act, status, settle) in [(Act::Keep, 200, "confirm"), (Act::Fail, 503, "release")] {
        let script = Script::default().then(&[act]);
        let minute = Duration::from_secs(60);
        let lab = start(SettleFails::default(), OnRepeat::Flag, minute, script).await;
        assert_eq!(send(&lab, "settle").await.0, status, "{settle}");
        let line = settle_report(settle).unwrap_or_else(|| panic!("no report of the {settle}"));
        assert!(line.contains("WARN"), "{line}");
        assert!(line.contains(SETTLE_ERROR), "{line}");
        assert!(!line.contains(SECRET), "{line}");
    }
}
