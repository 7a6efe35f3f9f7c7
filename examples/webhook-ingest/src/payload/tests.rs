use serde_json::json;

use super::*;
use crate::provider::{classify, Event, Provider};

/// Every push among the vendored payloads (`tests/fixtures`, each one a provider really
/// sent) reads to exactly the commits `expected.json` lists for it: the parser alone, where
/// `tests/provider_fixtures.rs` sends the same payloads to the service over TCP.
#[test]
fn every_vendored_push_reads_to_the_commits_its_manifest_lists() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let manifest = std::fs::read(format!("{dir}/expected.json")).unwrap();
    let manifest: Vec<Value> = serde_json::from_slice(&manifest).unwrap();
    let mut shapes = Vec::new();
    for case in manifest {
        let provider = Provider::parse(case["vcs"].as_str().unwrap()).unwrap();
        let Event::Push(shape) = classify(provider, case["event"].as_str().unwrap()) else {
            continue;
        };
        let file = case["file"].as_str().unwrap();
        let body = std::fs::read(format!("{dir}/{file}")).unwrap();
        let text = |commit: &Value, key: &str| commit[key].as_str().map(str::to_owned);
        let listed: Vec<Commit> = (case["commits"].as_array().unwrap().iter())
            .map(|c| Commit {
                sha: text(c, "sha").unwrap(),
                message: text(c, "message"),
                author: text(c, "author"),
                timestamp: text(c, "timestamp"),
                repository: text(c, "repository").unwrap(),
                branch: text(c, "branch").unwrap(),
            })
            .collect();
        let read = parse_push(shape, &body).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(read, listed, "{file}");
        shapes.push(shape);
    }
    for shape in [
        Shape::Github,
        Shape::Gitlab,
        Shape::BitbucketCloud,
        Shape::BitbucketServer,
    ] {
        assert!(shapes.contains(&shape), "no vendored push of {shape:?}");
    }
}

#[test]
fn a_refs_changed_update_stores_the_new_tip_and_a_delete_nothing() {
    let body = br#"{"repository":{"slug":"web","project":{"key":"ACME"}},"changes":[
        {"ref":{"id":"refs/heads/main","displayId":"main","type":"BRANCH"},
         "fromHash":"aaa","toHash":"bbb","type":"UPDATE"},
        {"ref":{"id":"refs/heads/old","displayId":"old","type":"BRANCH"},
         "fromHash":"ccc","toHash":"0000000000000000000000000000000000000000","type":"DELETE"}]}"#;
    let commits = parse_push(Shape::BitbucketServer, body).unwrap();
    assert_eq!(
        commits,
        vec![Commit {
            sha: "bbb".into(),
            message: None,
            author: None,
            timestamp: None,
            repository: "ACME/web".into(),
            branch: "main".into(),
        }]
    );
}

#[test]
fn commits_that_are_not_an_array_are_malformed() {
    let body = br#"{"ref":"refs/heads/main","repository":{"full_name":"a/b"},"commits":3}"#;
    let error = parse_push(Shape::Github, body).unwrap_err();
    assert!(error.to_string().contains("`commits`"), "{error}");
}

fn github(body: &str) -> Result<Vec<Commit>, Malformed> {
    parse_push(Shape::Github, body.as_bytes())
}

fn commit(sha: &str, message: Option<&str>, author: Option<&str>, when: Option<&str>) -> Commit {
    Commit {
        sha: sha.into(),
        message: message.map(Into::into),
        author: author.map(Into::into),
        timestamp: when.map(Into::into),
        repository: "acme/widgets".into(),
        branch: "main".into(),
    }
}

#[test]
fn a_github_push_is_read_for_its_commits_and_the_rest_skipped() {
    let body = r#"{"ref":"refs/heads/main","before":"0","sender":{"login":"ada","id":1},
        "repository":{"full_name":"acme/widgets","owner":{"name":"acme"},"topics":["a",{"b":[1,2.5,true,null]}]},
        "commits":[{"id":"a1","message":"fix","timestamp":"2026-11-30T06:00:00Z",
                    "author":{"name":"Ada","email":"ada@example.com"},"added":["x"]},
                   {"id":"b2"}],
        "head_commit":{"id":"b2"}}"#;
    assert_eq!(
        github(body).unwrap(),
        vec![
            commit("a1", Some("fix"), Some("Ada"), Some("2026-11-30T06:00:00Z")),
            commit("b2", None, None, None),
        ]
    );
}

#[test]
fn an_optional_field_of_the_wrong_type_is_absent_and_the_push_kept() {
    let body = r#"{"ref":"refs/heads/main","repository":{"full_name":"acme/widgets"},
        "commits":[{"id":"a1","message":7,"timestamp":{"at":1},"author":"Ada"},
                   {"id":"b2","message":null,"author":{"name":["Ada"]}},
                   {"id":"c3","author":null},
                   {"id":"d4","message":true,"timestamp":-1,"author":2.5},
                   {"id":"e5","message":-2.5,"timestamp":false,"author":-3}]}"#;
    assert_eq!(
        github(body).unwrap(),
        vec![
            commit("a1", None, None, None),
            commit("b2", None, None, None),
            commit("c3", None, None, None),
            commit("d4", None, None, None),
            commit("e5", None, None, None),
        ]
    );
}

#[test]
fn commits_absent_or_null_are_none_and_a_commit_without_its_id_is_malformed() {
    for commits in ["", r#","commits":null"#, r#","commits":[]"#] {
        let body =
            format!(r#"{{"ref":"refs/tags/v1","repository":{{"full_name":"a/b"}}{commits}}}"#);
        assert_eq!(github(&body).unwrap(), vec![], "{body}");
    }
    for (commits, field) in [
        (r#"[{"id":"a"},{"message":"no id"}]"#, "`commits[1].id`"),
        (r#"[{"id":"a"},"b"]"#, "`commits[1].id`"),
        (r#"[{"id":5}]"#, "`commits[0].id`"),
        (r#"{"id":"a"}"#, "`commits`"),
        (r#""a""#, "`commits`"),
    ] {
        let body =
            format!(r#"{{"ref":"r","repository":{{"full_name":"a/b"}},"commits":{commits}}}"#);
        let error = github(&body).unwrap_err().to_string();
        assert!(error.contains(field), "{body}: {error}");
    }
}

#[test]
fn the_repository_and_the_ref_are_required_in_that_order() {
    for (body, field) in [
        (r#"{"ref":"r"}"#, "`repository.full_name`"),
        (
            r#"{"ref":"r","repository":{"full_name":3}}"#,
            "`repository.full_name`",
        ),
        (
            r#"{"ref":"r","repository":"a/b"}"#,
            "`repository.full_name`",
        ),
        (r#"{"ref":"r","repository":null}"#, "`repository.full_name`"),
        (r#"[1,2]"#, "`repository.full_name`"),
        (r#""text""#, "`repository.full_name`"),
        (r#"{"repository":{"full_name":"a/b"}}"#, "`ref`"),
        (r#"{"ref":["r"],"repository":{"full_name":"a/b"}}"#, "`ref`"),
    ] {
        let error = github(body).unwrap_err().to_string();
        assert!(error.contains(field), "{body}: {error}");
    }
    let error = github(r#"{"ref":"r","#).unwrap_err().to_string();
    assert!(error.contains("is not valid JSON"), "{error}");
}

#[test]
fn an_old_github_repository_is_named_from_its_owner_and_name() {
    let named = |repository: &str| {
        let body = format!(
            r#"{{"ref":"refs/heads/main","repository":{repository},"commits":[{{"id":"a"}}]}}"#
        );
        github(&body).map(|commits| commits[0].repository.clone())
    };
    assert_eq!(
        named(r#"{"name":"widgets","owner":{"name":"acme"}}"#).unwrap(),
        "acme/widgets"
    );
    assert_eq!(
        named(r#"{"name":"widgets","owner":{"login":"acme"}}"#).unwrap(),
        "widgets"
    );
    assert_eq!(
        named(r#"{"full_name":"x/y","name":"widgets"}"#).unwrap(),
        "x/y"
    );
}

#[test]
fn a_key_named_twice_keeps_its_last_value_and_escaped_keys_are_read() {
    let body = r#"{"ref":"refs/heads/old","\u0072ef":"refs/heads/main",
        "repository":{"full_name":"acme/widgets"},
        "commits":[{"id":"a1","id":"a2","m\u0065ssage":"fix"}]}"#;
    assert_eq!(
        github(body).unwrap(),
        vec![commit("a2", Some("fix"), None, None)]
    );
}

#[test]
fn a_gitlab_push_names_its_project_and_a_github_repository_is_not_read_for_it() {
    let body = br#"{"ref":"refs/heads/main","project":{"path_with_namespace":"acme/widgets"},
        "repository":{"full_name":"other/name"},
        "commits":[{"id":"a1","message":"fix","author":{"name":"Ada"}}]}"#;
    assert_eq!(
        parse_push(Shape::Gitlab, body).unwrap(),
        vec![commit("a1", Some("fix"), Some("Ada"), None)]
    );
    let error = parse_push(
        Shape::Gitlab,
        br#"{"ref":"r","repository":{"full_name":"a/b"}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("`project.path_with_namespace`"), "{error}");
}

/// A vendored payload, to be read as sent or with one field changed.
fn vendored(file: &str) -> Value {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn read(shape: Shape, payload: &Value) -> Result<Vec<Commit>, Malformed> {
    parse_push(shape, &serde_json::to_vec(payload).unwrap())
}

/// The field a malformed payload is refused for, as its error names it.
fn refused_for(shape: Shape, payload: &Value) -> String {
    match read(shape, payload) {
        Ok(commits) => panic!("read, not refused: {commits:?}"),
        Err(error) => error.to_string(),
    }
}

/// Bitbucket Cloud's forced push (one change, five commits, each with `{raw, user}`), with
/// each field the parser needs taken away or of the wrong type: refused, naming that field
/// where it sits.
#[test]
fn a_bitbucket_cloud_push_without_what_it_needs_names_the_field() {
    let forced = vendored("bitbucket/repo-push-forced.json");
    for (path, value, field) in [
        (
            "/repository/full_name",
            Value::Null,
            "`repository.full_name`",
        ),
        ("/push", Value::Null, "`push.changes`"),
        ("/push/changes", json!({}), "`push.changes`"),
        (
            "/push/changes/0/new/name",
            json!(7),
            "`push.changes[0].new.name`",
        ),
        (
            "/push/changes/0/commits",
            json!("5"),
            "`push.changes[0].commits`",
        ),
        (
            "/push/changes/0/commits/1/hash",
            json!(null),
            "`push.changes[0].commits[1].hash`",
        ),
    ] {
        let mut payload = forced.clone();
        *payload.pointer_mut(path).unwrap() = value;
        let error = refused_for(Shape::BitbucketCloud, &payload);
        assert!(error.contains(field), "{path}: {error}");
    }
    let mut payload = forced.clone();
    payload.as_object_mut().unwrap().remove("push");
    assert!(refused_for(Shape::BitbucketCloud, &payload).contains("`push`"));
}

/// A change with no `new` key, or a null one, deleted a ref: it stores nothing, and the
/// change after it is read as usual. A change whose `commits` is absent or null (a tag)
/// stores nothing either.
#[test]
fn a_bitbucket_cloud_change_without_new_or_commits_stores_nothing() {
    let forced = vendored("bitbucket/repo-push-forced.json");
    let change = forced["push"]["changes"][0].clone();
    let kept = read(Shape::BitbucketCloud, &forced).unwrap();
    assert_eq!(kept.len(), 5);
    let mut without_new = change.clone();
    without_new.as_object_mut().unwrap().remove("new");
    let mut null_new = change.clone();
    null_new["new"] = Value::Null;
    let mut null_commits = change.clone();
    null_commits["commits"] = Value::Null;
    let mut no_commits = change.clone();
    no_commits.as_object_mut().unwrap().remove("commits");
    let mut payload = forced.clone();
    payload["push"]["changes"] = json!([without_new, null_new, null_commits, no_commits, change]);
    assert_eq!(read(Shape::BitbucketCloud, &payload).unwrap(), kept);
}

/// A commit's author: the git author line (`raw`) first, then the account's display name,
/// under `user` or (Atlassian's documented example) the author itself; none of them, absent.
#[test]
fn a_bitbucket_cloud_author_is_its_raw_line_then_its_display_name() {
    let forced = vendored("bitbucket/repo-push-forced.json");
    let raw = "Milana Stojadinov <milana.stojadinov@gmail.com>";
    let author = |edit: &dyn Fn(&mut Value)| {
        let mut payload = forced.clone();
        edit(&mut payload["push"]["changes"][0]["commits"][0]["author"]);
        read(Shape::BitbucketCloud, &payload).unwrap()[0]
            .author
            .clone()
    };
    assert_eq!(author(&|_| {}).as_deref(), Some(raw));
    let no_raw = |a: &mut Value| {
        a.as_object_mut().unwrap().remove("raw");
    };
    assert_eq!(author(&no_raw).as_deref(), Some("Milana Stojadinov"));
    let flat = |a: &mut Value| *a = json!({"display_name": "Emma", "raw": 3});
    assert_eq!(author(&flat).as_deref(), Some("Emma"));
    assert_eq!(author(&|a| *a = json!({"user": {}})), None);
}

/// Bitbucket Data Center's ref deletion as sent, then as an update to a new tip: stored as
/// the one commit of the change. Either sign of a deletion (the `DELETE` type, or the null
/// commit as the new tip) stores nothing alone.
#[test]
fn a_bitbucket_server_change_stores_its_new_tip_unless_it_deleted_the_ref() {
    let deleted = vendored("bitbucket-server/repo-refs-changed-delete.json");
    assert_eq!(read(Shape::BitbucketServer, &deleted).unwrap(), vec![]);
    let tip = "32a0b8a740c2963c6f56bd8baf3dc05683d299e1";
    let change = |kind: &str, to: &str| {
        let mut payload = deleted.clone();
        payload["changes"][0]["type"] = json!(kind);
        payload["changes"][0]["toHash"] = json!(to);
        read(Shape::BitbucketServer, &payload).unwrap()
    };
    assert_eq!(
        change("UPDATE", tip),
        vec![Commit {
            sha: tip.into(),
            message: None,
            author: None,
            timestamp: None,
            repository: "~gopher/webhook-test".into(),
            branch: "feature/wip".into(),
        }]
    );
    assert_eq!(change("DELETE", tip), vec![]);
    assert_eq!(change("UPDATE", NULL_SHA), vec![]);
}

#[test]
fn a_bitbucket_server_push_without_what_it_needs_names_the_field() {
    let mut update = vendored("bitbucket-server/repo-refs-changed-delete.json");
    update["changes"][0]["type"] = json!("UPDATE");
    update["changes"][0]["toHash"] = json!("32a0b8a740c2963c6f56bd8baf3dc05683d299e1");
    for (path, field) in [
        ("/repository/project/key", "`repository.project.key`"),
        ("/repository/slug", "`repository.slug`"),
        ("/changes", "`changes`"),
        ("/changes/0/toHash", "`changes[0].toHash`"),
        ("/changes/0/ref/displayId", "`changes[0].ref.displayId`"),
    ] {
        let mut payload = update.clone();
        *payload.pointer_mut(path).unwrap() = json!(1);
        let error = refused_for(Shape::BitbucketServer, &payload);
        assert!(error.contains(field), "{path}: {error}");
    }
}
