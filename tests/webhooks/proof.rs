//! The proof of a delivery at its edges: the timestamp window to the second on both sides,
//! Stripe's bound on `v1=` tags, a signature listed twice, an empty signature header, and the
//! words of a malformed hex signature.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use faultline::webhooks::{
    Delivery, DeliveryId, Keys, Outgoing, Refusal, Secret, SecretSet, Sender, Signer,
    MAX_SIGNATURES,
};
use faultline::Fault;

use crate::sign::{proof_header, replace, signed, value, Headers};

const BODY: &[u8] = b"{}";
const STRIPE: &str = "whsec_stripe";
const STANDARD: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A receiver's clock on a whole second, so that a timestamp (in seconds) lands exactly on
/// the edges of the window.
fn receiver_now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn keys(sender: Sender, secret: &str) -> Keys {
    Keys::new(
        sender,
        SecretSet::new([Secret::for_sender(sender, secret).unwrap()]).unwrap(),
    )
    .unwrap()
}

fn verify(sender: Sender, secret: &str, headers: &Headers) -> Result<Delivery, Refusal> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(*name, value.parse().unwrap());
    }
    Delivery::verify(&keys(sender, secret), &map, BODY.into(), receiver_now())
}

fn code(result: Result<Delivery, Refusal>) -> &'static str {
    result.map_or_else(|refusal| refusal.code(), |_| "verified")
}

/// The code a Stripe delivery signed at `receiver_now() + offset` (or minus) gets.
fn stripe_signed(at: SystemTime) -> &'static str {
    let signer = Signer::for_sender(Sender::Stripe, STRIPE).unwrap();
    let id = DeliveryId::parse("evt_1").unwrap();
    let headers = signer.sign(Outgoing::new(BODY).id(&id), at);
    let keys = keys(Sender::Stripe, STRIPE);
    code(Delivery::verify(
        &keys,
        &headers,
        BODY.into(),
        receiver_now(),
    ))
}

#[test]
fn the_window_holds_its_edges_to_the_second_in_the_past_and_ahead() {
    let tolerance = keys(Sender::Stripe, STRIPE).tolerance().unwrap();
    let second = Duration::from_secs(1);
    let now = receiver_now();
    for (at, expected) in [
        (now, "verified"),
        (now - second, "verified"),
        (now - tolerance, "verified"),
        (now - tolerance - second, "webhook-timestamp-stale"),
        // A sender's clock a little ahead of the receiver's is the common case.
        (now + second, "verified"),
        (now + tolerance, "verified"),
        (now + tolerance + second, "webhook-timestamp-future"),
    ] {
        let offset = at
            .duration_since(now)
            .map_or_else(|e| -(e.duration().as_secs() as i64), |d| d.as_secs() as i64);
        assert_eq!(stripe_signed(at), expected, "signed {offset} s from now");
    }
}

/// A Stripe header of `others` wrong `v1=` tags, then the genuine one.
fn stripe_with_tags(others: usize) -> Headers {
    let headers = signed(Sender::Stripe, STRIPE, BODY, receiver_now());
    let header = value(&headers, "stripe-signature");
    let (t, genuine) = header.split_once(',').unwrap();
    let mut items = vec![t.to_owned()];
    items.extend((0..others).map(|_| format!("v1={}", "0".repeat(64))));
    items.push(genuine.to_owned());
    vec![("stripe-signature", items.join(","))]
}

#[test]
fn stripe_checks_at_most_max_signatures_tags() {
    let at_bound = stripe_with_tags(MAX_SIGNATURES - 1);
    assert_eq!(code(verify(Sender::Stripe, STRIPE, &at_bound)), "verified");
    let past_bound = stripe_with_tags(MAX_SIGNATURES);
    let refused = verify(Sender::Stripe, STRIPE, &past_bound).unwrap_err();
    assert_eq!(refused.code(), "webhook-header-malformed");
    assert_eq!(
        refused.to_string(),
        "the `stripe-signature` header lists more signatures than are checked"
    );
}

/// A sender that lists its one signature twice (a rotation with the same key on both
/// sides) sent a genuine delivery: a match is a match, however many tags agree.
#[test]
fn a_genuine_signature_listed_twice_is_verified() {
    let mut standard = signed(Sender::StandardWebhooks, STANDARD, BODY, receiver_now());
    let genuine = value(&standard, "webhook-signature").to_owned();
    replace(
        &mut standard,
        "webhook-signature",
        format!("{genuine} {genuine}"),
    );
    assert_eq!(
        code(verify(Sender::StandardWebhooks, STANDARD, &standard)),
        "verified"
    );

    let stripe = signed(Sender::Stripe, STRIPE, BODY, receiver_now());
    let header = value(&stripe, "stripe-signature");
    let (_, v1) = header.split_once(',').unwrap();
    let twice = vec![("stripe-signature", format!("{header},{v1}"))];
    assert_eq!(code(verify(Sender::Stripe, STRIPE, &twice)), "verified");
}

/// An empty proof header is a missing signature for every sender, the token sender's
/// included: it is not a malformed one, nor a token compared with the secret.
#[test]
fn an_empty_signature_header_is_a_missing_signature() {
    for (sender, secret) in [
        (Sender::GitHub, "s"),
        (Sender::GitLab, "s"),
        (Sender::Bitbucket, "s"),
        (Sender::Gitea, "s"),
        (Sender::Slack, "s"),
        (Sender::Shopify, "s"),
        (Sender::StandardWebhooks, STANDARD),
        (Sender::Stripe, STRIPE),
    ] {
        let mut headers = signed(sender, secret, BODY, receiver_now());
        replace(&mut headers, proof_header(sender), String::new());
        let refused = verify(sender, secret, &headers).unwrap_err();
        assert_eq!(refused.code(), "webhook-signature-missing", "{sender}");
    }
}

/// A malformed hex signature is described by the form its sender writes, prefix included,
/// so that the sender's developer sees what was expected.
#[test]
fn a_malformed_hex_signature_names_the_form_expected() {
    for (sender, expected) in [
        (
            Sender::GitHub,
            "is not `sha256=` and 64 lower-case hex digits",
        ),
        (
            Sender::Bitbucket,
            "is not `sha256=` and 64 lower-case hex digits",
        ),
        (Sender::Slack, "is not `v0=` and 64 lower-case hex digits"),
        (Sender::Gitea, "is not 64 lower-case hex digits"),
    ] {
        let mut headers = signed(sender, "s", BODY, receiver_now());
        let header = proof_header(sender);
        replace(&mut headers, header, "zz".into());
        let refused = verify(sender, "s", &headers).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("the `{header}` header {expected}"),
            "{sender}"
        );
    }
}
