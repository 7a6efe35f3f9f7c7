//! The signer against every sender's verification, its published examples and its headers.

use std::time::Duration;

use super::*;
use crate::error::Fault;
use crate::webhooks::delivery::Delivery;
use crate::webhooks::keys::Keys;
use crate::webhooks::secret::SecretSet;

/// A secret in each sender's form: Standard Webhooks' the `whsec_` base64 of 32 bytes.
fn text(sender: Sender) -> &'static str {
    match sender {
        Sender::StandardWebhooks | Sender::GitLabSigned => {
            "whsec_dGhlIGtleSBvZiBhbiBpbmJveCBmZWQgYnkgc3ZpeCE="
        }
        Sender::Stripe => "whsec_stripe_endpoint_secret",
        _ => "It's a Secret to Everybody",
    }
}

#[test]
fn what_it_signs_verifies_for_every_sender_and_a_changed_body_does_not() {
    let id = DeliveryId::parse("72d3162e-cc78-11e3-81ab-4c9367dc0958").unwrap();
    let body = br#"{"type":"invoice.paid"}"#;
    let at = SystemTime::now() - Duration::from_secs(30);
    for sender in Sender::ALL {
        let signer = Signer::for_sender(sender, text(sender)).unwrap();
        let keys = Keys::new(sender, SecretSet::for_sender(sender, text(sender)).unwrap()).unwrap();
        let headers = signer.sign(Outgoing::new(body).id(&id), at);
        let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), at)
            .unwrap_or_else(|refusal| panic!("{sender}: {refusal}"));
        let sends_id = !sender.id_headers().is_empty()
            || matches!(sender, Sender::StandardWebhooks | Sender::GitLabSigned);
        assert_eq!(delivery.id(), sends_id.then_some(id.as_str()), "{sender}");
        if sender == Sender::GitLab {
            continue; // its token signs no body
        }
        let changed = br#"{"type":"invoice.paie"}"#.to_vec().into();
        let refused = Delivery::verify(&keys, &headers, changed, at).unwrap_err();
        assert_eq!(refused.code(), "webhook-signature-mismatch", "{sender}");
    }
}

#[test]
fn the_senders_published_examples_come_out_as_published() {
    // docs.github.com, "Validating webhook deliveries".
    let github = Signer::for_sender(Sender::GitHub, "It's a Secret to Everybody").unwrap();
    let id = DeliveryId::parse("msg_p5jXN8AQM9LWM0D4loKWxJek").unwrap();
    let headers = github.sign(Outgoing::new(b"Hello, World!").id(&id), SystemTime::now());
    assert_eq!(
        headers["x-hub-signature-256"],
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    );
    // The Standard Webhooks libraries' test vector.
    let standard = Signer::for_sender(
        Sender::StandardWebhooks,
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    )
    .unwrap();
    let at = UNIX_EPOCH + Duration::from_secs(1614265330);
    let headers = standard.sign(Outgoing::new(br#"{"test": 2432232314}"#).id(&id), at);
    assert_eq!(
        headers["webhook-signature"],
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
    assert_eq!(headers["webhook-timestamp"], "1614265330");
    assert_eq!(headers["webhook-id"], "msg_p5jXN8AQM9LWM0D4loKWxJek");
}

/// Every header each sender sends, by name: what a signer must set, no more, no less.
fn sent_by(sender: Sender) -> &'static [&'static str] {
    match sender {
        Sender::GitHub => &[
            "x-hub-signature-256",
            "x-github-delivery",
            "x-github-event",
            "x-github-hook-id",
            "x-github-hook-installation-target-type",
            "x-github-hook-installation-target-id",
        ],
        Sender::GitLab => &[
            "x-gitlab-token",
            "idempotency-key",
            "x-gitlab-event-uuid",
            "x-gitlab-event",
        ],
        Sender::GitLabSigned => &[
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature",
            "x-gitlab-event",
        ],
        Sender::Bitbucket => &["x-hub-signature", "x-request-uuid", "x-event-key"],
        Sender::Gitea => &["x-gitea-signature", "x-gitea-delivery", "x-gitea-event"],
        Sender::Forgejo => &[
            "x-forgejo-signature",
            "x-forgejo-delivery",
            "x-forgejo-event",
        ],
        Sender::StandardWebhooks => &["webhook-id", "webhook-timestamp", "webhook-signature"],
        Sender::Stripe => &["stripe-signature"],
        Sender::Slack => &["x-slack-signature", "x-slack-request-timestamp"],
        Sender::Shopify => &[
            "x-shopify-hmac-sha256",
            "x-shopify-webhook-id",
            "x-shopify-topic",
        ],
    }
}

#[test]
fn each_sender_gets_every_header_it_sends_and_no_other_from_a_body_and_its_event() {
    let body = br#"{"type":"invoice.paid"}"#;
    let at = SystemTime::now();
    for sender in Sender::ALL {
        let signer = Signer::for_sender(sender, text(sender))
            .unwrap()
            .github_hook(460_000_001, "repository", 35_129_377);
        let headers = signer.sign(Outgoing::new(body).event("push"), at);
        let mut names: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
        let mut expected = sent_by(sender).to_vec();
        names.sort_unstable();
        expected.sort_unstable();
        assert_eq!(names, expected, "{sender}");
        if let Some(header) = sender.event_header() {
            assert_eq!(headers[header], "push", "{sender}");
        }
        let keys = Keys::new(sender, SecretSet::for_sender(sender, text(sender)).unwrap()).unwrap();
        let delivery = Delivery::verify(&keys, &headers, body.to_vec().into(), at)
            .unwrap_or_else(|refusal| panic!("{sender}: {refusal}"));
        let sends_id = !matches!(sender, Sender::Stripe | Sender::Slack);
        assert_eq!(delivery.id().is_some(), sends_id, "{sender}");
    }
    let github = Signer::for_sender(Sender::GitHub, "s").unwrap();
    let headers = github
        .github_hook(7, "organization", 9)
        .sign(Outgoing::new(body), at);
    assert_eq!(headers["x-github-hook-id"], "7");
    assert_eq!(
        headers["x-github-hook-installation-target-type"],
        "organization"
    );
    assert_eq!(headers["x-github-hook-installation-target-id"], "9");
}

#[test]
fn an_id_made_for_a_delivery_given_none_is_the_same_for_a_retry_only() {
    let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let later = at + Duration::from_secs(1);
    let made = |sender, at, body: &[u8]| {
        let signer = Signer::for_sender(sender, text(sender)).unwrap();
        let headers = signer.sign(Outgoing::new(body), at);
        let header = sender.id_headers().first().copied().unwrap_or("webhook-id");
        headers[header].to_str().unwrap().to_owned()
    };
    let standard = made(Sender::StandardWebhooks, at, b"{}");
    assert!(standard.starts_with("msg_"), "{standard}");
    assert_eq!(standard.len(), "msg_".len() + 32);
    let github = made(Sender::GitHub, at, b"{}");
    assert_eq!(
        github.split('-').map(str::len).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12]
    );
    assert_eq!(made(Sender::GitHub, at, b"{}"), github);
    assert_ne!(made(Sender::GitHub, later, b"{}"), github);
    assert_ne!(made(Sender::GitHub, at, b"[]"), github);
}

#[test]
fn a_signer_refuses_a_secret_in_the_wrong_form_as_keys_do() {
    let raw = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let refused = Signer::new(Sender::StandardWebhooks, raw).unwrap_err();
    assert_eq!(
        refused,
        SecretError::EncodedKey {
            sender: Sender::StandardWebhooks
        }
    );
}
