//! What catch-up needs to ask GitHub or GitLab about an inbox's hook: which hook, and with
//! what credentials. Read from the management API's JSON, kept as a [`CatchUpRow`], and shown back
//! without its secrets.

use std::borrow::Cow;

use jsonwebtoken::EncodingKey;
use serde_json::{json, Value};

use crate::error::IngestError;
use crate::ids::{InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::catchup::CatchUpRow;

/// The longest token or private key accepted, in bytes: GitHub's tokens are under 300 bytes
/// and a 4096-bit RSA key in PEM is about 3.3 KB; past this it is no credential.
const MAX_SECRET_BYTES: usize = 8 * 1024;
/// The longest GitLab URL accepted: a host and a path prefix are far shorter.
const MAX_URL_BYTES: usize = 512;
/// Where GitLab's REST API is under a GitLab's URL.
const GITLAB_API_PATH: &str = "/api/v4";
/// How a GitLab hook's project is kept in the `hook_owner` column: the project's API URL,
/// `{gitlab_url}/api/v4/projects/{project_id}`, so that the GitLab and the project together
/// name the hook's owner, as `owner/name` does on GitHub.
const GITLAB_PROJECTS: &str = "/api/v4/projects/";

/// The longest repository (`owner/name`) or organization accepted: GitHub allows 39 bytes
/// for an owner and 100 for a repository name.
const MAX_NAME_BYTES: usize = 140;

/// The hook whose deliveries are listed and redelivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hook {
    /// A repository's webhook: `owner/name` and the hook's id.
    Repository { repository: String, id: i64 },
    /// An organization's webhook: its login and the hook's id.
    Organization { organization: String, id: i64 },
    /// A GitHub App's webhook, the App's one hook.
    App,
    /// A GitLab project's webhook: the GitLab's URL (`https://gitlab.com`, or a self-managed
    /// one's), the project's id and the hook's id.
    GitLab { url: String, project: i64, id: i64 },
}

impl Hook {
    /// The REST path of the hook's deliveries, from the API's root.
    pub fn deliveries_path(&self) -> String {
        match self {
            Hook::Repository { repository, id } => {
                format!("/repos/{repository}/hooks/{id}/deliveries")
            }
            Hook::Organization { organization, id } => {
                format!("/orgs/{organization}/hooks/{id}/deliveries")
            }
            Hook::App => "/app/hook/deliveries".to_owned(),
            Hook::GitLab { project, id, .. } => format!("/projects/{project}/hooks/{id}/events"),
        }
    }

    /// The root of the REST API the hook is asked through: GitLab's under its URL; `None` for
    /// GitHub's, which the service is configured with.
    pub fn api(&self) -> Option<String> {
        match self {
            Hook::GitLab { url, .. } => Some(format!("{url}{GITLAB_API_PATH}")),
            _ => None,
        }
    }

    /// The provider the hook is asked through, in log lines and reasons.
    pub fn provider(&self) -> &'static str {
        match self {
            Hook::GitLab { .. } => "GitLab",
            _ => "GitHub",
        }
    }

    /// The provider as a metric's label names it, as `Provider` does.
    pub fn provider_label(&self) -> &'static str {
        match self {
            Hook::GitLab { .. } => "gitlab",
            _ => "github",
        }
    }

    /// The hook as the store keeps it: its kind, its owner and its id.
    fn stored(&self) -> (&'static str, String, i64) {
        match self {
            Hook::Repository { repository, id } => ("repository", repository.clone(), *id),
            Hook::Organization { organization, id } => ("organization", organization.clone(), *id),
            Hook::App => ("app", String::new(), 0),
            Hook::GitLab { url, project, id } => {
                ("gitlab", format!("{url}{GITLAB_PROJECTS}{project}"), *id)
            }
        }
    }

    /// The hook a row names, or `None` for a kind this build does not know.
    pub fn of(row: &CatchUpRow) -> Option<Hook> {
        match row.hook_kind.as_str() {
            "repository" => Some(Hook::Repository {
                repository: row.hook_owner.clone(),
                id: row.hook_id,
            }),
            "organization" => Some(Hook::Organization {
                organization: row.hook_owner.clone(),
                id: row.hook_id,
            }),
            "app" => Some(Hook::App),
            "gitlab" => {
                let (url, project) = row.hook_owner.rsplit_once(GITLAB_PROJECTS)?;
                Some(Hook::GitLab {
                    url: url.to_owned(),
                    project: project.parse().ok()?,
                    id: row.hook_id,
                })
            }
            _ => None,
        }
    }

    /// The hook as it is shown: what names it, never a credential.
    pub fn describe(&self) -> Value {
        match self {
            Hook::Repository { repository, id } => json!({ "repository": repository, "id": id }),
            Hook::Organization { organization, id } => {
                json!({ "organization": organization, "id": id })
            }
            Hook::App => json!({ "app": true }),
            Hook::GitLab { url, project, id } => {
                json!({ "gitlab_url": url, "project_id": project, "id": id })
            }
        }
    }
}

/// How GitHub is asked: a token (a fine-grained or classic personal access token, or an
/// installation token) sent as a bearer token, or a GitHub App's id and private key, whose
/// JWT is the bearer token. No `Debug`: it is a secret.
#[derive(Clone)]
pub enum Auth {
    Token(String),
    App { id: i64, key: EncodingKey },
}

impl Auth {
    /// The credentials a row keeps, or why they cannot be used.
    pub fn of(row: &CatchUpRow) -> Result<Auth, &'static str> {
        match (&row.token, row.app_id, &row.private_key) {
            (Some(token), _, _) => Ok(Auth::Token(token.clone())),
            (None, Some(id), Some(pem)) => EncodingKey::from_rsa_pem(pem.as_bytes())
                .map(|key| Auth::App { id, key })
                .map_err(|_| "the App's private key is not an RSA key in PEM"),
            _ => Err("no token and no App key"),
        }
    }
}

/// The body of `PUT …/inboxes/{inbox}/catchup`: for a GitHub inbox, a repository or an
/// organization and a hook id with a token, or an App's id and private key; for a GitLab
/// inbox, the GitLab's URL, a project id and a hook id with a token.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatchUpRequest {
    gitlab_url: Option<String>,
    project_id: Option<i64>,
    repository: Option<String>,
    organization: Option<String>,
    hook_id: Option<i64>,
    token: Option<String>,
    app_id: Option<i64>,
    private_key: Option<String>,
}

fn invalid(field: &'static str, problem: impl Into<Cow<'static, str>>) -> IngestError {
    IngestError::InvalidField {
        field,
        problem: problem.into(),
    }
}

/// `name` if it is a GitHub login or `owner/name` (`parts` segments of letters, digits, `.`,
/// `-` and `_`): it becomes part of a URL path.
fn github_name(field: &'static str, name: &str, parts: usize) -> Result<String, IngestError> {
    let fine = name.len() <= MAX_NAME_BYTES
        && name.split('/').count() == parts
        && name.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        });
    if fine {
        Ok(name.to_owned())
    } else if parts == 2 {
        Err(invalid(field, "must be `owner/name`"))
    } else {
        Err(invalid(field, "must be an organization's login"))
    }
}

/// `text` if it is a GitLab's URL the token may be sent to: `https://`, or `http://` to this
/// machine only (a token must not cross a network in clear); a host and no user, query or
/// fragment. A trailing slash is dropped.
fn gitlab_url(text: &str) -> Result<String, IngestError> {
    let problem = "must be the GitLab's `https://` URL (`http://` only to 127.0.0.1, ::1 or \
                   localhost), with no user, query or fragment";
    let url = reqwest::Url::parse(text).map_err(|_| invalid("gitlab_url", problem))?;
    let loopback = url.host_str().is_some_and(|host| {
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    let fine = text.len() <= MAX_URL_BYTES
        && (url.scheme() == "https" || (url.scheme() == "http" && loopback))
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
        && !text.contains(['?', '#']);
    if fine {
        Ok(url.as_str().trim_end_matches('/').to_owned())
    } else {
        Err(invalid("gitlab_url", problem))
    }
}

fn secret(field: &'static str, value: String) -> Result<String, IngestError> {
    if value.trim().is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if value.len() > MAX_SECRET_BYTES {
        return Err(invalid(
            field,
            format!("must be at most {MAX_SECRET_BYTES} bytes"),
        ));
    }
    Ok(value)
}

impl CatchUpRequest {
    /// The row this request keeps for the inbox `inbox` of `instance`, whose provider is
    /// `provider`, or the field it gets wrong. The private key is parsed here, so that a key GitHub
    /// would refuse is refused now.
    pub fn into_row(
        self,
        instance: InstanceId,
        inbox: InboxId,
        provider: Provider,
    ) -> Result<CatchUpRow, IngestError> {
        let hook = match provider {
            Provider::Gitlab => self.gitlab_hook()?,
            _ => self.hook()?,
        };
        let (hook_kind, hook_owner, hook_id) = hook.stored();
        if hook != Hook::App && hook_id <= 0 {
            return Err(invalid("hook_id", "must be a positive integer"));
        }
        if self.app_id.is_some_and(|id| id <= 0) {
            return Err(invalid("app_id", "must be a positive integer"));
        }
        let app_id = self.app_id;
        let (token, private_key) = self.secrets(&hook)?;
        Ok(CatchUpRow {
            instance,
            inbox,
            hook_kind: hook_kind.to_owned(),
            hook_owner,
            hook_id,
            token,
            app_id,
            private_key,
            cursor: 0,
            failing: None,
            last_success_ms: 0,
            pending: 0,
        })
    }

    /// The GitLab hook the request names: the GitLab's URL, the project's id and the hook's.
    fn gitlab_hook(&self) -> Result<Hook, IngestError> {
        if self.repository.is_some() || self.organization.is_some() || self.app_id.is_some() {
            return Err(invalid(
                "repository",
                "a GitLab inbox takes `gitlab_url`, `project_id`, `hook_id` and `token`",
            ));
        }
        let needed = |field| invalid(field, "is needed for a GitLab inbox");
        let url = gitlab_url(
            self.gitlab_url
                .as_deref()
                .ok_or_else(|| needed("gitlab_url"))?,
        )?;
        let project = self.project_id.ok_or_else(|| needed("project_id"))?;
        if project <= 0 {
            return Err(invalid("project_id", "must be a positive integer"));
        }
        let id = self.hook_id.ok_or_else(|| needed("hook_id"))?;
        Ok(Hook::GitLab { url, project, id })
    }

    /// The hook the request names: exactly one of a repository, an organization (each with
    /// its hook's id) and an App.
    fn hook(&self) -> Result<Hook, IngestError> {
        if self.gitlab_url.is_some() || self.project_id.is_some() {
            return Err(invalid(
                "gitlab_url",
                "is for a GitLab inbox; a GitHub inbox takes a repository, an organization or an App",
            ));
        }
        let hook_id = |with: &'static str| {
            self.hook_id
                .ok_or_else(|| invalid("hook_id", format!("is needed with `{with}`")))
        };
        match (&self.repository, &self.organization, self.app_id) {
            (Some(repository), None, None) => Ok(Hook::Repository {
                repository: github_name("repository", repository, 2)?,
                id: hook_id("repository")?,
            }),
            (None, Some(organization), None) => Ok(Hook::Organization {
                organization: github_name("organization", organization, 1)?,
                id: hook_id("organization")?,
            }),
            (None, None, Some(_)) if self.hook_id.is_none() => Ok(Hook::App),
            _ => Err(invalid(
                "repository",
                "give one of `repository` and `hook_id`, `organization` and `hook_id`, \
                 or `app_id` and `private_key`",
            )),
        }
    }

    /// The token, or the App's private key (which must parse), as `hook` takes them.
    fn secrets(self, hook: &Hook) -> Result<(Option<String>, Option<String>), IngestError> {
        match (hook, self.token, self.private_key) {
            (Hook::App, None, Some(pem)) => {
                let pem = secret("private_key", pem)?;
                EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|_| {
                    invalid("private_key", "must be the App's RSA private key in PEM")
                })?;
                Ok((None, Some(pem)))
            }
            (Hook::App, _, _) => Err(invalid(
                "private_key",
                "is needed with `app_id`, and no `token`",
            )),
            (_, Some(token), None) => Ok((Some(secret("token", token)?), None)),
            (_, _, _) => Err(invalid(
                "token",
                "is needed with a repository or organization hook, and no `private_key`",
            )),
        }
    }
}

/// An inbox's catch-up as the API shows it: the hook, how it is asked, and how it goes;
/// never the token or the private key.
pub fn describe(row: &CatchUpRow) -> Value {
    let hook = Hook::of(row).map_or(Value::Null, |hook| hook.describe());
    let mut shown = json!({
        "inbox": row.inbox,
        "hook": hook,
        "auth": if row.token.is_some() { "token" } else { "app" },
        "cursor": row.cursor,
        "last_success_ms": row.last_success_ms,
        "failing": row.failing,
        "pending_redeliveries": row.pending,
    });
    if let Some(app_id) = row.app_id {
        shown["app_id"] = app_id.into();
    }
    shown
}

#[cfg(test)]
mod tests;
