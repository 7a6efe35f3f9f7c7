//! What catch-up needs to ask GitHub about an inbox's hook: which hook, and with what
//! credentials. Read from the management API's JSON, kept as a [`CatchUpRow`], and shown back
//! without its secrets.

use std::borrow::Cow;

use jsonwebtoken::EncodingKey;
use serde_json::{json, Value};

use crate::error::IngestError;
use crate::store::catchup::CatchUpRow;

/// The longest token or private key accepted, in bytes: GitHub's tokens are under 300 bytes
/// and a 4096-bit RSA key in PEM is about 3.3 KB; past this it is no credential.
const MAX_SECRET_BYTES: usize = 8 * 1024;
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

/// The body of `PUT …/inboxes/{inbox}/catchup`: a repository or an organization and a hook
/// id with a token, or an App's id and private key.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatchUpRequest {
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
    /// The row this request keeps for the inbox `inbox` of `instance`, or the field it gets
    /// wrong. The private key is parsed here, so that a key GitHub would refuse is refused now.
    pub fn into_row(self, instance: String, inbox: String) -> Result<CatchUpRow, IngestError> {
        let hook = self.hook()?;
        let (hook_kind, hook_owner, hook_id) = match &hook {
            Hook::Repository { repository, id } => ("repository", repository.clone(), *id),
            Hook::Organization { organization, id } => ("organization", organization.clone(), *id),
            Hook::App => ("app", String::new(), 0),
        };
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

    /// The hook the request names: exactly one of a repository, an organization (each with
    /// its hook's id) and an App.
    fn hook(&self) -> Result<Hook, IngestError> {
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
