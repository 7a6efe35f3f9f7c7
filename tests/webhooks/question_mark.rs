//! `?` keeps the status and code of every fault faultline defines, into each error type the
//! docs show a handler returning: `faultline::Error`, an enum of one's own deriving `Fault`
//! with the fault as a `#[fault(transparent)]` `#[from]` field, and the fault's own type.
//! Parallel clients over TCP; each answer's status and code checked, and the ledger's outcomes
//! and series exact: a client's mistake is `handled` (a refusal) or `rejected` (an axum
//! rejection), never a 500.

use std::time::SystemTime;

use axum::extract::rejection::JsonRejection;
use axum::routing::post;
use axum::{Json, Router};
use faultline::webhooks::senders::GitHub;
use faultline::webhooks::{Intake, Refusal, SecretSet, Sender, Verified};
use faultline::{Fault, FaultLayer};
use serde::Deserialize;

use crate::common::Lab;
use crate::sign::signed;

const SECRET: &str = "a secret for the question mark";
const CLIENTS: usize = 8;
const PER_CLIENT: usize = 6;
/// A push as GitHub sends it, cut to what the handlers read.
const PUSH: &str = r#"{"ref":"refs/heads/main"}"#;
/// Signed, so verified, but not a push: the handler's `json()` refuses it.
const NOT_A_PUSH: &str = r#"{"zen":"Design for failure."}"#;

#[derive(Deserialize)]
struct Push {
    #[serde(rename = "ref")]
    reference: String,
}

#[derive(Debug, thiserror::Error, Fault)]
enum HookError {
    #[error(transparent)]
    #[fault(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    #[fault(transparent)]
    Json(#[from] JsonRejection),
}

async fn into_error(delivery: Verified<GitHub>) -> Result<String, faultline::Error> {
    let push: Push = delivery.json()?;
    Ok(push.reference)
}

async fn into_derived(delivery: Verified<GitHub>) -> Result<String, HookError> {
    let push: Push = delivery.json()?;
    Ok(push.reference)
}

async fn as_itself(delivery: Verified<GitHub>) -> Result<String, Refusal> {
    let push: Push = delivery.json()?;
    Ok(push.reference)
}

async fn json_into_error(
    push: Result<Json<Push>, JsonRejection>,
) -> Result<String, faultline::Error> {
    Ok(push?.0.reference)
}

async fn json_into_derived(push: Result<Json<Push>, JsonRejection>) -> Result<String, HookError> {
    Ok(push?.0.reference)
}

/// The routes that verify a GitHub delivery, and those that take a JSON body unsigned.
const VERIFIED: [&str; 3] = ["/error", "/derived", "/refusal"];
const UNSIGNED: [&str; 2] = ["/json/error", "/json/derived"];

async fn start() -> Lab {
    let intake = Intake::new(GitHub::new(SecretSet::one(SECRET).unwrap()).unwrap());
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/error", post(into_error))
        .route("/derived", post(into_derived))
        .route("/refusal", post(as_itself))
        .with_state(intake)
        .route("/json/error", post(json_into_error))
        .route("/json/derived", post(json_into_derived))
        .layer(layer);
    Lab::serve(app, ledger).await
}

/// Posts `body` to `path`, signed as GitHub signs when `sign`; the status and the code.
async fn send(lab: &Lab, path: &str, body: &'static str, sign: bool) -> (u16, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(lab.url(path))
        .header("content-type", "application/json");
    if sign {
        for (name, value) in signed(Sender::GitHub, SECRET, body.as_bytes(), SystemTime::now()) {
            request = request.header(name, value);
        }
    }
    let response = request.body(body).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let code = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|problem| problem["code"].as_str().map(str::to_owned));
    (status, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_mark_keeps_each_faults_status_code_and_outcome_over_tcp() {
    let lab = std::sync::Arc::new(start().await);
    let clients = (0..CLIENTS).map(|_| {
        let lab = std::sync::Arc::clone(&lab);
        tokio::spawn(async move {
            for turn in 0..PER_CLIENT {
                let good = turn % 2 == 0;
                let body = if good { PUSH } else { NOT_A_PUSH };
                for path in VERIFIED {
                    let expected = if good {
                        (200, None)
                    } else {
                        (400, Some("webhook-body-invalid".to_owned()))
                    };
                    assert_eq!(send(&lab, path, body, true).await, expected, "{path}");
                }
                for path in UNSIGNED {
                    let expected = if good {
                        (200, None)
                    } else {
                        (422, Some("unprocessable-entity".to_owned()))
                    };
                    assert_eq!(send(&lab, path, body, false).await, expected, "{path}");
                }
            }
        })
    });
    for client in clients.collect::<Vec<_>>() {
        client.await.unwrap();
    }

    let snapshot = lab.quiescent().await;
    let bad = (CLIENTS * PER_CLIENT / 2) as u64;
    let routes = (VERIFIED.len() + UNSIGNED.len()) as u64;
    assert_eq!(snapshot.started, 2 * bad * routes);
    assert_eq!(snapshot.ok, bad * routes);
    assert_eq!(
        snapshot.handled,
        bad * VERIFIED.len() as u64,
        "{snapshot:#?}"
    );
    assert_eq!(
        snapshot.rejected,
        bad * UNSIGNED.len() as u64,
        "{snapshot:#?}"
    );
    assert_eq!(snapshot.service_error + snapshot.panicked, 0);
    for path in VERIFIED.iter().chain(&UNSIGNED) {
        let series: Vec<_> = snapshot
            .series
            .iter()
            .filter(|s| s.route == *path)
            .collect();
        assert_eq!(series.len(), 1, "{path}: {series:?}");
        assert_eq!(series[0].count, bad, "{path}");
        assert!(series[0].status < 500, "{path}: {series:?}");
    }
}

#[test]
fn a_refusal_as_a_transparent_field_adds_its_catalog() {
    use faultline::catalog::Catalog;
    let codes: Vec<_> = HookError::catalog().iter().map(|e| e.code).collect();
    for code in [
        "webhook-signature-mismatch",
        "webhook-body-invalid",
        "webhook-replayed",
    ] {
        assert!(codes.contains(&code), "{code}: {codes:?}");
    }
    let body_invalid = Refusal::catalog()
        .into_iter()
        .find(|entry| entry.code == "webhook-body-invalid")
        .unwrap();
    assert_eq!(body_invalid.status, 400);
}

/// A `#[fault(transparent)]` field that is not a fault is a compile error that says what a
/// fault is and what to do instead; `ui/*.stderr` pin it. Here rather than beside the
/// derive's other misuses, since the error lists the types that are faults, `Refusal` among
/// them only with this feature.
#[test]
fn a_transparent_field_that_is_not_a_fault_says_so() {
    trybuild::TestCases::new().compile_fail("tests/webhooks/ui/*.rs");
}
