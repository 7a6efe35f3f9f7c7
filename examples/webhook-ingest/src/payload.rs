//! The commits of a push, read from each provider's payload.
//!
//! The rule is the one a sender can live with: a push is refused only when it cannot be
//! understood at all (no ref, no repository, a commit without its id). Anything a real sender
//! may leave out (a commit's author, date or message, a change's `commits`) is stored as
//! absent, because a provider does not redeliver after a 4xx and refusing would lose the
//! whole push for one optional field.

mod lenient;

use serde_json::Value;

use faultline::Fault;

use lenient::{fields, List, Object, Text};

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
    match shape {
        Shape::Github | Shape::Gitlab => parse_flat(shape, body),
        Shape::BitbucketCloud => parse_bitbucket_cloud(&parse_json(body)?),
        Shape::BitbucketServer => parse_bitbucket_server(&parse_json(body)?),
    }
}

fn parse_json<'de, T: serde::Deserialize<'de>>(body: &'de [u8]) -> Result<T, Malformed> {
    serde_json::from_slice(body).map_err(|e| Malformed(format!("is not valid JSON: {e}")))
}

fields! {
    /// What a GitHub push (and Gitea's and Forgejo's, which are GitHub's) or a GitLab push
    /// is read for: one ref and a `commits` array, and the repository each names its way.
    struct FlatPush {
        git_ref: Text = "ref",
        repository: Object<Repository> = "repository",
        project: Object<Project> = "project",
        commits: List<Object<FlatCommit>> = "commits",
    }
}

fields! {
    /// GitHub's repository.
    struct Repository {
        full_name: Text = "full_name",
        name: Text = "name",
        owner: Object<Named> = "owner",
    }
}

fields! {
    /// GitLab's project.
    struct Project {
        path_with_namespace: Text = "path_with_namespace",
    }
}

fields! {
    /// A commit's author, or a repository's owner.
    struct Named {
        name: Text = "name",
    }
}

fields! {
    /// A commit of a GitHub or GitLab push.
    struct FlatCommit {
        id: Text = "id",
        message: Text = "message",
        author: Object<Named> = "author",
        timestamp: Text = "timestamp",
    }
}

/// GitHub and GitLab: one ref and a `commits` array; a push that deletes a ref or pushes a
/// tag may carry none.
fn parse_flat(shape: Shape, body: &[u8]) -> Result<Vec<Commit>, Malformed> {
    let push: Object<FlatPush> = parse_json(body)?;
    let push = push.0.unwrap_or_default();
    let repository = if shape == Shape::Gitlab {
        let project = push.project.0.unwrap_or_default();
        project
            .path_with_namespace
            .0
            .ok_or_else(|| Malformed::missing("project.path_with_namespace"))?
    } else {
        github_repository(push.repository.0.unwrap_or_default())?
    };
    let git_ref = push.git_ref.0.ok_or_else(|| Malformed::missing("ref"))?;
    let branch = git_ref.strip_prefix("refs/heads/").unwrap_or(&git_ref);
    let commits = match push.commits {
        List::Absent => Vec::new(),
        List::Items(commits) => commits,
        List::Other => return Err(Malformed::missing("commits")),
    };
    commits
        .into_iter()
        .enumerate()
        .map(|(i, commit)| {
            let commit = commit.0.unwrap_or_default();
            Ok(Commit {
                sha: commit
                    .id
                    .0
                    .ok_or_else(|| Malformed::missing(format_args!("commits[{i}].id")))?,
                message: commit.message.0,
                author: commit.author.0.and_then(|author| author.name.0),
                timestamp: commit.timestamp.0,
                repository: repository.clone(),
                branch: branch.to_owned(),
            })
        })
        .collect()
}

/// GitHub names the repository `full_name`; payloads from before that field (still sent by
/// some GitHub Enterprise hooks) carry only `owner.name` and `name`.
fn github_repository(repository: Repository) -> Result<String, Malformed> {
    if let Some(full_name) = repository.full_name.0 {
        return Ok(full_name);
    }
    let name = (repository.name.0).ok_or_else(|| Malformed::missing("repository.full_name"))?;
    Ok(match repository.owner.0.and_then(|owner| owner.name.0) {
        Some(owner) => format!("{owner}/{name}"),
        None => name,
    })
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
