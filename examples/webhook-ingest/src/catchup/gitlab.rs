//! The two calls catch-up makes to GitLab's REST API (17.4 and later) for a project's hook:
//! list the hook's events that failed, a page at a time (newest first, `page` and `per_page`,
//! the next page in `X-Next-Page`), and ask for one to be resent, through the shared
//! [`Client`]. The token goes in `PRIVATE-TOKEN`, as GitLab's documentation writes it for
//! personal, project and group access tokens.
//!
//! GitLab lists a hook's events of the last 7 days ("List webhook events", 17.3) and resends
//! one with its `Idempotency-Key` unchanged ("Resend a webhook event", 17.4), which the store
//! keeps as the delivery's id; `X-Gitlab-Event-UUID` is new at each sending, and read only
//! for an event that carries no key.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Map, Value};

use super::client::{CallError, Client, Delivery, Page};
use super::credentials::{Auth, Hook};
use super::limits::GITLAB;

/// Events per page: GitLab's largest for hook events (its `per_page` takes 1 to 20).
pub const PER_PAGE: u32 = 20;
/// The events listed: every answer but a 2xx. GitLab's `server_failure` holds the 5xx and
/// the sendings that got no answer at all (`internal error`: the receiver down or too slow),
/// which is how a push sent while every node was down is recorded.
const FAILED: &str = "client_failure,server_failure";

/// One event as GitLab lists it (`WebHookLog`); the other fields are not needed.
#[derive(serde::Deserialize)]
struct Event {
    id: i64,
    #[serde(default)]
    request_headers: Map<String, Value>,
    /// A status code as text (`"500"`), or `"internal error"` when none came back.
    response_status: Value,
}

impl Event {
    /// The delivery id the event was sent with, if it carries one.
    fn guid(&self) -> Option<String> {
        ["idempotency-key", "x-gitlab-event-uuid"]
            .iter()
            .find_map(|name| {
                self.request_headers
                    .iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case(name))
                    .and_then(|(_, value)| value.as_str())
            })
            .map(str::to_owned)
    }

    /// The status the receiver answered, 0 when it answered none.
    fn status_code(&self) -> i64 {
        match &self.response_status {
            Value::Number(code) => code.as_i64().unwrap_or(0),
            Value::String(code) => code.trim().parse().unwrap_or(0),
            _ => 0,
        }
    }
}

/// The deliveries in a page of GitLab's hook events (a list of `WebHookLog` entities): each
/// event that carries a delivery id. `None` when the page is not such a list.
pub fn deliveries_in(page: &[u8]) -> Option<Vec<Delivery>> {
    let events: Vec<Event> = serde_json::from_slice(page).ok()?;
    let deliveries = events.iter().filter_map(|event| {
        Some(Delivery {
            id: event.id,
            guid: event.guid()?,
            status_code: event.status_code(),
        })
    });
    Some(deliveries.collect())
}

/// A client of GitLab's REST API; each hook names its GitLab. Cheap to clone.
#[derive(Clone)]
pub struct GitLab {
    client: Client,
}

impl GitLab {
    pub fn new(client: Client) -> GitLab {
        GitLab { client }
    }

    /// The page `page` of the hook's failed events, or the newest page.
    pub async fn deliveries(
        &self,
        hook: &Hook,
        auth: &Auth,
        page: Option<&str>,
    ) -> Result<(Page, Option<Duration>), CallError> {
        let query = format!(
            "?per_page={PER_PAGE}&status={FAILED}&page={}",
            page.unwrap_or("1")
        );
        let (response, pause) = self.call(Method::GET, hook, &query, auth, &[]).await?;
        let next = response
            .headers()
            .get("x-next-page")
            .and_then(|next| next.to_str().ok())
            .filter(|next| !next.is_empty() && next.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_owned);
        let unreadable =
            || CallError::Unavailable("GitLab's list of hook events could not be read".into());
        let body = response.bytes().await.map_err(|_| unreadable())?;
        let deliveries = deliveries_in(&body).ok_or_else(unreadable)?;
        Ok((Page { deliveries, next }, pause))
    }

    /// Asks GitLab to send the event `id` again. GitLab answers 422 to an event it cannot
    /// resend (the hook's URL changed since): it is not asked again, and the pass goes on.
    pub async fn redeliver(
        &self,
        hook: &Hook,
        auth: &Auth,
        id: i64,
    ) -> Result<Option<Duration>, CallError> {
        let path = format!("/{id}/resend");
        let unprocessable = [StatusCode::UNPROCESSABLE_ENTITY];
        let (response, pause) = self
            .call(Method::POST, hook, &path, auth, &unprocessable)
            .await?;
        if response.status() == StatusCode::UNPROCESSABLE_ENTITY {
            tracing::warn!(
                event = id,
                "GitLab cannot resend this hook event (422): it is passed over"
            );
        }
        Ok(pause)
    }

    async fn call(
        &self,
        method: Method,
        hook: &Hook,
        rest: &str,
        auth: &Auth,
        answers: &[StatusCode],
    ) -> Result<(reqwest::Response, Option<Duration>), CallError> {
        let (Some(api), Auth::Token(token)) = (hook.api(), auth) else {
            return Err(CallError::Refused(
                "a GitLab hook is asked with a token and a GitLab URL".into(),
            ));
        };
        let url = format!("{api}{}{rest}", hook.deliveries_path());
        self.client
            .call(&GITLAB, answers, |http| {
                Ok(http
                    .request(method.clone(), &url)
                    .header("private-token", token))
            })
            .await
    }
}

#[cfg(test)]
mod tests;
