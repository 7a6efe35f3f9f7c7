//! The senders' documented examples, verified as they are published; and for the senders
//! that publish none, a delivery built by their documented formula with Python's `hmac`
//! (`python3 -c 'import hmac, hashlib; …'`), a second implementation beside the library's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use faultline::webhooks::{Delivery, Keys, Refusal, Secret, SecretSet, Sender};
use faultline::Fault;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, value.parse().unwrap());
    }
    map
}

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

fn verify(
    keys: &Keys,
    pairs: &[(&'static str, &str)],
    body: &'static str,
    now: SystemTime,
) -> Result<Delivery, Refusal> {
    Delivery::verify(keys, &headers(pairs), body.into(), now)
}

/// docs.github.com, "Validating webhook deliveries", "Testing the webhook payload validation".
#[test]
fn githubs_published_example() {
    let keys = Keys::new(
        Sender::GitHub,
        SecretSet::one("It's a Secret to Everybody").unwrap(),
    )
    .unwrap();
    let signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    let delivery = verify(
        &keys,
        &[("x-hub-signature-256", signature)],
        "Hello, World!",
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(delivery.body(), "Hello, World!");
    assert_eq!((delivery.id(), delivery.timestamp()), (None, None));
    let changed = verify(
        &keys,
        &[("x-hub-signature-256", signature)],
        "Hello, World?",
        SystemTime::now(),
    );
    assert_eq!(changed.unwrap_err().code(), "webhook-signature-mismatch");
}

/// The Standard Webhooks reference libraries' example: secret, id, timestamp, payload and
/// signature as the specification's libraries test them.
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STANDARD_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const STANDARD_TS: u64 = 1614265330;
const STANDARD_BODY: &str = r#"{"test": 2432232314}"#;
const STANDARD_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

fn standard_keys(sender: Sender) -> Keys {
    let secret = Secret::standard_webhooks(STANDARD_SECRET).unwrap();
    Keys::new(sender, SecretSet::new([secret]).unwrap()).unwrap()
}

#[test]
fn the_standard_webhooks_example_under_both_header_prefixes_and_among_others() {
    let keys = standard_keys(Sender::StandardWebhooks);
    let ts = STANDARD_TS.to_string();
    for prefix in ["webhook", "svix"] {
        let names: [&'static str; 3] = match prefix {
            "webhook" => ["webhook-id", "webhook-timestamp", "webhook-signature"],
            _ => ["svix-id", "svix-timestamp", "svix-signature"],
        };
        let list =
            format!("v1,bm90IHRoaXMgb25lLCBidXQgMzIgYnl0ZXMgbG9uZyE= v1a,xyz {STANDARD_SIGNATURE}");
        for signature in [STANDARD_SIGNATURE, list.as_str()] {
            let pairs = [
                (names[0], STANDARD_ID),
                (names[1], &ts),
                (names[2], signature),
            ];
            let delivery = verify(&keys, &pairs, STANDARD_BODY, at(STANDARD_TS)).unwrap();
            assert_eq!(delivery.id(), Some(STANDARD_ID));
            assert_eq!(delivery.timestamp(), Some(at(STANDARD_TS)));
        }
    }
    // The id is signed: another id under the same signature is refused.
    let pairs = [
        ("webhook-id", "msg_another"),
        ("webhook-timestamp", &ts),
        ("webhook-signature", STANDARD_SIGNATURE),
    ];
    let refused = verify(&keys, &pairs, STANDARD_BODY, at(STANDARD_TS)).unwrap_err();
    assert_eq!(refused.code(), "webhook-signature-mismatch");
}

#[test]
fn gitlabs_signing_token_is_standard_webhooks_with_gitlabs_event() {
    let keys = standard_keys(Sender::GitLabSigned);
    let ts = STANDARD_TS.to_string();
    let pairs = [
        ("webhook-id", STANDARD_ID),
        ("webhook-timestamp", ts.as_str()),
        ("webhook-signature", STANDARD_SIGNATURE),
        ("x-gitlab-event", "Push Hook"),
        // The token of a hook that has both: not what this sender checks.
        ("x-gitlab-token", "irrelevant"),
    ];
    let delivery = verify(&keys, &pairs, STANDARD_BODY, at(STANDARD_TS)).unwrap();
    assert_eq!(delivery.event(), Some("Push Hook"));
    assert_eq!(delivery.id(), Some(STANDARD_ID));
}

/// docs.slack.dev, "Verifying requests from Slack": the walkthrough's signing secret,
/// timestamp, slash-command body and resulting signature.
#[test]
fn slacks_documented_example() {
    let keys = Keys::new(
        Sender::Slack,
        SecretSet::one("8f742231b10e8888abcd99yyyzzz85a5").unwrap(),
    )
    .unwrap();
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    let pairs = [
        ("x-slack-request-timestamp", "1531420618"),
        (
            "x-slack-signature",
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
        ),
    ];
    let delivery = verify(&keys, &pairs, BODY, at(1531420618)).unwrap();
    assert_eq!(delivery.timestamp(), Some(at(1531420618)));
    // The same delivery a day later is a replay.
    let later = verify(&keys, &pairs, BODY, at(1531420618 + 86_400)).unwrap_err();
    assert_eq!(later.code(), "webhook-timestamp-stale");
}

/// Stripe's documented header (`t=1492774577,v1=…`) and formula (`t.body`, the `whsec_`
/// text as the key), rebuilt with Python's `hmac`; the `v0` Stripe adds is ignored.
#[test]
fn stripes_documented_formula() {
    let keys = Keys::new(Sender::Stripe, SecretSet::one("whsec_test_secret").unwrap()).unwrap();
    const BODY: &str = "{\n  \"id\": \"evt_1NG8Du2eZvKYlo2CUI79vXWy\",\n  \"object\": \"event\"\n}";
    let header = "t=1492774577,v1=5409be4f4c3668cb1026cddfee6e4035a4d3f0574a0ee7b81c1a1d045caef9da,v0=6ffbb59b2300aabe72d6e9e3e3f9ad8fe4d00e59a0a1e8a0c0e8bc4d6b6b3d7a";
    let delivery = verify(&keys, &[("stripe-signature", header)], BODY, at(1492774577)).unwrap();
    assert_eq!(delivery.timestamp(), Some(at(1492774577)));
    // A rotation: the old secret's signature first, then the new one's.
    let rotated = format!("t=1492774577,v1={},{}", "0".repeat(64), &header[13..]);
    assert!(verify(
        &keys,
        &[("stripe-signature", &rotated)],
        BODY,
        at(1492774577)
    )
    .is_ok());
}

/// Shopify's and Gitea's documented formulas (base64 and bare hex of HMAC-SHA256 of the
/// body), rebuilt with Python's `hmac`.
#[test]
fn shopify_and_gitea_by_their_documented_formulas() {
    let shopify = Keys::new(Sender::Shopify, SecretSet::one("shpss_secret").unwrap()).unwrap();
    let pairs = [
        (
            "x-shopify-hmac-sha256",
            "jqbalbO3Z8mDmrF2/+wzM3KYvbgqzVBF969vgiIy80I=",
        ),
        ("x-shopify-topic", "orders/create"),
        (
            "x-shopify-webhook-id",
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
        ),
    ];
    let delivery = verify(
        &shopify,
        &pairs,
        r#"{"id":820982911946154508}"#,
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(delivery.event(), Some("orders/create"));
    assert_eq!(delivery.id(), Some("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"));

    let signature = "99c6f92cc56487df18837fe9b006e3d7d668359bd88294e510b1857b3fa56c9c";
    for (sender, header) in [
        (Sender::Gitea, "x-gitea-signature"),
        (Sender::Forgejo, "x-forgejo-signature"),
    ] {
        let keys = Keys::new(sender, SecretSet::one("gitea secret").unwrap()).unwrap();
        let body = r#"{"ref":"refs/heads/main"}"#;
        assert!(verify(&keys, &[(header, signature)], body, SystemTime::now()).is_ok());
    }
}

#[test]
fn gitlabs_token_passes_as_itself_and_no_other() {
    let keys = Keys::new(Sender::GitLab, SecretSet::one("glt-token").unwrap()).unwrap();
    let now = SystemTime::now();
    assert!(verify(&keys, &[("x-gitlab-token", "glt-token")], "{}", now).is_ok());
    for wrong in ["glt-toke", "glt-token2", "GLT-TOKEN"] {
        let refused = verify(&keys, &[("x-gitlab-token", wrong)], "{}", now).unwrap_err();
        assert_eq!(refused.code(), "webhook-signature-mismatch", "{wrong}");
    }
}
