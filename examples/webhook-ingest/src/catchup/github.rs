//! The two calls catch-up makes to GitHub's REST API, for a repository's, an organization's
//! or an App's hook: list the hook's deliveries a page at a time (newest first, with cursor
//! pagination through the `Link` header), and ask for one to be redelivered. Each call is
//! retried with a doubling backoff on GitHub's 5xx; any other failure is the caller's to
//! judge ([`CallError`]).

use std::time::{Duration, SystemTime};

use reqwest::Method;

use super::credentials::{Auth, Hook};
use super::jwt::app_jwt;
use super::limits::{self, Verdict};

/// GitHub's REST API, where catch-up asks unless told otherwise.
pub const GITHUB_API: &str = "https://api.github.com";
/// The REST API version the calls are written against (GitHub's `X-GitHub-Api-Version`).
const API_VERSION: &str = "2022-11-28";
/// Deliveries per page: GitHub's largest, so that a pass costs the fewest requests.
pub const PER_PAGE: u32 = 100;
/// Tries of one call while GitHub answers 5xx or cannot be reached; then the pass stops and
/// the next one tries again.
const TRIES: u32 = 3;
/// How long one call may take: GitHub answers in well under a second, and a pass holds its
/// inbox's lease meanwhile.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One delivery as GitHub lists it; the other fields of its answer are not needed.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Delivery {
    pub id: i64,
    /// The `X-GitHub-Delivery` it was sent with, which the store keeps.
    pub guid: String,
    pub status_code: i64,
}

impl Delivery {
    /// Whether the receiver answered 2xx.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status_code)
    }
}

/// A page of deliveries, newest first, and the cursor of the next, older page.
pub struct Page {
    pub deliveries: Vec<Delivery>,
    pub next: Option<String>,
}

/// Why a call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// A rate limit: ask nothing of this hook for this long.
    Wait(Duration),
    /// GitHub kept answering 5xx, could not be reached, or answered what cannot be read.
    Unavailable(String),
    /// GitHub refused the credentials or knows no such hook.
    Refused(String),
}

/// A client of GitHub's REST API at one base URL; cheap to clone.
#[derive(Clone)]
pub struct GitHub {
    http: reqwest::Client,
    api: String,
    /// The first wait after a 5xx, doubled after each.
    backoff: Duration,
}

impl GitHub {
    /// A client of the API at `api` (such as [`GITHUB_API`]), waiting `backoff` after a
    /// first 5xx.
    pub fn new(api: &str, backoff: Duration) -> GitHub {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .user_agent(concat!("webhook-ingest/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the TLS roots and settings are valid");
        GitHub {
            http,
            api: api.trim_end_matches('/').to_owned(),
            backoff,
        }
    }

    /// The page of the hook's deliveries at `cursor`, or the newest page.
    pub async fn deliveries(
        &self,
        hook: &Hook,
        auth: &Auth,
        cursor: Option<&str>,
    ) -> Result<(Page, Option<Duration>), CallError> {
        let mut path = format!("{}?per_page={PER_PAGE}", hook.deliveries_path());
        if let Some(cursor) = cursor {
            path.push_str("&cursor=");
            path.push_str(cursor);
        }
        let (response, pause) = self.call(Method::GET, &path, auth).await?;
        let next = response
            .headers()
            .get(reqwest::header::LINK)
            .and_then(|link| link.to_str().ok())
            .and_then(next_cursor);
        let deliveries = response.json().await.map_err(|_| {
            CallError::Unavailable("GitHub's list of deliveries could not be read".into())
        })?;
        Ok((Page { deliveries, next }, pause))
    }

    /// Asks GitHub to send the delivery `id` again.
    pub async fn redeliver(
        &self,
        hook: &Hook,
        auth: &Auth,
        id: i64,
    ) -> Result<Option<Duration>, CallError> {
        let path = format!("{}/{id}/attempts", hook.deliveries_path());
        Ok(self.call(Method::POST, &path, auth).await?.1)
    }

    /// One call, retried on 5xx; the response, and the pause the rate limit asks for before
    /// the next call when this one used the window's last request.
    async fn call(
        &self,
        method: Method,
        path: &str,
        auth: &Auth,
    ) -> Result<(reqwest::Response, Option<Duration>), CallError> {
        let mut wait = self.backoff;
        let mut last = String::new();
        for attempt in 1..=TRIES {
            let bearer = match auth {
                Auth::Token(token) => token.clone(),
                Auth::App { id, key } => app_jwt(*id, key, SystemTime::now())
                    .map_err(|_| CallError::Refused("the App's JWT could not be signed".into()))?,
            };
            let sent = self
                .http
                .request(method.clone(), format!("{}{path}", self.api))
                .bearer_auth(bearer)
                .header("accept", "application/vnd.github+json")
                .header("x-github-api-version", API_VERSION)
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    let pause = limits::exhausted(response.headers(), SystemTime::now());
                    return Ok((response, pause));
                }
                Ok(response) => {
                    match limits::classify(response.status(), response.headers(), SystemTime::now())
                    {
                        Verdict::Wait(wait) => return Err(CallError::Wait(wait)),
                        Verdict::Refused(reason) => return Err(CallError::Refused(reason)),
                        Verdict::Retry => last = format!("GitHub answered {}", response.status()),
                    }
                }
                // The error's text names the URL, which holds nothing secret.
                Err(error) => last = format!("GitHub could not be reached: {error}"),
            }
            if attempt < TRIES {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
        }
        Err(CallError::Unavailable(last))
    }
}

/// The `cursor` of the `rel="next"` link of a `Link` header. Only the cursor is taken, never
/// the URL: the credentials go nowhere but the configured API.
fn next_cursor(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        if !params.split(';').any(|p| p.trim() == "rel=\"next\"") {
            return None;
        }
        let url = url.trim().trim_start_matches('<').trim_end_matches('>');
        let query = url.split_once('?')?.1;
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("cursor="))
            .filter(|cursor| {
                !cursor.is_empty()
                    && cursor
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_=%".contains(&b))
            })
            .map(str::to_owned)
    })
}

#[cfg(test)]
mod tests;
