//! A delivery refused before its body is read never takes the next delivery down with its
//! connection: the layer reads what the refusal left, so that a real delivery sent next on
//! the same kept-alive connection (a proxy's, typically) is verified and kept. Over TCP, from
//! parallel clients, every follow-up answered and every count exact.

use std::time::SystemTime;

use axum::routing::post;
use axum::Router;
use faultline::webhooks::senders::GitHub;
use faultline::webhooks::{Intake, SecretSet, Sender, Verified};
use faultline::FaultLayer;

use crate::common::keep_alive::{pair, Framing, Request};
use crate::common::Lab;
use crate::sign::signed;

const SECRET: &str = "It's a Secret to Everybody";
const CLIENTS: usize = 8;
const ROUNDS: usize = 5;
/// The real delivery's body: what `Request` sends for a length.
const REAL_BODY: [u8; 13] = [b'x'; 13];

fn header_lines(headers: &[(&'static str, String)]) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_refused_before_its_body_keeps_the_connection_for_the_next_one() {
    let real = Request {
        method: "POST",
        path: "/hooks".into(),
        headers: header_lines(&signed(
            Sender::GitHub,
            SECRET,
            &REAL_BODY,
            SystemTime::now(),
        )),
        framing: Framing::Length(REAL_BODY.len()),
    };
    // No signature at all (401), and one that is not hex (400): both refused before the body
    // is read.
    let forgeries = [
        (
            "x-github-event: push\r\nx-github-delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\n",
            401,
        ),
        (
            "x-github-event: push\r\nx-github-delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\n\
             x-hub-signature-256: sha256=not-hex\r\n",
            400,
        ),
    ];
    let sizes = [
        Framing::Length(100),
        Framing::Length(64 * 1024),
        Framing::Length(1024 * 1024),
        Framing::Chunked {
            bytes: 300 * 1024,
            chunk: 32 * 1024,
        },
    ];
    for (forged, status) in forgeries {
        for framing in sizes {
            let intake = Intake::new(GitHub::new(SecretSet::one(SECRET).unwrap()).unwrap());
            let (layer, ledger) = FaultLayer::pair();
            let app = Router::new()
                .route(
                    "/hooks",
                    post(|delivery: Verified<GitHub>| async move {
                        format!("kept {}", delivery.body().len())
                    }),
                )
                .with_state(intake)
                .layer(layer);
            let lab = Lab::serve(app, ledger).await;
            let first = Request {
                method: "POST",
                path: "/hooks".into(),
                headers: forged.into(),
                framing,
            };
            let clients = (0..CLIENTS).map(|_| {
                let (addr, first, real) = (lab.addr, first.clone(), real.clone());
                tokio::spawn(async move {
                    let mut pairs = Vec::new();
                    for _ in 0..ROUNDS {
                        pairs.push(pair(addr, &first, &real).await);
                    }
                    pairs
                })
            });
            let mut n = 0;
            for client in clients {
                for pair in client.await.unwrap() {
                    assert_eq!(pair.first.status, status, "{framing:?}");
                    assert!(!pair.first.close && pair.reused, "{framing:?}: closed");
                    assert_eq!(pair.second.status, 200, "{framing:?}");
                    assert_eq!(pair.second.body, b"kept 13");
                    n += 1;
                }
            }
            let snapshot = lab.quiescent().await;
            assert_eq!(snapshot.started, 2 * n, "{snapshot:#?}");
            assert_eq!((snapshot.ok, snapshot.handled), (n, n), "{snapshot:#?}");
            assert_eq!(snapshot.finished(), 2 * n);
            let unread = snapshot.unread_bodies;
            assert_eq!((unread.drained, unread.closed), (n, 0), "{framing:?}");
            assert_eq!(unread.drained_bytes, n * framing.bytes() as u64);
        }
    }
}
