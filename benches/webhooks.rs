//! What verifying a webhook costs (feature `webhooks`): `Delivery::verify` for GitHub's
//! `sha256=` hex, Standard Webhooks' `v1,` base64 over `id.timestamp.body`, and Stripe's
//! `t=…,v1=…`, beside a hand-written check of the same GitHub header with
//! `hmac::Mac::verify_slice`, over bodies of 1, 16 and 256 KiB.
//!
//! ```text
//! cargo bench --features webhooks --bench webhooks
//! cargo bench --features webhooks --bench webhooks -- --grind ROW KIB N   # for callgrind
//! ```
//!
//! Two rows for the grind alone take a whole delivery through an axum route under the
//! `FaultLayer`, into a handler that takes `Verified`: `github_extractor` with an intake
//! that remembers nothing, and `github_guarded` with one that remembers in a `ReplayMemory`
//! whose window ends at once, so that every delivery is a first one (reserved, then
//! confirmed by its 2xx).
//!
//! After criterion's groups it prints, from its own timing in alternating rounds, each row's
//! nanoseconds per KiB and its ratio to the hand-written row of the same size: verification
//! is one HMAC over the body and no copy of it, so the ratios should stay near 1.
//! `load-scripts/bench/webhooks-grind.sh` counts the same rows' instructions with callgrind.

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::http::{HeaderMap, Request};
use axum::routing::post;
use axum::Router;
use base64::Engine;
use bytes::Bytes;
use criterion::{Criterion, Throughput};
use faultline::webhooks::{Delivery, Keys, Secret, SecretSet, Sender};
use faultline::webhooks::{Intake, OnRepeat, ReplayMemory, Verified};
use faultline::FaultLayer;
use hmac::{KeyInit, Mac};
use http_body_util::BodyExt;
use sha2::Sha256;
use tower::ServiceExt;

/// Body sizes, in KiB: a typical event, a large push, a push near the senders' caps' scale.
const SIZES_KIB: [usize; 3] = [1, 16, 256];
/// Bytes hashed per size in each round of the ratio measurement: enough to take ~10 ms.
const RATIO_BYTES_PER_ROUND: usize = 8 * 1024 * 1024;
/// Rounds of the ratio measurement, the rows alternating their order.
const RATIO_ROUNDS: usize = 7;
/// The rows, the hand-written baseline first.
const ROWS: [&str; 4] = ["hand_verify_slice", "github", "standard_webhooks", "stripe"];

/// The rows of a whole delivery, run by the grind alone (at 1 KiB).
const GRIND_ONLY: [&str; 2] = ["github_extractor", "github_guarded"];

const SECRET: &str = "a webhook secret of thirty-two b";
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

type HmacSha256 = hmac::Hmac<Sha256>;

fn tag(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key).expect("any key length");
    parts.iter().for_each(|part| mac.update(part));
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One row's input: its keys, its headers and the body, signed at `now`; for the rows of
/// a whole delivery, the route it is sent to.
struct Case {
    keys: Keys,
    headers: HeaderMap,
    body: Bytes,
    now: SystemTime,
    app: Option<App>,
}

/// A route that takes `Verified` under the layer, and the runtime it is called on.
struct App {
    runtime: tokio::runtime::Runtime,
    router: Router,
}

impl App {
    /// `guarded`: whether the intake remembers what it takes.
    fn new(keys: &Keys, guarded: bool) -> App {
        let mut intake = Intake::new(keys.clone());
        if guarded {
            intake = intake
                .replays(ReplayMemory::new(), OnRepeat::Flag)
                .replay_window(Duration::ZERO);
        }
        let router = Router::new()
            .route(
                "/hooks/github",
                post(|delivery: Verified| async move { delivery.body().len().to_string() }),
            )
            .with_state(intake)
            .layer(FaultLayer::new());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        App { runtime, router }
    }

    /// Sends `case`'s delivery through the route: whether it was answered 200, to its end.
    fn deliver(&self, case: &Case) -> bool {
        let mut request = Request::post("/hooks/github")
            .body(Body::from(case.body.clone()))
            .expect("a request");
        *request.headers_mut() = case.headers.clone();
        self.runtime.block_on(async {
            let response = self
                .router
                .clone()
                .oneshot(request)
                .await
                .expect("infallible");
            let ok = response.status() == 200;
            ok && response.into_body().collect().await.is_ok()
        })
    }
}

fn case(row: &str, kib: usize) -> Case {
    let body = Bytes::from(vec![b'x'; kib * 1024]);
    let now = SystemTime::now();
    let ts = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        .to_string();
    let mut headers = HeaderMap::new();
    let (sender, secret) = match row {
        "standard_webhooks" => {
            let secret = Secret::standard_webhooks(STANDARD_SECRET).expect("a whsec_ secret");
            let key = base64::engine::general_purpose::STANDARD
                .decode(&STANDARD_SECRET[6..])
                .expect("base64");
            let signature = tag(&key, &[b"msg_1.", ts.as_bytes(), b".", &body]);
            let signature = base64::engine::general_purpose::STANDARD.encode(signature);
            headers.insert("webhook-id", "msg_1".parse().expect("a header"));
            headers.insert("webhook-timestamp", ts.parse().expect("a header"));
            let value = format!("v1,{signature}").parse().expect("a header");
            headers.insert("webhook-signature", value);
            (Sender::StandardWebhooks, secret)
        }
        "stripe" => {
            let signature = hex(&tag(SECRET.as_bytes(), &[ts.as_bytes(), b".", &body]));
            let value = format!("t={ts},v1={signature}").parse().expect("a header");
            headers.insert("stripe-signature", value);
            (Sender::Stripe, Secret::new(SECRET).expect("a secret"))
        }
        _ => {
            let signature = hex(&tag(SECRET.as_bytes(), &[&body]));
            let value = format!("sha256={signature}").parse().expect("a header");
            headers.insert("x-hub-signature-256", value);
            (Sender::GitHub, Secret::new(SECRET).expect("a secret"))
        }
    };
    let keys = Keys::new(sender, SecretSet::new([secret]).expect("one secret"))
        .expect("the secret is in its sender's form");
    let app = match row {
        "github_extractor" => Some(App::new(&keys, false)),
        "github_guarded" => Some(App::new(&keys, true)),
        _ => None,
    };
    Case {
        keys,
        headers,
        body,
        app,
        now,
    }
}

/// What a receiver writes by hand for GitHub: the header's hex decoded, then one HMAC and
/// `verify_slice`, which compares in constant time.
fn hand_verify_slice(case: &Case) -> bool {
    let Some(text) = case.headers["x-hub-signature-256"]
        .as_bytes()
        .strip_prefix(b"sha256=")
    else {
        return false;
    };
    let mut expected = [0u8; 32];
    for (byte, pair) in expected.iter_mut().zip(text.chunks_exact(2)) {
        let digits = std::str::from_utf8(pair).unwrap_or("zz");
        *byte = u8::from_str_radix(digits, 16).unwrap_or(0);
    }
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(SECRET.as_bytes()).expect("any key");
    mac.update(&case.body);
    mac.verify_slice(&expected).is_ok()
}

/// Runs `row` once on `case`; true when it verified.
fn run(row: &str, case: &Case) -> bool {
    if row == "hand_verify_slice" {
        return hand_verify_slice(black_box(case));
    }
    if let Some(app) = &case.app {
        return app.deliver(case);
    }
    // `Bytes` clones share the buffer: the body is not copied here, nor by the verifier.
    let delivery = Delivery::verify(&case.keys, &case.headers, case.body.clone(), case.now);
    delivery.is_ok_and(|d| d.body().as_ptr() == case.body.as_ptr())
}

fn bench_rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("webhook_verify");
    for kib in SIZES_KIB {
        group.throughput(Throughput::Bytes((kib * 1024) as u64));
        for row in ROWS {
            let case = case(row, kib);
            group.bench_function(format!("{row}/{kib}KiB"), |b| b.iter(|| run(row, &case)));
        }
    }
    group.finish();
}

fn time(row: &str, case: &Case, iterations: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(run(row, case));
    }
    start.elapsed()
}

/// Times every row in alternating rounds and prints ns per KiB and the ratio of each row's
/// median to the hand-written row's, size by size.
fn print_ratios(bytes_per_round: usize, rounds: usize) {
    println!("| row | KiB | ns per KiB | × hand_verify_slice |");
    println!("|---|---|---|---|");
    for kib in SIZES_KIB {
        let cases: Vec<Case> = ROWS.iter().map(|row| case(row, kib)).collect();
        let iterations = (bytes_per_round / (kib * 1024)).max(1);
        let mut times = vec![Vec::with_capacity(rounds); ROWS.len()];
        for round in 0..rounds {
            let mut order: Vec<usize> = (0..ROWS.len()).collect();
            order.rotate_left(round % ROWS.len());
            for i in order {
                times[i].push(time(ROWS[i], &cases[i], iterations));
            }
        }
        let medians: Vec<f64> = times
            .into_iter()
            .map(|mut t| {
                t.sort_unstable();
                t[t.len() / 2].as_secs_f64() * 1e9 / (iterations * kib) as f64
            })
            .collect();
        for (row, median) in ROWS.iter().zip(&medians) {
            println!(
                "| {row} | {kib} | {median:.0} | {:.3} |",
                median / medians[0]
            );
        }
    }
}

/// `--grind ROW KIB N`: runs one row N times and nothing else, for callgrind.
fn grind(args: &[String]) {
    let [row, kib, n] = args else {
        panic!("usage: --grind ROW KIB N");
    };
    let case = case(row, kib.parse().expect("KiB"));
    let n: usize = n.parse().expect("N");
    let verified = (0..n).filter(|_| run(row, black_box(&case))).count();
    assert_eq!(verified, n, "{row} failed to verify");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--grind") {
        return grind(&args[at + 1..]);
    }
    for row in ROWS {
        for kib in SIZES_KIB {
            assert!(
                run(row, &case(row, kib)),
                "{row} at {kib} KiB does not verify"
            );
        }
    }
    for row in GRIND_ONLY {
        let case = case(row, 1);
        // Twice: the guarded one's second delivery is a first one too.
        assert!(run(row, &case) && run(row, &case), "{row} does not deliver");
    }
    let mut criterion = Criterion::default().configure_from_args();
    bench_rows(&mut criterion);
    criterion.final_summary();
    if args.iter().any(|arg| arg == "--list") {
        return;
    }
    // `cargo bench` passes `--bench`; without it (`cargo test --benches`) one short round
    // checks that the measurement works.
    if args.iter().any(|arg| arg == "--bench") {
        print_ratios(RATIO_BYTES_PER_ROUND, RATIO_ROUNDS);
    } else {
        print_ratios(256 * 1024, 1);
    }
}
