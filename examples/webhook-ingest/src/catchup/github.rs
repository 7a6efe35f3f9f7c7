//! The two calls catch-up makes to GitHub's REST API, for a repository's, an organization's
//! or an App's hook: list the hook's deliveries a page at a time (newest first, with cursor
//! pagination through the `Link` header), and ask for one to be redelivered, through the
//! shared [`Client`].

use std::time::{Duration, SystemTime};

use reqwest::Method;

pub use super::client::Delivery;
use super::client::{CallError, Client, Page};
use super::credentials::{Auth, Hook};
use super::jwt::app_jwt;
use super::limits::GITHUB;

/// GitHub's REST API, where catch-up asks unless told otherwise.
pub const GITHUB_API: &str = "https://api.github.com";
/// The REST API version the calls are written against (GitHub's `X-GitHub-Api-Version`).
const API_VERSION: &str = "2022-11-28";
/// Deliveries per page: GitHub's largest, so that a pass costs the fewest requests.
pub const PER_PAGE: u32 = 100;

/// A client of GitHub's REST API at one base URL; cheap to clone.
#[derive(Clone)]
pub struct GitHub {
    client: Client,
    api: String,
}

impl GitHub {
    /// A client of the API at `api` (such as [`GITHUB_API`]).
    pub fn new(api: &str, client: Client) -> GitHub {
        GitHub {
            client,
            api: api.trim_end_matches('/').to_owned(),
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

    /// One call with GitHub's headers; an App's JWT is signed anew at each try.
    async fn call(
        &self,
        method: Method,
        path: &str,
        auth: &Auth,
    ) -> Result<(reqwest::Response, Option<Duration>), CallError> {
        let url = format!("{}{path}", self.api);
        self.client
            .call(&GITHUB, &[], |http| {
                let bearer = match auth {
                    Auth::Token(token) => token.clone(),
                    Auth::App { id, key } => {
                        app_jwt(*id, key, SystemTime::now()).map_err(|_| {
                            CallError::Refused("the App's JWT could not be signed".into())
                        })?
                    }
                };
                Ok(http
                    .request(method.clone(), &url)
                    .bearer_auth(bearer)
                    .header("accept", "application/vnd.github+json")
                    .header("x-github-api-version", API_VERSION))
            })
            .await
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
