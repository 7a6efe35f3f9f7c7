//! The bounds the verifiers state, each checked at its edge: signatures per header, the
//! length of a delivery id, the digits of a timestamp, and Stripe's one `t=`.

use std::time::SystemTime;

use axum::http::HeaderMap;
use faultline::webhooks::{
    Delivery, Keys, Refusal, Secret, SecretSet, Sender, MAX_DELIVERY_ID_BYTES, MAX_SIGNATURES,
};
use faultline::Fault;

use crate::sign::{replace, signed, value, Headers};

const BODY: &[u8] = b"{}";

fn verify(sender: Sender, secret: &str, headers: &Headers) -> Result<Delivery, Refusal> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(*name, value.parse().unwrap());
    }
    let keys = Keys::new(
        sender,
        SecretSet::new([Secret::for_sender(sender, secret).unwrap()]).unwrap(),
    )
    .unwrap();
    Delivery::verify(&keys, &map, BODY.into(), SystemTime::now())
}

fn code(result: Result<Delivery, Refusal>) -> &'static str {
    result.map_or_else(|refusal| refusal.code(), |_| "verified")
}

const STANDARD: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_TAG: &str = "v1,bm90IHRoaXMgb25lLCBidXQgMzIgYnl0ZXMgbG9uZyE=";

#[test]
fn a_header_lists_at_most_max_signatures() {
    let mut headers = signed(Sender::StandardWebhooks, STANDARD, BODY, SystemTime::now());
    let genuine = value(&headers, "webhook-signature").to_owned();
    let list = |others: usize| {
        let mut entries = vec![OTHER_TAG; others];
        entries.push(&genuine);
        entries.join(" ")
    };
    replace(&mut headers, "webhook-signature", list(MAX_SIGNATURES - 1));
    assert_eq!(
        code(verify(Sender::StandardWebhooks, STANDARD, &headers)),
        "verified"
    );
    replace(&mut headers, "webhook-signature", list(MAX_SIGNATURES));
    assert_eq!(
        code(verify(Sender::StandardWebhooks, STANDARD, &headers)),
        "webhook-header-malformed"
    );
}

#[test]
fn a_delivery_id_is_at_most_max_delivery_id_bytes_of_visible_ascii() {
    let mut headers = signed(Sender::GitHub, "s", BODY, SystemTime::now());
    replace(
        &mut headers,
        "x-github-delivery",
        "d".repeat(MAX_DELIVERY_ID_BYTES),
    );
    assert_eq!(code(verify(Sender::GitHub, "s", &headers)), "verified");
    replace(
        &mut headers,
        "x-github-delivery",
        "d".repeat(MAX_DELIVERY_ID_BYTES + 1),
    );
    assert_eq!(
        code(verify(Sender::GitHub, "s", &headers)),
        "webhook-header-malformed"
    );
}

#[test]
fn a_timestamp_is_digits_only() {
    for bad in ["", "+1614265330", "1614265330.5", "-1", "1234567890123"] {
        let mut headers = signed(Sender::Slack, "s", BODY, SystemTime::now());
        replace(&mut headers, "x-slack-request-timestamp", bad.into());
        let got = code(verify(Sender::Slack, "s", &headers));
        assert_eq!(got, "webhook-header-malformed", "{bad:?}");
    }
}

#[test]
fn stripe_takes_one_t_and_needs_it() {
    let headers = signed(Sender::Stripe, "whsec_s", BODY, SystemTime::now());
    let header = value(&headers, "stripe-signature").to_owned();
    let (t, v1) = header.split_once(',').unwrap();
    for bad in [
        format!("{t},{t},{v1}"),
        v1.to_owned(),
        format!("{t},{v1},junk"),
    ] {
        let headers = vec![("stripe-signature", bad.clone())];
        assert_eq!(
            code(verify(Sender::Stripe, "whsec_s", &headers)),
            "webhook-header-malformed",
            "{bad}"
        );
    }
    let only_v0 = vec![("stripe-signature", format!("{t},v0={}", "0".repeat(64)))];
    assert_eq!(
        code(verify(Sender::Stripe, "whsec_s", &only_v0)),
        "webhook-signature-missing"
    );
}
