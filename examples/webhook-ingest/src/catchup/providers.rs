//! The provider a hook is asked through: GitHub's client for a repository's, an
//! organization's or an App's hook, GitLab's for a project's. A pass asks through this and
//! never learns which it is.

use std::time::Duration;

use super::client::{CallError, Client, Page};
use super::credentials::{Auth, Hook};
use super::github::GitHub;
use super::gitlab::GitLab;

/// Both providers' clients, sharing one HTTP client; cheap to clone.
#[derive(Clone)]
pub struct Providers {
    github: GitHub,
    gitlab: GitLab,
}

impl Providers {
    /// The clients, GitHub's at `github_api`, waiting `backoff` after a first 5xx.
    pub fn new(github_api: &str, backoff: Duration) -> Providers {
        let client = Client::new(backoff);
        Providers {
            github: GitHub::new(github_api, client.clone()),
            gitlab: GitLab::new(client),
        }
    }

    /// The page of the hook's deliveries at `next` (from the page before), or the newest.
    pub async fn deliveries(
        &self,
        hook: &Hook,
        auth: &Auth,
        next: Option<&str>,
    ) -> Result<(Page, Option<Duration>), CallError> {
        match hook {
            Hook::GitLab { .. } => self.gitlab.deliveries(hook, auth, next).await,
            _ => self.github.deliveries(hook, auth, next).await,
        }
    }

    /// Asks the provider to send the delivery `id` again.
    pub async fn redeliver(
        &self,
        hook: &Hook,
        auth: &Auth,
        id: i64,
    ) -> Result<Option<Duration>, CallError> {
        match hook {
            Hook::GitLab { .. } => self.gitlab.redeliver(hook, auth, id).await,
            _ => self.github.redeliver(hook, auth, id).await,
        }
    }
}
