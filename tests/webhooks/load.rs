//! Many parallel senders over TCP, good and bad deliveries mixed: every delivery answered
//! as its kind must be, and the ledger's totals and the handler's count exact. The reports
//! those refusals make, read from a subscriber, name codes and never a secret or a body.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use faultline::webhooks::Sender;

use crate::common::Lab;
use crate::server::{self, post_to, INBOXES};
use crate::sign::{proof_header, replace, signed, value};

const CLIENTS: usize = 32;
const PER_CLIENT: usize = 25;
/// What the body of every delivery starts with, to be looked for in the reports.
const BODY_MARK: &str = "body-mark-7c1f";

/// The kinds of delivery the clients take turns at, with the answer each must get.
const KINDS: [(&str, u16); 5] = [
    ("good", 200),
    ("good", 200),
    ("webhook-signature-mismatch", 401),
    ("webhook-timestamp-stale", 401),
    ("webhook-header-malformed", 400),
];

#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// What was written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Every event of this test binary, written as text.
pub(crate) fn reports() -> &'static Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        captured
    })
}

/// Inbox `n` of the senders that sign a timestamp, so that every kind applies to each.
fn timed_inbox(n: usize) -> (&'static str, Sender, &'static str) {
    let timed: Vec<_> = INBOXES
        .iter()
        .filter(|(_, s, _)| s.tolerance().is_some())
        .collect();
    *timed[n % timed.len()]
}

/// Sends delivery `n` of `client`, of the kind whose turn it is, checks its answer and
/// returns the kind.
async fn deliver(lab: &Lab, client: usize, n: usize) -> usize {
    let kind = (client + n) % KINDS.len();
    let (inbox, sender, secret) = timed_inbox(client * PER_CLIENT + n);
    let body = format!("{BODY_MARK} client {client} delivery {n}");
    let mut at = SystemTime::now();
    if KINDS[kind].0 == "webhook-timestamp-stale" {
        at -= Duration::from_secs(6 * 60);
    }
    let mut headers = signed(sender, secret, body.as_bytes(), at);
    let mut sent = body.clone();
    match KINDS[kind].0 {
        "webhook-signature-mismatch" => sent.push('!'),
        "webhook-header-malformed" => {
            let header = proof_header(sender);
            let text = value(&headers, header).to_owned();
            replace(&mut headers, header, format!("{text}00"));
        }
        _ => {}
    }
    let (status, answer) = post_to(lab, inbox, &headers, sent).await;
    assert_eq!(status, KINDS[kind].1, "{inbox} {}: {answer}", KINDS[kind].0);
    if status != 200 {
        assert_eq!(answer["code"], KINDS[kind].0, "{answer}");
    }
    kind
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_senders_are_answered_and_counted_exactly() {
    let captured = reports();
    let (lab, kept) = server::start().await;
    let lab = Arc::new(lab);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let lab = Arc::clone(&lab);
            tokio::spawn(async move {
                let mut tally = [0u64; KINDS.len()];
                for n in 0..PER_CLIENT {
                    tally[deliver(&lab, client, n).await] += 1;
                }
                tally
            })
        })
        .collect();
    let mut sent = [0u64; KINDS.len()];
    for client in clients {
        for (total, count) in sent.iter_mut().zip(client.await.unwrap()) {
            *total += count;
        }
    }
    let snapshot = lab.quiescent().await;
    let good: u64 = sent[..2].iter().sum();
    assert_eq!(
        good + sent[2..].iter().sum::<u64>(),
        (CLIENTS * PER_CLIENT) as u64
    );
    assert_eq!(snapshot.started, (CLIENTS * PER_CLIENT) as u64);
    assert_eq!(
        (snapshot.ok, snapshot.handled),
        (good, sent[2..].iter().sum())
    );
    assert_eq!(kept.load(Ordering::Relaxed), good);
    for (kind, &(code, _)) in KINDS.iter().enumerate().skip(2) {
        let counted: u64 = snapshot
            .series
            .iter()
            .filter(|s| s.code == code)
            .map(|s| s.count)
            .sum();
        assert_eq!(counted, sent[kind], "{code}");
    }

    let text = captured.text();
    assert!(
        text.contains("webhook-signature-mismatch"),
        "the refusals were reported"
    );
    assert!(!text.contains(BODY_MARK), "a body reached a report");
    for (_, _, secret) in INBOXES {
        assert!(!text.contains(secret), "a secret reached a report");
    }
}
