//! Replays over TCP, from parallel clients: a delivery taken once is flagged (or refused)
//! every other time it arrives, under a fresh unsigned id as under its own, exactly as many
//! times as it was sent; of many copies sent at once exactly one is the first; the memory
//! forgets by count and by time, and says so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::{FromRef, State};
use axum::routing::post;
use axum::Router;
use faultline::webhooks::senders::{GitHub, Slack, StandardWebhooks, Stripe};
use faultline::webhooks::{
    Intake, OnRepeat, ReplayKey, ReplayMemory, ReplayStore, Secret, SecretSet, Secrets, Seen,
    Sender, Verified,
};
use faultline::FaultLayer;

use crate::common::Lab;
use crate::server::post_to;
use crate::sign::{hex, hmac, replace, signed, unix, Headers};

const GITHUB_SECRET: &str = "gh-replay-secret";
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STRIPE_SECRETS: [&str; 2] = ["whsec_stripe_new", "whsec_stripe_old"];
const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

const CLIENTS: usize = 16;
/// Distinct deliveries; every client sends each of them once.
const DISTINCT: usize = 10;

/// What the handlers saw.
#[derive(Clone, Default)]
struct Tally {
    kept: Arc<AtomicU64>,
    duplicates: Arc<AtomicU64>,
}

#[derive(Clone, FromRef)]
struct App {
    tally: Tally,
    github: Intake<GitHub>,
    standard: Intake<StandardWebhooks>,
    stripe: Intake<Stripe>,
    slack: Intake<Slack>,
}

fn take<K>(tally: &Tally, delivery: Verified<K>) -> &'static str {
    if delivery.is_duplicate() {
        tally.duplicates.fetch_add(1, Ordering::Relaxed);
        "duplicate"
    } else {
        tally.kept.fetch_add(1, Ordering::Relaxed);
        "kept"
    }
}

async fn github(State(tally): State<Tally>, delivery: Verified<GitHub>) -> &'static str {
    take(&tally, delivery)
}
async fn standard(State(t): State<Tally>, delivery: Verified<StandardWebhooks>) -> &'static str {
    take(&t, delivery)
}
async fn stripe(State(tally): State<Tally>, delivery: Verified<Stripe>) -> &'static str {
    take(&tally, delivery)
}
async fn slack(State(tally): State<Tally>, delivery: Verified<Slack>) -> &'static str {
    take(&tally, delivery)
}

fn set(sender: Sender, secrets: &[&str]) -> SecretSet {
    SecretSet::new(
        secrets
            .iter()
            .map(|s| Secret::for_sender(sender, s).unwrap()),
    )
    .unwrap()
}

fn remember<K: Secrets>(
    intake: Intake<K>,
    (memory, on_repeat, window): (ReplayMemory, OnRepeat, Duration),
) -> Intake<K> {
    intake.replays(memory, on_repeat).replay_window(window)
}

/// A receiver of four senders in one state, each intake remembering in `memory` with
/// `on_repeat` for `window`.
async fn start(memory: &ReplayMemory, on_repeat: OnRepeat, window: Duration) -> (Lab, Tally) {
    let remembering = |window| (memory.clone(), on_repeat, window);
    let app = App {
        tally: Tally::default(),
        github: remember(
            Intake::new(GitHub::new(set(Sender::GitHub, &[GITHUB_SECRET])).unwrap()),
            remembering(window),
        ),
        standard: remember(
            Intake::new(
                StandardWebhooks::new(set(Sender::StandardWebhooks, &[STANDARD_SECRET])).unwrap(),
            ),
            remembering(window),
        ),
        stripe: remember(
            Intake::new(Stripe::new(set(Sender::Stripe, &STRIPE_SECRETS)).unwrap()),
            remembering(window),
        ),
        slack: remember(
            Intake::new(Slack::new(set(Sender::Slack, &[SLACK_SECRET])).unwrap()),
            remembering(window),
        ),
    };
    let tally = app.tally.clone();
    let (layer, ledger) = FaultLayer::pair();
    let router = Router::new()
        .route("/hooks/github", post(github))
        .route("/hooks/standard", post(standard))
        .route("/hooks/stripe", post(stripe))
        .route("/hooks/slack", post(slack))
        .with_state(app)
        .layer(layer);
    (Lab::serve(router, ledger).await, tally)
}

/// GitHub delivery `n`, sent under the delivery id `fresh`.
fn github_delivery(n: usize, fresh: &str) -> (Headers, Vec<u8>) {
    let body = format!(r#"{{"delivery":{n}}}"#).into_bytes();
    let mut headers = signed(Sender::GitHub, GITHUB_SECRET, &body, SystemTime::now());
    replace(&mut headers, "x-github-delivery", fresh.to_owned());
    (headers, body)
}

/// Posts GitHub delivery `n` under the id `id` to the receiver at `base`: the status and
/// the answer.
async fn github_post(http: &reqwest::Client, base: &str, n: usize, id: &str) -> (u16, String) {
    let (headers, body) = github_delivery(n, id);
    let mut request = http.post(format!("{base}/hooks/github"));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.body(body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Sends every one of `DISTINCT` GitHub deliveries from each of `CLIENTS` clients at once,
/// each copy under an id of its own, again after each 503 `webhook-in-progress` (a copy in
/// hand): the statuses and answers of the last tries, counted.
async fn replay_from_every_client(lab: &Lab) -> Vec<(u16, String)> {
    let lab = Arc::new(lab.url(""));
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let base = Arc::clone(&lab);
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut answers = Vec::new();
            for n in 0..DISTINCT {
                loop {
                    let id = format!("id-{client}-{n}");
                    let (status, text) = github_post(&http, &base, n, &id).await;
                    if !(status == 503 && text.contains("webhook-in-progress")) {
                        answers.push((status, text));
                        break;
                    }
                }
            }
            answers
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

/// Answers counted under `webhook-in-progress`.
fn in_progress(snapshot: &faultline::ledger::Snapshot) -> u64 {
    let series = snapshot.series.iter();
    series
        .filter(|s| s.code == "webhook-in-progress" && s.status == 503)
        .map(|s| s.count)
        .sum()
}

fn count(answers: &[(u16, String)], status: u16, text: &str) -> usize {
    answers
        .iter()
        .filter(|(s, t)| *s == status && t.contains(text))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replays_under_fresh_github_ids_are_flagged_exactly_as_often_as_sent() {
    let memory = ReplayMemory::new();
    let (lab, tally) = start(&memory, OnRepeat::Flag, Duration::from_secs(60)).await;
    let answers = replay_from_every_client(&lab).await;
    let repeats = CLIENTS * DISTINCT - DISTINCT;
    assert_eq!(count(&answers, 200, "kept"), DISTINCT);
    assert_eq!(count(&answers, 200, "duplicate"), repeats);
    assert_eq!(tally.kept.load(Ordering::Relaxed), DISTINCT as u64);
    assert_eq!(tally.duplicates.load(Ordering::Relaxed), repeats as u64);
    let snapshot = lab.quiescent().await;
    // Each try beyond one per copy was a copy in hand, answered 503 and counted handled.
    assert_eq!(
        snapshot.started,
        (CLIENTS * DISTINCT) as u64 + snapshot.handled
    );
    assert_eq!(snapshot.ok, (CLIENTS * DISTINCT) as u64);
    assert_eq!(in_progress(&snapshot), snapshot.handled);
    assert_eq!((memory.len(), memory.evicted()), (DISTINCT, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replays_refused_are_409_and_counted_under_their_code_exactly() {
    let memory = ReplayMemory::new();
    let (lab, tally) = start(&memory, OnRepeat::Refuse, Duration::from_secs(60)).await;
    let answers = replay_from_every_client(&lab).await;
    let repeats = CLIENTS * DISTINCT - DISTINCT;
    assert_eq!(count(&answers, 200, "kept"), DISTINCT);
    assert_eq!(
        count(&answers, 409, r#""code":"webhook-replayed""#),
        repeats
    );
    assert_eq!(tally.kept.load(Ordering::Relaxed), DISTINCT as u64);
    assert_eq!(tally.duplicates.load(Ordering::Relaxed), 0);
    let snapshot = lab.quiescent().await;
    let replayed: u64 = snapshot
        .series
        .iter()
        .filter(|s| s.code == "webhook-replayed" && s.status == 409)
        .map(|s| s.count)
        .sum();
    assert_eq!(replayed, repeats as u64);
}

/// Copies of one delivery sent at once: exactly one is handled as the first; each other one
/// is a duplicate, or, while the first is in hand, a 503 `webhook-in-progress` whose retry
/// is a duplicate. The ledger counts every answer exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_many_copies_sent_at_once_exactly_one_is_the_first() {
    const ROUNDS: usize = 8;
    const AT_ONCE: usize = 24;
    let memory = ReplayMemory::new();
    let (lab, tally) = start(&memory, OnRepeat::Flag, Duration::from_secs(60)).await;
    let base = Arc::new(lab.url(""));
    let in_progress = Arc::new(AtomicU64::new(0));
    for round in 0..ROUNDS {
        let barrier = Arc::new(tokio::sync::Barrier::new(AT_ONCE));
        let mut tasks = Vec::new();
        for copy in 0..AT_ONCE {
            let (base, barrier) = (Arc::clone(&base), Arc::clone(&barrier));
            let in_progress = Arc::clone(&in_progress);
            tasks.push(tokio::spawn(async move {
                let client = reqwest::Client::new();
                barrier.wait().await;
                loop {
                    let id = format!("at-once-{copy}");
                    let (status, text) = github_post(&client, &base, 1_000 + round, &id).await;
                    if status == 200 {
                        return text;
                    }
                    assert_eq!(status, 503, "{text}");
                    assert!(text.contains("webhook-in-progress"), "{text}");
                    in_progress.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }));
        }
        let mut firsts = 0;
        for task in tasks {
            firsts += usize::from(task.await.unwrap() == "kept");
        }
        assert_eq!(firsts, 1, "round {round}");
    }
    assert_eq!(tally.kept.load(Ordering::Relaxed), ROUNDS as u64);
    let duplicates = (ROUNDS * (AT_ONCE - 1)) as u64;
    assert_eq!(tally.duplicates.load(Ordering::Relaxed), duplicates);
    let snapshot = lab.quiescent().await;
    let in_progress = in_progress.load(Ordering::Relaxed);
    assert_eq!(snapshot.ok, (ROUNDS * AT_ONCE) as u64);
    assert_eq!(snapshot.started, snapshot.ok + in_progress);
    assert_eq!(snapshot.handled, in_progress);
    assert_eq!(self::in_progress(&snapshot), in_progress);
}

/// Posts GitHub delivery `n` under a fresh id: its answer.
async fn send_github(lab: &Lab, n: usize, id: &str) -> String {
    let (headers, body) = github_delivery(n, id);
    let (status, answer) = post_to(lab, "github", &headers, body).await;
    assert_eq!(status, 200, "{answer}");
    answer.as_str().unwrap().to_owned()
}

#[tokio::test]
async fn past_its_capacity_the_memory_forgets_the_oldest_and_counts_it() {
    let memory = ReplayMemory::with_capacity(4);
    let (lab, _) = start(&memory, OnRepeat::Flag, Duration::from_secs(60)).await;
    for n in 0..6 {
        assert_eq!(send_github(&lab, n, &format!("a{n}")).await, "kept");
    }
    assert_eq!((memory.evicted(), memory.len()), (2, 4));
    assert_eq!(send_github(&lab, 5, "b5").await, "duplicate");
    assert_eq!(send_github(&lab, 2, "b2").await, "duplicate");
    // Forgotten early, so taken again: the gap the count tells of.
    assert_eq!(send_github(&lab, 0, "b0").await, "kept");
    assert_eq!(memory.evicted(), 3);
}

#[tokio::test]
async fn past_its_window_a_delivery_is_forgotten_and_counted_expired() {
    const WINDOW: Duration = Duration::from_millis(300);
    let memory = ReplayMemory::new();
    let (lab, _) = start(&memory, OnRepeat::Flag, WINDOW).await;
    assert_eq!(send_github(&lab, 7, "first").await, "kept");
    assert_eq!(send_github(&lab, 7, "second").await, "duplicate");
    tokio::time::sleep(WINDOW + Duration::from_millis(100)).await;
    assert_eq!(send_github(&lab, 7, "third").await, "kept");
    assert_eq!((memory.expired(), memory.evicted()), (1, 0));
}

#[tokio::test]
async fn a_signed_id_is_the_key_and_a_signature_covers_its_timestamp() {
    let memory = ReplayMemory::new();
    let (lab, tally) = start(&memory, OnRepeat::Flag, Duration::from_secs(60)).await;
    let now = SystemTime::now();
    let body = br#"{"type":"invoice.paid"}"#;
    // Standard Webhooks: the sender's retry signs the same id at a new time.
    let first = signed(Sender::StandardWebhooks, STANDARD_SECRET, body, now);
    let retry = signed(
        Sender::StandardWebhooks,
        STANDARD_SECRET,
        body,
        now - Duration::from_secs(30),
    );
    let answers = [
        post_to(&lab, "standard", &first, &body[..]).await,
        post_to(&lab, "standard", &retry, &body[..]).await,
    ];
    assert_eq!(answers.map(|(_, a)| a), ["kept", "duplicate"]);
    // Slack: the same bytes again are a duplicate; signed at another second, a new delivery.
    for (at, expected) in [
        (now, "kept"),
        (now, "duplicate"),
        (now - Duration::from_secs(1), "kept"),
    ] {
        let headers = signed(Sender::Slack, SLACK_SECRET, body, at);
        let (status, answer) = post_to(&lab, "slack", &headers, &body[..]).await;
        assert_eq!((status, answer.as_str().unwrap()), (200, expected));
    }
    assert_eq!(tally.kept.load(Ordering::Relaxed), 3);
}

/// Stripe's and Slack's retries sign the same event at a new time: the event id in the
/// signed body makes them the same delivery.
#[tokio::test]
async fn stripe_and_slack_retries_signed_at_a_new_time_are_the_same_delivery() {
    let memory = ReplayMemory::new();
    let (lab, tally) = start(&memory, OnRepeat::Flag, Duration::from_secs(60)).await;
    let now = SystemTime::now();
    let stripe = br#"{"id":"evt_1NvPq2","type":"invoice.paid"}"#;
    let slack = br#"{"type":"event_callback","event_id":"Ev06A2","event":{"type":"message"}}"#;
    for (at, expected) in [(now, "kept"), (now - Duration::from_secs(40), "duplicate")] {
        let headers = stripe_header(&STRIPE_SECRETS[..1], stripe, at);
        let (_, answer) = post_to(&lab, "stripe", &headers, &stripe[..]).await;
        assert_eq!(answer.as_str().unwrap(), expected, "stripe");
        let headers = signed(Sender::Slack, SLACK_SECRET, slack, at);
        let (_, answer) = post_to(&lab, "slack", &headers, &slack[..]).await;
        assert_eq!(answer.as_str().unwrap(), expected, "slack");
    }
    assert_eq!(tally.kept.load(Ordering::Relaxed), 2);
}

/// `Stripe-Signature` over `body` at `at`, one `v1=` per secret of `secrets`.
fn stripe_header(secrets: &[&str], body: &[u8], at: SystemTime) -> Headers {
    let ts = unix(at).to_string();
    let signed = [ts.as_bytes(), b".", body].concat();
    let tags: Vec<String> = secrets
        .iter()
        .map(|s| format!("v1={}", hex(&hmac(s.as_bytes(), &signed))))
        .collect();
    vec![("stripe-signature", format!("t={ts},{}", tags.join(",")))]
}

#[tokio::test]
async fn a_replay_that_lists_other_signatures_of_the_same_bytes_has_the_same_key() {
    let memory = ReplayMemory::new();
    let (lab, tally) = start(&memory, OnRepeat::Refuse, Duration::from_secs(60)).await;
    // No event id: keyed by the signature.
    let body = br#"{"type":"charge.succeeded"}"#;
    let now = SystemTime::now();
    // Signed with both secrets during a roll, then replayed with each one alone.
    let cases = [
        (&STRIPE_SECRETS[..], 200),
        (&STRIPE_SECRETS[1..], 409),
        (&STRIPE_SECRETS[..1], 409),
    ];
    for (secrets, expected) in cases {
        let headers = stripe_header(secrets, body, now);
        let (status, answer) = post_to(&lab, "stripe", &headers, &body[..]).await;
        assert_eq!(status, expected, "{secrets:?}: {answer}");
    }
    assert_eq!(tally.kept.load(Ordering::Relaxed), 1);
}

/// A store that is down.
struct Down;

impl ReplayStore for Down {
    type Error = std::io::Error;

    async fn reserve(&self, _: ReplayKey, _: SystemTime) -> Result<Seen, std::io::Error> {
        Err(std::io::Error::other(
            "replay table at 10.0.0.9 unreachable",
        ))
    }

    async fn confirm(&self, _: ReplayKey, _: SystemTime) -> Result<(), std::io::Error> {
        unreachable!("nothing is reserved")
    }

    async fn release(&self, _: ReplayKey, _: SystemTime) -> Result<(), std::io::Error> {
        unreachable!("nothing is reserved")
    }
}

#[tokio::test]
async fn a_store_that_is_down_is_a_503_that_tells_nothing_of_it() {
    let intake = Intake::new(GitHub::new(set(Sender::GitHub, &[GITHUB_SECRET])).unwrap())
        .replays(Down, OnRepeat::Flag);
    let (layer, ledger) = FaultLayer::pair();
    let router = Router::new()
        .route(
            "/hooks/github",
            post(|delivery: Verified<GitHub>| async move { delivery.body().len().to_string() }),
        )
        .with_state(intake)
        .layer(layer);
    let lab = Lab::serve(router, ledger).await;
    let (headers, body) = github_delivery(1, "down");
    let mut request = reqwest::Client::new().post(lab.url("/hooks/github"));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.body(body).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let retry_after = response.headers().get("retry-after").cloned();
    assert_eq!(retry_after.unwrap(), "5");
    let answer = response.text().await.unwrap();
    assert!(
        answer.contains(r#""code":"webhook-replays-unavailable""#),
        "{answer}"
    );
    assert!(!answer.contains("10.0.0.9"), "{answer}");
}
