//! The classic bugs of webhook verification, one test each, over TCP to the receiver: each
//! refused with its status and code, counted by the ledger under that code, its handler
//! never run; and every sender's own signature accepted beside them.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use faultline::webhooks::Sender;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server::{
    self, post_to, BROKEN, INBOXES, MAX_BODY, OTHER_GITHUB, ROTATING, STORE_ERROR,
};
use crate::sign::{proof_header, replace, signed, value, Headers};

const BODY: &str = r#"{"ref":"refs/heads/main","commits":[{"id":"1a2b3c"}]}"#;
/// A Standard Webhooks secret no inbox has.
const OTHER_STANDARD: &str = "whsec_YW5vdGhlciBpbmJveCdzIHNpZ25pbmcga2V5IQ==";
const SIX_MINUTES: Duration = Duration::from_secs(6 * 60);

fn secret_of(inbox: &str) -> (Sender, &'static str) {
    let (_, sender, secret) = INBOXES.iter().find(|(name, ..)| *name == inbox).unwrap();
    (*sender, secret)
}

fn signed_for(inbox: &str, body: &str, at: SystemTime) -> Headers {
    let (sender, secret) = secret_of(inbox);
    signed(sender, secret, body.as_bytes(), at)
}

/// Sends, expects the refusal `status`/`code`, and checks that it was counted once more under
/// `code`, that the handler did not run, and that the answer shows neither body nor secret.
async fn expect_refused(
    inbox: &str,
    headers: Headers,
    body: &str,
    status: u16,
    code: &str,
) -> Value {
    let (lab, kept) = server::start().await;
    let (got, problem) = post_to(&lab, inbox, &headers, body.to_owned()).await;
    assert_eq!(
        (got, problem["code"].as_str()),
        (status, Some(code)),
        "{problem}"
    );
    let text = problem.to_string();
    for (_, _, secret) in INBOXES {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(!text.contains("refs/heads/main"), "{text}");
    let snapshot = lab.quiescent().await;
    assert_eq!((snapshot.handled, snapshot.ok), (1, 0), "{snapshot:#?}");
    let series: Vec<_> = snapshot.series.iter().filter(|s| s.count > 0).collect();
    assert_eq!(series.len(), 1, "{series:#?}");
    assert_eq!(
        (series[0].code.as_str(), series[0].status, series[0].count),
        (code, status, 1)
    );
    assert_eq!(series[0].route, "/hooks/{inbox}");
    assert_eq!(kept.load(Ordering::Relaxed), 0);
    problem
}

#[tokio::test]
async fn every_senders_signature_is_accepted_with_its_id_event_and_timestamp() {
    let (lab, kept) = server::start().await;
    let now = SystemTime::now();
    for (inbox, sender, _) in INBOXES {
        let headers = signed_for(inbox, BODY, now);
        let (status, answer) = post_to(&lab, inbox, &headers, BODY).await;
        assert_eq!(status, 200, "{inbox}: {answer}");
        assert_eq!(answer["sender"], sender.name());
        assert_eq!(answer["body"], BODY, "{inbox}: the body as it came");
        let signs_time = sender.tolerance().is_some();
        assert_eq!(
            answer["timestamp"].as_u64().is_some(),
            signs_time,
            "{inbox}"
        );
        let has_event = !matches!(
            sender,
            Sender::StandardWebhooks | Sender::Stripe | Sender::Slack
        );
        assert_eq!(answer["event"].is_string(), has_event, "{inbox}: {answer}");
        let has_id = !matches!(sender, Sender::Stripe | Sender::Slack);
        assert_eq!(answer["id"].is_string(), has_id, "{inbox}: {answer}");
    }
    let snapshot = lab.quiescent().await;
    assert_eq!((snapshot.ok, snapshot.handled), (INBOXES.len() as u64, 0));
    assert_eq!(kept.load(Ordering::Relaxed), INBOXES.len() as u64);
}

/// A signature compared only up to the shorter length lets `sha256=` and a prefix pass.
#[tokio::test]
async fn a_signature_of_the_right_prefix_but_too_short() {
    let mut headers = signed_for("github", BODY, SystemTime::now());
    let full = value(&headers, "x-hub-signature-256").to_owned();
    replace(
        &mut headers,
        "x-hub-signature-256",
        full[..full.len() - 2].to_owned(),
    );
    expect_refused("github", headers, BODY, 400, "webhook-header-malformed").await;
    // `sha256=` alone, and Standard Webhooks' `v1,` alone.
    let mut headers = signed_for("github", BODY, SystemTime::now());
    replace(&mut headers, "x-hub-signature-256", "sha256=".into());
    expect_refused("github", headers, BODY, 400, "webhook-header-malformed").await;
    let mut headers = signed_for("standard", BODY, SystemTime::now());
    replace(&mut headers, "webhook-signature", "v1,".into());
    expect_refused("standard", headers, BODY, 400, "webhook-header-malformed").await;
}

#[tokio::test]
async fn a_truncated_base64() {
    for (inbox, header, prefix) in [
        ("shopify", "x-shopify-hmac-sha256", ""),
        ("standard", "webhook-signature", "v1,"),
    ] {
        let mut headers = signed_for(inbox, BODY, SystemTime::now());
        let full = value(&headers, header).to_owned();
        let encoded = &full[prefix.len()..];
        // Cut to a whole base64 quantum, still valid base64, of fewer than 32 bytes.
        replace(&mut headers, header, format!("{prefix}{}", &encoded[..40]));
        expect_refused(inbox, headers, BODY, 400, "webhook-header-malformed").await;
    }
}

#[tokio::test]
async fn a_timestamp_six_minutes_old_and_six_minutes_ahead() {
    let now = SystemTime::now();
    for inbox in ["standard", "gitlab-signed", "stripe", "slack"] {
        let old = signed_for(inbox, BODY, now - SIX_MINUTES);
        expect_refused(inbox, old, BODY, 401, "webhook-timestamp-stale").await;
        let ahead = signed_for(inbox, BODY, now + SIX_MINUTES);
        expect_refused(inbox, ahead, BODY, 401, "webhook-timestamp-future").await;
    }
}

#[tokio::test]
async fn a_secret_of_another_inbox() {
    let headers = signed(
        Sender::GitHub,
        OTHER_GITHUB.1,
        BODY.as_bytes(),
        SystemTime::now(),
    );
    expect_refused("github", headers, BODY, 401, "webhook-signature-mismatch").await;
    // Every sender: signed with a secret of the right form that is not the inbox's.
    for (inbox, sender, _) in INBOXES {
        let other = match sender {
            Sender::StandardWebhooks | Sender::GitLabSigned => OTHER_STANDARD,
            _ => OTHER_GITHUB.1,
        };
        let headers = signed(sender, other, BODY.as_bytes(), SystemTime::now());
        expect_refused(inbox, headers, BODY, 401, "webhook-signature-mismatch").await;
    }
}

#[tokio::test]
async fn a_duplicated_header() {
    for inbox in ["github", "standard", "stripe"] {
        let (sender, _) = secret_of(inbox);
        let mut headers = signed_for(inbox, BODY, SystemTime::now());
        let header = proof_header(sender);
        // The genuine signature twice: ambiguity alone is refused.
        headers.push((header, value(&headers, header).to_owned()));
        expect_refused(inbox, headers, BODY, 400, "webhook-header-malformed").await;
    }
    let mut headers = signed_for("github", BODY, SystemTime::now());
    headers.push(("x-github-delivery", "a-second-id".into()));
    expect_refused("github", headers, BODY, 400, "webhook-header-malformed").await;
}

#[tokio::test]
async fn upper_case_hex() {
    for inbox in ["github", "gitea", "slack"] {
        let (sender, _) = secret_of(inbox);
        let mut headers = signed_for(inbox, BODY, SystemTime::now());
        let header = proof_header(sender);
        let text = value(&headers, header);
        let (prefix, hex) = text.split_at(text.len() - 64);
        let upper = format!("{prefix}{}", hex.to_uppercase());
        replace(&mut headers, header, upper);
        expect_refused(inbox, headers, BODY, 400, "webhook-header-malformed").await;
    }
}

#[tokio::test]
async fn a_body_changed_by_one_byte() {
    let changed = BODY.replacen("main", "maim", 1);
    for (inbox, sender, _) in INBOXES {
        if sender == Sender::GitLab {
            continue; // a token signs no body
        }
        let headers = signed_for(inbox, BODY, SystemTime::now());
        expect_refused(inbox, headers, &changed, 401, "webhook-signature-mismatch").await;
    }
}

#[tokio::test]
async fn a_missing_signature_and_a_missing_signed_header() {
    for (inbox, sender, _) in INBOXES {
        let mut headers = signed_for(inbox, BODY, SystemTime::now());
        headers.retain(|(name, _)| *name != proof_header(sender));
        expect_refused(inbox, headers, BODY, 401, "webhook-signature-missing").await;
    }
    for (inbox, header) in [
        ("standard", "webhook-timestamp"),
        ("standard", "webhook-id"),
        ("slack", "x-slack-request-timestamp"),
    ] {
        let mut headers = signed_for(inbox, BODY, SystemTime::now());
        headers.retain(|(name, _)| *name != header);
        expect_refused(inbox, headers, BODY, 400, "webhook-header-missing").await;
    }
    // A Standard Webhooks header of an unknown scheme only: nothing this verifier can check.
    let mut headers = signed_for("standard", BODY, SystemTime::now());
    replace(
        &mut headers,
        "webhook-signature",
        "v1a,c2lnbmVkIHdpdGggYSBwdWJsaWMga2V5".into(),
    );
    expect_refused("standard", headers, BODY, 401, "webhook-signature-missing").await;
}

#[tokio::test]
async fn a_body_past_the_bound_declared_or_streamed() {
    let big = "x".repeat(MAX_BODY + 1);
    let headers = signed_for("github", &big, SystemTime::now());
    let problem = expect_refused(
        "github",
        headers.clone(),
        &big,
        413,
        "webhook-body-too-large",
    )
    .await;
    assert!(problem["detail"]
        .as_str()
        .unwrap()
        .contains(&MAX_BODY.to_string()));
    // Without a Content-Length: chunks, refused once past the bound.
    let (lab, kept) = server::start().await;
    let mut request =
        String::from("POST /hooks/github HTTP/1.1\r\nhost: x\r\nconnection: close\r\n");
    for (name, value) in &headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("transfer-encoding: chunked\r\n\r\n");
    let chunk = format!("400\r\n{}\r\n", "x".repeat(1024));
    let mut stream = tokio::net::TcpStream::connect(lab.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    for _ in 0..MAX_BODY / 1024 + 2 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break; // refused and closed before the end: what is checked below
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains(r#""code":"webhook-body-too-large""#),
        "{answer}"
    );
    assert_eq!(lab.quiescent().await.handled, 1);
    assert_eq!(kept.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn rotation_passes_the_live_secrets_and_refuses_the_expired_one() {
    let (lab, kept) = server::start().await;
    let now = SystemTime::now();
    for (secret, status) in [("new", 200), ("old", 200), ("retired", 401), ("never", 401)] {
        let headers = signed(Sender::GitHub, secret, BODY.as_bytes(), now);
        let (got, answer) = post_to(&lab, ROTATING, &headers, BODY).await;
        assert_eq!(got, status, "{secret}: {answer}");
    }
    let snapshot = lab.quiescent().await;
    assert_eq!((snapshot.ok, snapshot.handled), (2, 2));
    assert_eq!(kept.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn an_unknown_inbox_and_a_failed_store() {
    let headers = signed_for("github", BODY, SystemTime::now());
    expect_refused(
        "nowhere",
        headers.clone(),
        BODY,
        404,
        "webhook-unknown-inbox",
    )
    .await;
    let problem = expect_refused(BROKEN, headers, BODY, 503, "webhook-secrets-unavailable").await;
    assert!(!problem.to_string().contains(STORE_ERROR), "{problem}");
    assert!(problem["request_id"].is_string(), "{problem}");
}

#[tokio::test]
async fn a_503_tells_the_sender_when_to_retry() {
    let (lab, _) = server::start().await;
    let response = reqwest::Client::new()
        .post(lab.url(&format!("/hooks/{BROKEN}")))
        .body(BODY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let retry = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        retry,
        faultline::webhooks::SECRETS_RETRY_AFTER_SECS.to_string()
    );
}
