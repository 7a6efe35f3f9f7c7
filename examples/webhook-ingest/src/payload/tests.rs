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
