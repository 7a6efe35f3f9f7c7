//! Signing as each sender signs, written from the senders' documented formulas, apart from
//! the library's own code: what the tests send.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

use faultline::webhooks::Sender;

pub type Headers = Vec<(&'static str, String)>;

pub fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn unix(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The key of a `whsec_` Standard Webhooks secret.
pub fn standard_key(secret: &str) -> Vec<u8> {
    let encoded = secret.strip_prefix("whsec_").unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap()
}

/// The headers `sender` sends for `body` signed with `secret` at `at`, with a delivery id and
/// an event where it sends them.
pub fn signed(sender: Sender, secret: &str, body: &[u8], at: SystemTime) -> Headers {
    match sender {
        Sender::GitHub | Sender::GitLab | Sender::Bitbucket | Sender::Gitea | Sender::Forgejo => {
            signed_by_code_host(sender, secret, body)
        }
        _ => signed_with_time(sender, secret, body, at),
    }
}

/// The code hosts, which sign no timestamp.
fn signed_by_code_host(sender: Sender, secret: &str, body: &[u8]) -> Headers {
    let mac = hmac(secret.as_bytes(), body);
    match sender {
        Sender::GitHub => vec![
            ("x-hub-signature-256", format!("sha256={}", hex(&mac))),
            (
                "x-github-delivery",
                "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
            ),
            ("x-github-event", "push".into()),
        ],
        Sender::GitLab => vec![
            ("x-gitlab-token", secret.into()),
            (
                "idempotency-key",
                "b3c0b2a4-2a4f-4d4e-9b8c-6a1f0e8d7c6b".into(),
            ),
            ("x-gitlab-event", "Push Hook".into()),
        ],
        Sender::Bitbucket => vec![
            ("x-hub-signature", format!("sha256={}", hex(&mac))),
            (
                "x-request-uuid",
                "fa1e3f7b-0c4d-4a5e-8f6a-1b2c3d4e5f60".into(),
            ),
            ("x-event-key", "repo:push".into()),
        ],
        Sender::Gitea => vec![
            ("x-gitea-signature", hex(&mac)),
            (
                "x-gitea-delivery",
                "7f5b7b5e-2d0a-4f4f-9b5e-0e6c1e8a9b71".into(),
            ),
            ("x-gitea-event", "push".into()),
        ],
        Sender::Forgejo => vec![
            ("x-forgejo-signature", hex(&mac)),
            (
                "x-forgejo-delivery",
                "0c6b9f3e-5a1d-4e2b-8c7f-9d0e1f2a3b4c".into(),
            ),
            ("x-forgejo-event", "push".into()),
        ],
        other => panic!("{other} is not a code host"),
    }
}

/// The senders that sign a timestamp, and Shopify.
fn signed_with_time(sender: Sender, secret: &str, body: &[u8], at: SystemTime) -> Headers {
    let ts = unix(at).to_string();
    let mac = |message: &[u8]| hmac(secret.as_bytes(), message);
    match sender {
        Sender::GitLabSigned => {
            let mut headers = standard(&standard_key(secret), "msg_gitlab_1", &ts, body);
            headers.push(("x-gitlab-event", "Push Hook".into()));
            headers
        }
        Sender::StandardWebhooks => standard(
            &standard_key(secret),
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            &ts,
            body,
        ),
        Sender::Stripe => {
            let signed = [ts.as_bytes(), b".", body].concat();
            vec![(
                "stripe-signature",
                format!("t={ts},v1={}", hex(&mac(&signed))),
            )]
        }
        Sender::Slack => {
            let signed = [b"v0:", ts.as_bytes(), b":", body].concat();
            vec![
                ("x-slack-signature", format!("v0={}", hex(&mac(&signed)))),
                ("x-slack-request-timestamp", ts),
            ]
        }
        Sender::Shopify => vec![
            ("x-shopify-hmac-sha256", b64(&mac(body))),
            (
                "x-shopify-webhook-id",
                "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043".into(),
            ),
            ("x-shopify-topic", "orders/create".into()),
        ],
        other => panic!("no signer for {other}"),
    }
}

fn standard(key: &[u8], id: &str, ts: &str, body: &[u8]) -> Headers {
    let signed = [id.as_bytes(), b".", ts.as_bytes(), b".", body].concat();
    vec![
        ("webhook-id", id.into()),
        ("webhook-timestamp", ts.into()),
        (
            "webhook-signature",
            format!("v1,{}", b64(&hmac(key, &signed))),
        ),
    ]
}

/// The header that carries the proof of `sender`.
pub fn proof_header(sender: Sender) -> &'static str {
    match sender {
        Sender::GitHub => "x-hub-signature-256",
        Sender::GitLab => "x-gitlab-token",
        Sender::GitLabSigned | Sender::StandardWebhooks => "webhook-signature",
        Sender::Bitbucket => "x-hub-signature",
        Sender::Gitea => "x-gitea-signature",
        Sender::Forgejo => "x-forgejo-signature",
        Sender::Stripe => "stripe-signature",
        Sender::Slack => "x-slack-signature",
        Sender::Shopify => "x-shopify-hmac-sha256",
        other => panic!("no proof header for {other}"),
    }
}

/// Replaces the value of `name` in `headers`.
pub fn replace(headers: &mut Headers, name: &str, value: String) {
    let slot = headers.iter_mut().find(|(n, _)| *n == name).unwrap();
    slot.1 = value;
}

/// The value of `name` in `headers`.
pub fn value<'a>(headers: &'a Headers, name: &str) -> &'a str {
    &headers.iter().find(|(n, _)| *n == name).unwrap().1
}
