use super::*;

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
                   {"id":"b2","message":null,"author":{"name":["Ada"]}}]}"#;
    assert_eq!(
        github(body).unwrap(),
        vec![
            commit("a1", None, None, None),
            commit("b2", None, None, None)
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
