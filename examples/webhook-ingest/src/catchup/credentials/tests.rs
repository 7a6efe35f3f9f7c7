use super::*;
use crate::ids::{InboxId, InstanceId};

fn request(body: Value) -> CatchUpRequest {
    serde_json::from_value(body).unwrap()
}

fn gitlab_row(body: Value) -> Result<CatchUpRow, IngestError> {
    request(body).into_row(
        InstanceId::stored("in_1".into()),
        InboxId::stored("ib_1".into()),
        Provider::Gitlab,
    )
}

fn problem(result: Result<CatchUpRow, IngestError>) -> (&'static str, String) {
    match result {
        Err(IngestError::InvalidField { field, problem }) => (field, problem.into_owned()),
        Err(other) => panic!("not an invalid field: {other}"),
        Ok(_) => panic!("taken"),
    }
}

#[test]
fn a_gitlab_hook_is_kept_as_its_project_url_and_read_back_the_same() {
    let row = gitlab_row(
        json!({ "gitlab_url": "https://gitlab.example.com/gl/", "project_id": 42,
                                 "hook_id": 7, "token": "glpat-x" }),
    )
    .unwrap();
    assert_eq!(row.hook_kind, "gitlab");
    assert_eq!(
        row.hook_owner,
        "https://gitlab.example.com/gl/api/v4/projects/42"
    );
    assert_eq!((row.hook_id, row.token.as_deref()), (7, Some("glpat-x")));
    assert_eq!((row.app_id, row.private_key.as_deref()), (None, None));
    let hook = Hook::of(&row).unwrap();
    let url = "https://gitlab.example.com/gl".to_owned();
    assert_eq!(
        hook,
        Hook::GitLab {
            url,
            project: 42,
            id: 7
        }
    );
    assert_eq!(
        hook.api().as_deref(),
        Some("https://gitlab.example.com/gl/api/v4")
    );
    assert_eq!(hook.deliveries_path(), "/projects/42/hooks/7/events");
    assert_eq!(
        (hook.provider(), hook.provider_label()),
        ("GitLab", "gitlab")
    );
    let shown = describe(&row);
    assert_eq!(
        shown["hook"],
        json!({ "gitlab_url": "https://gitlab.example.com/gl", "project_id": 42, "id": 7 })
    );
    assert_eq!(shown["auth"], "token");
    assert!(!shown.to_string().contains("glpat-x"));
    let mut odd = row.clone();
    odd.hook_owner = "https://gitlab.example.com/api/v4/projects/x".into();
    assert_eq!(
        Hook::of(&odd),
        None,
        "a project id that is no number is no hook"
    );
}

#[test]
fn a_github_hook_has_no_api_of_its_own_and_names_github() {
    let hook = Hook::Repository {
        repository: "o/r".into(),
        id: 1,
    };
    assert_eq!(hook.api(), None);
    assert_eq!(
        (hook.provider(), hook.provider_label()),
        ("GitHub", "github")
    );
    assert_eq!(Hook::App.provider_label(), "github");
}

#[test]
fn a_gitlab_url_must_be_https_or_http_to_this_machine() {
    for taken in [
        "https://gitlab.com",
        "https://gitlab.example.com:8443/",
        "http://127.0.0.1:8080",
        "http://[::1]:8080",
        "http://localhost",
    ] {
        let url = gitlab_url(taken).unwrap_or_else(|_| panic!("{taken} refused"));
        assert!(!url.ends_with('/'), "{url}");
    }
    let long = format!("https://gitlab.example.com/{}", "a".repeat(MAX_URL_BYTES));
    for refused in [
        "http://gitlab.example.com",
        "http://10.0.0.1",
        "http://127.0.0.1.example.com",
        "https://u:p@gitlab.example.com",
        "https://u@gitlab.example.com",
        "https://gitlab.example.com/?",
        "https://gitlab.example.com/#x",
        "ftp://gitlab.example.com",
        "gitlab.example.com",
        long.as_str(),
    ] {
        assert!(gitlab_url(refused).is_err(), "{refused} taken");
    }
    let at_bound = format!(
        "https://g.io/{}",
        "a".repeat(MAX_URL_BYTES - "https://g.io/".len())
    );
    assert!(
        gitlab_url(&at_bound).is_ok(),
        "a URL of the bound's length is taken"
    );
}

#[test]
fn a_gitlab_inbox_takes_only_gitlab_settings_and_a_github_inbox_none() {
    let base =
        json!({ "gitlab_url": "https://gitlab.com", "project_id": 1, "hook_id": 2, "token": "t" });
    assert!(gitlab_row(base.clone()).is_ok());
    for (field, drop) in [
        ("gitlab_url", "gitlab_url"),
        ("project_id", "project_id"),
        ("hook_id", "hook_id"),
    ] {
        let mut body = base.clone();
        body.as_object_mut().unwrap().remove(drop);
        assert_eq!(problem(gitlab_row(body)).0, field);
    }
    let mut no_token = base.clone();
    no_token.as_object_mut().unwrap().remove("token");
    assert_eq!(problem(gitlab_row(no_token)).0, "token");
    for (name, value) in [
        ("project_id", json!(0)),
        ("project_id", json!(-1)),
        ("hook_id", json!(0)),
    ] {
        let mut body = base.clone();
        body[name] = value;
        assert_eq!(problem(gitlab_row(body)).0, name);
    }
    for (name, value) in [
        ("repository", json!("o/r")),
        ("organization", json!("o")),
        ("app_id", json!(3)),
    ] {
        let mut body = base.clone();
        body[name] = value;
        assert_eq!(problem(gitlab_row(body)).0, "repository", "{name}");
    }
    let mut with_key = base.clone();
    with_key["private_key"] = json!("k");
    assert_eq!(
        problem(gitlab_row(with_key)).0,
        "token",
        "a GitLab hook takes a token alone"
    );
    let github = |body: Value| {
        request(body).into_row(
            InstanceId::stored("in_1".into()),
            InboxId::stored("ib_1".into()),
            Provider::Github,
        )
    };
    assert_eq!(problem(github(base.clone())).0, "gitlab_url");
    let project_only = json!({ "repository": "o/r", "hook_id": 2, "token": "t", "project_id": 1 });
    assert_eq!(problem(github(project_only)).0, "gitlab_url");
    assert!(github(json!({ "repository": "o/r", "hook_id": 2, "token": "t" })).is_ok());
}
