//! The event of the senders that name it in the body, the body as a type, and the
//! handshakes, answered only once the handshake is verified.

use std::time::SystemTime;

use axum::body::Body;
use axum::http::{HeaderMap, Request};
use axum::response::{IntoResponse, Response};
use axum::{routing::post, Router};
use faultline::webhooks::{
    senders, Delivery, DeliveryId, Intake, Keys, Outgoing, SecretSet, Sender, Signer, Verified,
};
use faultline::{Fault, FaultLayer};
use http_body_util::BodyExt;
use tower::ServiceExt;

const SLACK: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const SVIX: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn secret(sender: Sender) -> &'static str {
    match sender {
        Sender::StandardWebhooks | Sender::GitLabSigned => SVIX,
        Sender::Slack => SLACK,
        _ => "a secret",
    }
}

fn signed(sender: Sender, body: &[u8]) -> HeaderMap {
    let signer = Signer::for_sender(sender, secret(sender)).unwrap();
    let id = DeliveryId::parse("msg_1").unwrap();
    signer.sign(Outgoing::new(body).id(&id), SystemTime::now())
}

fn verified(sender: Sender, body: &'static str) -> Delivery {
    let keys = Keys::new(
        sender,
        SecretSet::for_sender(sender, secret(sender)).unwrap(),
    )
    .unwrap();
    let headers = signed(sender, body.as_bytes());
    Delivery::verify(&keys, &headers, body.into(), SystemTime::now()).unwrap()
}

#[test]
fn the_event_is_read_from_the_body_of_the_senders_that_put_it_there() {
    let cases = [
        (
            Sender::Stripe,
            r#"{"id":"evt_1","data":{"object":{"type":"card"}},"type":"invoice.paid"}"#,
            Some("invoice.paid"),
        ),
        (
            Sender::StandardWebhooks,
            r#"{"type":"user.created","data":{"type":"inner"}}"#,
            Some("user.created"),
        ),
        (
            Sender::Slack,
            r#"{"type":"event_callback","event":{"type":"app_mention","text":"hi"}}"#,
            Some("app_mention"),
        ),
        (
            Sender::Slack,
            r#"{"token":"t","challenge":"c","type":"url_verification"}"#,
            Some("url_verification"),
        ),
        // A slash command is a form: no event in it.
        (Sender::Slack, "command=%2Fweather&text=94070", None),
        // Not JSON, no `type`, an escaped name, a `type` that is no string.
        (Sender::Stripe, "not json", None),
        (Sender::Stripe, r#"{"id":"evt_1"}"#, None),
        (Sender::Stripe, r#"{"type":"invoice\u002epaid"}"#, None),
        (Sender::StandardWebhooks, r#"{"type":7}"#, None),
        // The senders that name it in a header are not read from the body.
        (Sender::GitHub, r#"{"type":"not the event"}"#, None),
    ];
    for (sender, body, event) in cases {
        assert_eq!(verified(sender, body).event(), event, "{sender}: {body}");
    }
}

#[derive(Debug, serde::Deserialize)]
struct Invoice {
    #[allow(dead_code)]
    amount: u32,
}

#[test]
fn a_body_of_another_shape_is_a_400_that_shows_none_of_the_body() {
    let delivery = verified(Sender::Stripe, r#"{"amount":"s3cr3t-card-holder"}"#);
    let refused = delivery.json::<Invoice>().unwrap_err();
    assert_eq!(refused.status(), 400);
    assert_eq!(refused.code(), "webhook-body-invalid");
    let message = refused.to_string();
    assert!(
        message.contains("another shape") && message.contains("column"),
        "{message}"
    );
    assert!(!message.contains("s3cr3t"), "{message}");
    let cut = verified(Sender::Stripe, r#"{"amount":4"#).json::<Invoice>();
    assert!(cut.unwrap_err().to_string().contains("ends before"));
    assert_eq!(
        verified(Sender::Stripe, r#"{"amount":42}"#)
            .json::<Invoice>()
            .unwrap()
            .amount,
        42
    );
}

async fn slack(delivery: Verified<senders::Slack>) -> Response {
    if let Some(handshake) = delivery.handshake() {
        return handshake.into_response();
    }
    format!("event {:?}", delivery.event()).into_response()
}

async fn send(app: &Router, headers: HeaderMap, body: &'static str) -> (u16, String) {
    let mut request = Request::post("/hooks/slack")
        .body(Body::from(body))
        .unwrap();
    *request.headers_mut() = headers;
    let answer = app.clone().oneshot(request).await.unwrap();
    let status = answer.status().as_u16();
    let bytes = answer.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test]
async fn slacks_challenge_is_echoed_once_verified_and_refused_unsigned_or_forged() {
    let intake = Intake::new(senders::Slack::new(SecretSet::one(SLACK).unwrap()).unwrap());
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/hooks/slack", post(slack))
        .with_state(intake)
        .layer(layer);
    let challenge = r#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let (status, body) = send(&app, signed(Sender::Slack, challenge.as_bytes()), challenge).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
    );

    let (status, body) = send(&app, HeaderMap::new(), challenge).await;
    assert_eq!(status, 401);
    assert!(!body.contains("3eZbrw1a"), "{body}");
    let mut forged = signed(Sender::Slack, b"{}");
    forged.remove("content-length");
    let (status, body) = send(&app, forged, challenge).await;
    assert_eq!(status, 401);
    assert!(!body.contains("3eZbrw1a"), "{body}");

    let event = r#"{"type":"event_callback","event":{"type":"app_mention"}}"#;
    let (status, body) = send(&app, signed(Sender::Slack, event.as_bytes()), event).await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"event Some("app_mention")"#)
    );
    let series = ledger.snapshot().series;
    let codes: Vec<_> = series.iter().map(|s| (s.code.as_ref(), s.count)).collect();
    assert!(
        codes.contains(&("webhook-signature-missing", 1)),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("webhook-signature-mismatch", 1)),
        "{codes:?}"
    );
}

#[test]
fn the_pings_are_handshakes_and_other_events_are_not() {
    let github = Signer::for_sender(Sender::GitHub, "gh").unwrap();
    let keys = Keys::new(Sender::GitHub, SecretSet::one("gh").unwrap()).unwrap();
    let id = DeliveryId::parse("72d3162e").unwrap();
    for (event, handshake) in [("ping", true), ("push", false)] {
        let delivery = Outgoing::new(b"{}").id(&id).event(event);
        let headers = github.sign(delivery, SystemTime::now());
        let delivery = Delivery::verify(&keys, &headers, "{}".into(), SystemTime::now()).unwrap();
        let found = delivery.handshake();
        assert_eq!(found.is_some(), handshake, "{event}");
        assert!(found.is_none_or(|h| h.challenge().is_none()));
    }
}
