//! Many parallel clients over real TCP: every request is counted exactly once.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::Lab;
use tokio::sync::Barrier;

const CLIENTS: usize = 64;
const REQUESTS_PER_CLIENT: usize = 200;
/// Each client opens with a request this slow, all at once, so they provably overlap.
const OPENING_SLOW_MS: u64 = 300;

/// What request `i` of client `c` asks for, and the status it must get.
fn schedule(c: usize, i: usize) -> (String, u16) {
    match (c + i) % 4 {
        0 => ("/ok".to_string(), 200),
        1 => ("/handled".to_string(), 422),
        // Distinct raw paths: they must fold into one unmatched series, not one each.
        2 => (format!("/missing/{c}/{i}"), 404),
        _ => ("/panic".to_string(), 500),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_clients_mixing_outcomes_are_counted_exactly() {
    let lab = Arc::new(Lab::start().await);
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let peak = Arc::new(AtomicU64::new(0));
    // A thread of its own takes snapshots back to back while the clients run: each must read
    // no more finishes than starts, though requests start and finish on both workers.
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (lab, peak, done) = (lab.clone(), peak.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut samples, mut inconsistent) = (0_u64, 0_u64);
            while !done.load(Ordering::Relaxed) {
                let snapshot = lab.ledger.snapshot();
                peak.fetch_max(snapshot.in_flight, Ordering::Relaxed);
                samples += 1;
                inconsistent += u64::from(!snapshot.is_consistent());
                std::thread::yield_now();
            }
            (samples, inconsistent)
        })
    };

    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (lab, barrier) = (lab.clone(), barrier.clone());
        clients.push(tokio::spawn(async move {
            // One client, one connection pool: 64 independent TCP clients.
            let client = reqwest::Client::new();
            barrier.wait().await;
            let opening = client
                .get(lab.url(&format!("/slow?ms={OPENING_SLOW_MS}")))
                .send()
                .await
                .unwrap();
            assert_eq!(opening.status(), 200);
            let mut statuses = [0_u64; 4];
            for i in 0..REQUESTS_PER_CLIENT {
                let (path, status) = schedule(c, i);
                let response = client.get(lab.url(&path)).send().await.unwrap();
                assert_eq!(response.status().as_u16(), status, "{path}");
                let body = response.bytes().await.unwrap();
                assert!(body.len() <= faultline::limits::DEFAULT_MAX_BODY_BYTES);
                statuses[(c + i) % 4] += 1;
            }
            statuses
        }));
    }
    let mut sent = [0_u64; 4];
    for client in clients {
        let statuses = client.await.unwrap();
        for (total, n) in sent.iter_mut().zip(statuses) {
            *total += n;
        }
    }
    done.store(true, Ordering::Relaxed);
    let (samples, inconsistent) = sampler.join().unwrap();

    let snapshot = lab.quiescent().await;
    let total = (CLIENTS * (REQUESTS_PER_CLIENT + 1)) as u64;
    assert_eq!(
        sent.iter().sum::<u64>(),
        (CLIENTS * REQUESTS_PER_CLIENT) as u64
    );
    assert_eq!(snapshot.started, total);
    assert_eq!(snapshot.ok, sent[0] + CLIENTS as u64);
    assert_eq!(snapshot.handled, sent[1]);
    assert_eq!(snapshot.rejected, sent[2]);
    assert_eq!(snapshot.panicked, sent[3]);
    assert_eq!(
        (snapshot.service_error, snapshot.aborted, snapshot.cancelled),
        (0, 0, 0)
    );
    assert_eq!(snapshot.in_flight, 0, "{snapshot:#?}");
    assert_eq!(
        inconsistent, 0,
        "{inconsistent} of {samples} snapshots: a finish without its start"
    );
    // Every failure is reported once, written or held back by flood control.
    assert_eq!(snapshot.reported + snapshot.suppressed, snapshot.failures());
    assert!(
        snapshot.suppressed > 0,
        "a flood of one failure must be held back"
    );

    // 16,000 distinct raw paths, three series.
    assert_eq!(snapshot.series.len(), 3, "{:#?}", snapshot.series);
    assert_eq!(
        snapshot.series.iter().map(|s| s.count).sum::<u64>(),
        snapshot.failures()
    );

    // The clients overlapped: they were all inside the layer at once during the opening.
    let peak = peak.load(Ordering::Relaxed);
    assert!(peak >= (CLIENTS / 2) as u64, "peak in flight {peak}");
}
