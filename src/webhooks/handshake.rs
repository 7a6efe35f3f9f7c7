//! [`Handshake`]: the setup requests a sender makes when a webhook is created or tested,
//! and what each needs back. A [`Delivery`](super::Delivery) exists only once verified, so
//! a handshake is answered after its signature is checked, never before.

use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;
use http::HeaderValue;
use serde::Deserialize;

use crate::webhooks::sender::Sender;

/// A setup request of a sender, to answer as it asks rather than handle as an event:
///
/// | sender | request | answer |
/// |---|---|---|
/// | GitHub | event `ping`, when the hook is created | any 2xx |
/// | Bitbucket Data Center | event `diagnostics:ping`, "Test connection" | any 2xx |
/// | Slack | body `{"type": "url_verification", "challenge": …}`, when the Request URL is set | 200 with the challenge, within 3 s |
///
/// Its response is 200, with the challenge as `text/plain` for Slack and no body for the
/// pings. The other senders make no setup request of their own; their test buttons send
/// an ordinary event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    sender: Sender,
    challenge: Option<String>,
}

/// Slack's `url_verification`.
#[derive(Deserialize)]
struct SlackChallenge {
    #[serde(rename = "type")]
    kind: String,
    challenge: String,
}

impl Handshake {
    /// The handshake `event` of `sender` with `body` is, if it is one.
    pub(crate) fn of(sender: Sender, event: Option<&str>, body: &[u8]) -> Option<Self> {
        let challenge = match (sender, event?) {
            (Sender::GitHub, "ping") | (Sender::Bitbucket, "diagnostics:ping") => None,
            (Sender::Slack, "url_verification") => {
                let asked: SlackChallenge = serde_json::from_slice(body).ok()?;
                (asked.kind == "url_verification").then_some(())?;
                Some(asked.challenge)
            }
            _ => return None,
        };
        Some(Self { sender, challenge })
    }

    /// The sender that asks.
    pub fn sender(&self) -> Sender {
        self.sender
    }

    /// What Slack asks to be echoed; `None` for a ping.
    pub fn challenge(&self) -> Option<&str> {
        self.challenge.as_deref()
    }
}

impl IntoResponse for Handshake {
    fn into_response(self) -> Response {
        match self.challenge {
            Some(challenge) => (
                [(CONTENT_TYPE, HeaderValue::from_static("text/plain"))],
                challenge,
            )
                .into_response(),
            None => http::StatusCode::OK.into_response(),
        }
    }
}
