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

/// A key made for these tests alone (`tests/fixtures/catchup/`), never any App's.
const PRIVATE: &str = include_str!("../../../tests/fixtures/catchup/app-key.pem");

fn github_row(body: Value) -> Result<CatchUpRow, IngestError> {
    request(body).into_row(
        InstanceId::stored("in_1".into()),
        InboxId::stored("ib_1".into()),
        Provider::Github,
    )
}

/// The token a row's credentials send, or why they cannot be used.
fn token_of(row: &CatchUpRow) -> Result<String, &'static str> {
    match Auth::of(row)? {
        Auth::Token(token) => Ok(token),
        Auth::App { id, .. } => Ok(format!("app {id}")),
    }
}

#[test]
fn a_repository_and_an_organization_hook_are_kept_asked_and_shown_without_their_token() {
    let cases = [
        (
            json!({ "repository": "octo/hello.world", "hook_id": 7, "token": "ghp_repo" }),
            ("repository", "octo/hello.world", 7, "ghp_repo"),
            "/repos/octo/hello.world/hooks/7/deliveries",
            json!({ "repository": "octo/hello.world", "id": 7 }),
        ),
        (
            json!({ "organization": "octo-org_1", "hook_id": 8, "token": "ghp_org" }),
            ("organization", "octo-org_1", 8, "ghp_org"),
            "/orgs/octo-org_1/hooks/8/deliveries",
            json!({ "organization": "octo-org_1", "id": 8 }),
        ),
    ];
    for (body, (kind, owner, id, token), path, hook_shown) in cases {
        let row = github_row(body).unwrap();
        assert_eq!(
            (row.hook_kind.as_str(), row.hook_owner.as_str()),
            (kind, owner)
        );
        assert_eq!((row.hook_id, row.token.as_deref()), (id, Some(token)));
        assert_eq!((row.app_id, row.private_key.as_deref()), (None, None));
        let hook = Hook::of(&row).unwrap();
        assert_eq!(hook.deliveries_path(), path);
        assert_eq!(token_of(&row).as_deref(), Ok(token));
        let shown = describe(&row);
        assert_eq!(
            shown,
            json!({ "inbox": "ib_1", "hook": hook_shown, "auth": "token", "cursor": 0,
                    "last_success_ms": 0, "failing": null, "pending_redeliveries": 0 }),
            "the hook and how it goes, and no app_id"
        );
        assert!(!shown.to_string().contains(token), "{shown}");
    }
}

#[test]
fn an_apps_hook_keeps_its_key_and_shows_its_id_never_the_key() {
    let row = github_row(json!({ "app_id": 42, "private_key": PRIVATE })).unwrap();
    assert_eq!(
        (row.hook_kind.as_str(), row.hook_owner.as_str()),
        ("app", "")
    );
    assert_eq!((row.hook_id, row.token.as_deref()), (0, None));
    assert_eq!(
        (row.app_id, row.private_key.as_deref()),
        (Some(42), Some(PRIVATE))
    );
    let hook = Hook::of(&row).unwrap();
    assert_eq!(hook, Hook::App);
    assert_eq!(hook.deliveries_path(), "/app/hook/deliveries");
    assert_eq!((hook.api(), hook.provider()), (None, "GitHub"));
    assert_eq!(token_of(&row).as_deref(), Ok("app 42"));
    let shown = describe(&row);
    assert_eq!(shown["hook"], json!({ "app": true }));
    assert_eq!(
        (&shown["auth"], &shown["app_id"]),
        (&json!("app"), &json!(42))
    );
    let text = shown.to_string();
    assert!(
        !text.contains("PRIVATE KEY") && !text.contains(&PRIVATE[40..80]),
        "{text}"
    );
}

#[test]
fn a_row_whose_credentials_cannot_be_used_says_why_and_an_unknown_kind_is_no_hook() {
    let mut row = github_row(json!({ "app_id": 42, "private_key": PRIVATE })).unwrap();
    row.private_key = Some("-----BEGIN PRIVATE KEY-----\nno\n-----END PRIVATE KEY-----".into());
    assert_eq!(
        token_of(&row),
        Err("the App's private key is not an RSA key in PEM")
    );
    row.private_key = None;
    assert_eq!(token_of(&row), Err("no token and no App key"));
    row.token = Some("ghp_later".into());
    assert_eq!(
        token_of(&row).as_deref(),
        Ok("ghp_later"),
        "a token is taken first"
    );
    row.hook_kind = "bitbucket".into();
    assert_eq!(Hook::of(&row), None);
}

#[test]
fn a_github_name_is_owner_slash_name_or_a_login_of_url_safe_bytes() {
    let at_bound = format!("o/{}", "r".repeat(MAX_NAME_BYTES - 2));
    for taken in [
        "o/r",
        "Octo-1/hello_world.rs",
        "o/.github",
        at_bound.as_str(),
    ] {
        assert!(
            github_name("repository", taken, 2).is_ok(),
            "{taken} refused"
        );
    }
    let long = format!("o/{}", "r".repeat(MAX_NAME_BYTES - 1));
    for refused in [
        "o",
        "o/r/x",
        "/r",
        "o/",
        ".",
        "./r",
        "o/.",
        "../r",
        "o/..",
        "o/r%2F",
        "o r/x",
        "o/r?",
        long.as_str(),
    ] {
        let Err(IngestError::InvalidField { field, problem }) =
            github_name("repository", refused, 2)
        else {
            panic!("{refused} taken");
        };
        assert_eq!(
            (field, problem.as_ref()),
            ("repository", "must be `owner/name`")
        );
    }
    assert!(github_name("organization", "octo-org", 1).is_ok());
    for refused in ["octo/x", "", "..", "o~"] {
        let Err(IngestError::InvalidField { problem, .. }) =
            github_name("organization", refused, 1)
        else {
            panic!("{refused} taken");
        };
        assert_eq!(problem, "must be an organization's login");
    }
}

#[test]
fn a_token_or_key_is_refused_empty_or_past_its_bound() {
    let at_bound = "t".repeat(MAX_SECRET_BYTES);
    assert_eq!(secret("token", at_bound.clone()).ok(), Some(at_bound));
    for refused in [
        String::new(),
        " \n".into(),
        "t".repeat(MAX_SECRET_BYTES + 1),
    ] {
        assert!(secret("token", refused).is_err());
    }
    let body = json!({ "repository": "o/r", "hook_id": 1, "token": "t".repeat(MAX_SECRET_BYTES) });
    assert!(
        github_row(body).is_ok(),
        "a token of the bound's length is kept"
    );
    assert!(
        PRIVATE.len() < MAX_SECRET_BYTES,
        "a 2048-bit key in PEM fits the bound"
    );
}

#[test]
fn a_github_inbox_takes_one_hook_and_the_credentials_that_hook_needs() {
    let refused = [
        (json!({ "app_id": 0, "private_key": PRIVATE }), "app_id"),
        (json!({ "app_id": -1, "private_key": PRIVATE }), "app_id"),
        (
            json!({ "app_id": 42, "hook_id": 3, "private_key": PRIVATE }),
            "repository",
        ),
        (
            json!({ "app_id": 42, "private_key": PRIVATE, "token": "t" }),
            "private_key",
        ),
        (json!({ "app_id": 42, "token": "t" }), "private_key"),
        (
            json!({ "app_id": 42, "private_key": "not a key" }),
            "private_key",
        ),
        (
            json!({ "repository": "o/r", "hook_id": 0, "token": "t" }),
            "hook_id",
        ),
        (json!({ "repository": "o/r", "token": "t" }), "hook_id"),
        (json!({ "organization": "o", "token": "t" }), "hook_id"),
        (
            json!({ "repository": "o/r", "hook_id": 1, "token": "t", "private_key": PRIVATE }),
            "token",
        ),
        (
            json!({ "repository": "o/r", "hook_id": 1, "private_key": PRIVATE }),
            "token",
        ),
        (
            json!({ "repository": "o/r", "organization": "o", "hook_id": 1, "token": "t" }),
            "repository",
        ),
        (
            json!({ "organization": "o", "app_id": 42, "private_key": PRIVATE }),
            "repository",
        ),
        (json!({ "hook_id": 1, "token": "t" }), "repository"),
    ];
    for (body, field) in refused {
        assert_eq!(problem(github_row(body.clone())).0, field, "{body}");
    }
}

/// Callable as `<T as NoDebug<_>>::checked()` only while `T` has no `Debug`: with one, both
/// impls apply and the call is ambiguous, a compile error.
trait NoDebug<Which> {
    fn checked() {}
}
impl<T: ?Sized> NoDebug<()> for T {}
struct HasDebug;
impl<T: ?Sized + std::fmt::Debug> NoDebug<HasDebug> for T {}

#[test]
fn what_holds_a_token_or_a_key_has_no_debug_so_no_log_line_can_print_it() {
    <Auth as NoDebug<_>>::checked();
    <CatchUpRequest as NoDebug<_>>::checked();
    <CatchUpRow as NoDebug<_>>::checked();
}
