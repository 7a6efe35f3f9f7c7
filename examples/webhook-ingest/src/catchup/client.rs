//! What the providers' clients share ([`github`](super::github), [`gitlab`](super::gitlab)):
//! a delivery as a pass reads it, a page of them, why a call failed, and the call itself,
//! retried with a doubling backoff while the provider answers 5xx or cannot be reached; any
//! other failure is judged by the provider's [`Limits`].

use std::time::{Duration, SystemTime};

use reqwest::{RequestBuilder, StatusCode};

use super::limits::{self, Limits, Verdict};

/// Tries of one call while the provider answers 5xx or cannot be reached; then the pass stops
/// and the next one tries again.
const TRIES: u32 = 3;
/// How long one call may take: GitHub and GitLab answer in well under a second, and a pass
/// holds its inbox's lease meanwhile.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One delivery as the provider lists it; the other fields of its answer are not needed.
/// Read as GitHub's `hook-delivery-item` names the fields; GitLab's hook events are mapped to
/// it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Delivery {
    /// The provider's id of the delivery, growing with time: GitHub's delivery id, GitLab's
    /// hook event id.
    pub id: i64,
    /// The delivery id it was sent with, which the store keeps (GitHub's
    /// `X-GitHub-Delivery`, GitLab's `Idempotency-Key`).
    pub guid: String,
    /// The status the receiver answered; 0 when it answered none.
    pub status_code: i64,
}

impl Delivery {
    /// Whether the receiver answered 2xx.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status_code)
    }
}

/// A page of deliveries, newest first, and where the next, older page is.
pub struct Page {
    pub deliveries: Vec<Delivery>,
    /// GitHub's cursor, or GitLab's page number.
    pub next: Option<String>,
}

/// Why a call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// A rate limit: ask nothing of this hook for this long.
    Wait(Duration),
    /// The provider kept answering 5xx, could not be reached, or answered what cannot be read.
    Unavailable(String),
    /// The provider refused the credentials or knows no such hook.
    Refused(String),
}

/// The waits between the tries of one call: `first`, doubled after each, one fewer than
/// [`TRIES`].
fn retry_waits(first: Duration) -> impl Iterator<Item = Duration> {
    (0..TRIES - 1).map(move |n| first * 2u32.pow(n))
}

/// An HTTP client for a provider's API; cheap to clone.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    /// The first wait after a 5xx, doubled after each.
    backoff: Duration,
}

impl Client {
    /// A client waiting `backoff` after a first 5xx.
    pub fn new(backoff: Duration) -> Client {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .user_agent(concat!("webhook-ingest/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the TLS roots and settings are valid");
        Client { http, backoff }
    }

    /// One call, the request made anew by `request` at each try, retried on 5xx; the
    /// response (a success, or one of `answers`, statuses the caller reads itself), and the
    /// pause the rate limit asks for before the next call when this one used the window's
    /// last request.
    pub async fn call(
        &self,
        limits: &Limits,
        answers: &[StatusCode],
        request: impl Fn(&reqwest::Client) -> Result<RequestBuilder, CallError>,
    ) -> Result<(reqwest::Response, Option<Duration>), CallError> {
        let provider = limits.provider;
        let mut waits = retry_waits(self.backoff);
        let last = loop {
            let last = match request(&self.http)?.send().await {
                Ok(response)
                    if response.status().is_success() || answers.contains(&response.status()) =>
                {
                    let pause = limits::exhausted(response.headers(), SystemTime::now(), limits);
                    return Ok((response, pause));
                }
                Ok(response) => {
                    let now = SystemTime::now();
                    match limits::classify(response.status(), response.headers(), now, limits) {
                        Verdict::Wait(wait) => return Err(CallError::Wait(wait)),
                        Verdict::Refused(reason) => return Err(CallError::Refused(reason)),
                        Verdict::Retry => format!("{provider} answered {}", response.status()),
                    }
                }
                // The error's text names the URL, which holds nothing secret.
                Err(error) => format!("{provider} could not be reached: {error}"),
            };
            match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => break last,
            }
        };
        Err(CallError::Unavailable(last))
    }
}

#[cfg(test)]
mod tests;
