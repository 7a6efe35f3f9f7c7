//! The commits of a push, read from each provider's payload.
//!
//! The rule is the one a sender can live with: a push is refused only when it cannot be
//! understood at all (no ref, no repository, a commit without its id). Anything a real sender
//! may leave out (a commit's author, date or message, a change's `commits`) is stored as
//! absent, because a provider does not redeliver after a 4xx and refusing would lose the
//! whole push for one optional field.

use serde_json::Value;

use faultline::Fault;

use crate::provider::Shape;
use crate::store::Commit;

/// A push payload that cannot be understood: what it lacks or what is wrong with it.
#[derive(Debug, thiserror::Error, Fault)]
#[error("the push payload {0}")]
#[fault(status = 400, code = "malformed-payload")]
pub struct Malformed(String);

impl Malformed {
    /// A push payload that lacks `field` or holds the wrong type there.
    pub fn missing(field: impl std::fmt::Display) -> Self {
        Self(format!("lacks `{field}` or it has the wrong type"))
    }
}

/// Git's name for "no commit": the `toHash` of a deleted ref.
const NULL_SHA: &str = "0000000000000000000000000000000000000000";

/// The commits of a push payload of `shape`.
pub fn parse_push(shape: Shape, body: &[u8]) -> Result<Vec<Commit>, Malformed> {
    let payload: Value =
        serde_json::from_slice(body).map_err(|e| Malformed(format!("is not valid JSON: {e}")))?;
    match shape {
        Shape::Github => parse_flat(&payload, github_repository(&payload)?),
        Shape::Gitlab => parse_flat(
            &payload,
            text_at(&payload, &["project", "path_with_namespace"], "")?,
        ),
        Shape::BitbucketCloud => parse_bitbucket_cloud(&payload),
        Shape::BitbucketServer => parse_bitbucket_server(&payload),
    }
}

/// GitHub names the repository `full_name`; payloads from before that field (still sent by
/// some GitHub Enterprise hooks) carry only `owner.name` and `name`.
fn github_repository(payload: &Value) -> Result<String, Malformed> {
    if let Ok(full_name) = text_at(payload, &["repository", "full_name"], "") {
        return Ok(full_name.to_owned());
    }
    let name = text_at(payload, &["repository", "name"], "")
        .map_err(|_| Malformed::missing("repository.full_name"))?;
    Ok(match optional(payload, &["repository", "owner", "name"]) {
        Some(owner) => format!("{owner}/{name}"),
        None => name.to_owned(),
    })
}

/// GitHub and GitLab: one ref and a `commits` array; a push that deletes a ref or pushes a
/// tag may carry none.
fn parse_flat(payload: &Value, repository: impl Into<String>) -> Result<Vec<Commit>, Malformed> {
    let repository = repository.into();
    let git_ref = text_at(payload, &["ref"], "")?;
    let branch = git_ref.strip_prefix("refs/heads/").unwrap_or(git_ref);
    let commits = optional_array(payload, "commits", "")?;
    commits
        .iter()
        .enumerate()
        .map(|(i, commit)| {
            Ok(Commit {
                sha: text_at(commit, &["id"], &format!("commits[{i}]."))?.to_owned(),
                message: optional(commit, &["message"]),
                author: optional(commit, &["author", "name"]),
                timestamp: optional(commit, &["timestamp"]),
                repository: repository.clone(),
                branch: branch.to_owned(),
            })
        })
        .collect()
}

/// Bitbucket Cloud: a change whose `new` is null deleted a ref and brings no commits; a tag
/// push comes without a `commits` key at all.
fn parse_bitbucket_cloud(payload: &Value) -> Result<Vec<Commit>, Malformed> {
    let repository = text_at(payload, &["repository", "full_name"], "")?;
    let push = payload
        .get("push")
        .ok_or_else(|| Malformed::missing("push"))?;
    let changes = array_at(push, "changes", "push.")?;
    let mut stored = Vec::new();
    for (c, change) in changes.iter().enumerate() {
        let at = format!("push.changes[{c}].");
        if change.get("new").is_none_or(Value::is_null) {
            continue;
        }
        let branch = text_at(change, &["new", "name"], &at)?;
        for (i, commit) in optional_array(change, "commits", &at)?.iter().enumerate() {
            stored.push(Commit {
                sha: text_at(commit, &["hash"], &format!("{at}commits[{i}]."))?.to_owned(),
                message: optional(commit, &["message"]),
                author: bitbucket_author(commit),
                timestamp: optional(commit, &["date"]),
                repository: repository.to_owned(),
                branch: branch.to_owned(),
            });
        }
    }
    Ok(stored)
}

/// Bitbucket Cloud sends `author` as `{raw, user}`; Atlassian's documented example sends the
/// user object itself, without `raw`. The git author line is preferred, then the account's
/// display name.
fn bitbucket_author(commit: &Value) -> Option<String> {
    optional(commit, &["author", "raw"])
        .or_else(|| optional(commit, &["author", "user", "display_name"]))
        .or_else(|| optional(commit, &["author", "display_name"]))
}

/// Bitbucket Data Center names no commits, only each ref's new tip (`toHash`): that tip is
/// stored as the one commit of the change, its message, author and date absent. A deleted
/// ref stores nothing.
fn parse_bitbucket_server(payload: &Value) -> Result<Vec<Commit>, Malformed> {
    let project = text_at(payload, &["repository", "project", "key"], "")?;
    let slug = text_at(payload, &["repository", "slug"], "")?;
    let repository = format!("{project}/{slug}");
    let changes = array_at(payload, "changes", "")?;
    let mut stored = Vec::new();
    for (c, change) in changes.iter().enumerate() {
        let at = format!("changes[{c}].");
        let tip = text_at(change, &["toHash"], &at)?;
        if change.get("type").and_then(Value::as_str) == Some("DELETE") || tip == NULL_SHA {
            continue;
        }
        let branch = text_at(change, &["ref", "displayId"], &at)?;
        stored.push(Commit {
            sha: tip.to_owned(),
            message: None,
            author: None,
            timestamp: None,
            repository: repository.clone(),
            branch: branch.to_owned(),
        });
    }
    Ok(stored)
}

/// The string at `path` below `value`; `prefix` is where `value` sits, for the error.
fn text_at<'a>(value: &'a Value, path: &[&str], prefix: &str) -> Result<&'a str, Malformed> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| Malformed::missing(format_args!("{prefix}{}", path.join("."))))
}

/// The string at `path`, or `None` when it is absent, null or not a string: an optional
/// field that a sender got wrong is as good as absent, and no reason to lose the push.
fn optional(value: &Value, path: &[&str]) -> Option<String> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn array_at<'a>(value: &'a Value, key: &str, prefix: &str) -> Result<&'a [Value], Malformed> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| Malformed::missing(format_args!("{prefix}{key}")))
}

/// The array at `key`; absent or null is an empty list, anything else but an array is
/// malformed (a sender that writes `"commits": 3` is not one we understand).
fn optional_array<'a>(value: &'a Value, key: &str, prefix: &str) -> Result<&'a [Value], Malformed> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(_) => array_at(value, key, prefix),
    }
}

#[cfg(test)]
mod tests;
