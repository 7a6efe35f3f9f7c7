//! A newcomer's first request, and the URL an inbox answers with: built from `--public-url`,
//! else from the address bound, never from the `Host` header a client sends.

mod common;

use common::*;
use serde_json::{json, Value};
use webhook_ingest::store::Store;

/// The Host a client could send to have its own name put in a callback URL.
const FORGED_HOST: &str = "attacker.example";
const PUBLIC_URL: &str = "https://hooks.example.com/ingest";

async fn behind_a_proxy() -> Service {
    let config = webhook_ingest::Config {
        // A trailing slash, as an operator may write it, makes no double slash.
        public_url: Some(format!("{PUBLIC_URL}/")),
        ..Service::config(TEST_BODY_LIMIT)
    };
    Service::serve_with(Store::open(":memory:").await.unwrap(), None, config).await
}

async fn json_of(response: reqwest::Response) -> Value {
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// A new inbox's answer, asked for with a forged `Host`.
async fn new_inbox(client: &reqwest::Client, base: &str) -> Value {
    let created = client
        .post(format!("{base}/api/instances"))
        .header("host", FORGED_HOST)
        .send()
        .await
        .unwrap();
    let created = json_of(created).await;
    let (instance, key) = (
        created["id"].as_str().unwrap(),
        created["api_key"].as_str().unwrap(),
    );
    let post = |path: String, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(key)
            .header("host", FORGED_HOST)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let digest = post(
        format!("/api/{instance}/digests"),
        json!({ "description": "d" }),
    )
    .await
    .unwrap();
    let digest = json_of(digest).await;
    let digest = digest["id"].as_str().unwrap();
    let inbox = post(
        format!("/api/{instance}/digests/{digest}/inboxes"),
        json!({ "vcs": "github", "name": "acme/widgets" }),
    )
    .await
    .unwrap();
    assert_eq!(inbox.status(), 201);
    let mut inbox = json_of(inbox).await;
    inbox["instance"] = instance.into();
    inbox
}

#[tokio::test]
async fn a_browser_gets_a_page_that_says_where_to_start() {
    let service = behind_a_proxy().await;
    let before = service.quiescent().await;
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let answer = service
        .client
        .get(service.url("/"))
        .header("accept", browser)
        .header("host", FORGED_HOST)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let kind = answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/html"), "{kind}");
    let page = answer.text().await.unwrap();
    let shown = [
        format!("curl -X POST {PUBLIC_URL}/api/instances"),
        format!("{PUBLIC_URL}/health"),
        format!("{PUBLIC_URL}/metrics"),
        "docs/reference-service.md".to_owned(),
        "GitHub, GitLab, Bitbucket, Gitea and Forgejo".to_owned(),
    ];
    for shown in &shown {
        assert!(page.contains(shown), "{shown} not in {page}");
    }
    assert!(!page.contains(FORGED_HOST), "{page}");
    service.assert_counted(&before, 1, 0, 0).await;
}

#[tokio::test]
async fn anything_but_a_browser_gets_json() {
    let service = behind_a_proxy().await;
    for accept in [None, Some("*/*"), Some("application/json")] {
        let mut request = service.client.get(service.url("/"));
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let answer = service.send(request.header("host", FORGED_HOST)).await;
        assert_eq!(answer.status, 200, "{accept:?}");
        assert_eq!(
            answer.body,
            json!({
                "service": "webhook-ingest",
                "about": answer.body["about"],
                "create_instance": format!("curl -X POST {PUBLIC_URL}/api/instances"),
                "guide": "docs/reference-service.md",
                "health": format!("{PUBLIC_URL}/health"),
                "metrics": format!("{PUBLIC_URL}/metrics"),
            }),
            "{accept:?}"
        );
        assert!(answer.body["about"]
            .as_str()
            .unwrap()
            .contains("push webhooks"));
    }
}

#[tokio::test]
async fn the_callback_url_is_the_public_one_whatever_host_the_client_sends() {
    let service = behind_a_proxy().await;
    let inbox = new_inbox(&service.client, &service.url("")).await;
    let (instance, id) = (
        inbox["instance"].as_str().unwrap(),
        inbox["id"].as_str().unwrap(),
    );
    assert_eq!(
        inbox["url"],
        format!("{PUBLIC_URL}/api/{instance}/inboxes/{id}/commits")
    );
}

/// The binary on a free port, its spool in a directory of its own, with `extra` flags.
fn start(spool: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Running {
    let mut command = binary();
    command
        .args(["--port", "0", "--db", ":memory:", "--spool"])
        .arg(spool)
        .args(extra)
        .env_remove("WEBHOOK_INGEST_PUBLIC_URL")
        .envs(env.iter().copied());
    Running::start(command)
}

#[tokio::test]
async fn without_a_public_url_the_binary_builds_urls_from_the_address_it_bound() {
    let spool = temp_path("home-bound", "spool");
    let running = start(&spool, &[], &[]);
    let base = format!("http://{}", running.addr());
    let client = reqwest::Client::new();
    let home = client
        .get(format!("{base}/"))
        .header("host", FORGED_HOST)
        .send()
        .await
        .unwrap();
    let home = json_of(home).await;
    assert_eq!(
        home["create_instance"],
        format!("curl -X POST {base}/api/instances")
    );
    let inbox = new_inbox(&client, &base).await;
    let url = inbox["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{base}/api/")), "{url}");
    running.terminate();
    let _ = std::fs::remove_dir_all(&spool);
}

#[tokio::test]
async fn the_public_url_comes_from_its_variable_too() {
    let spool = temp_path("home-env", "spool");
    let env = [("WEBHOOK_INGEST_PUBLIC_URL", "https://hooks.example.org")];
    let running = start(&spool, &[], &env);
    let base = format!("http://{}", running.addr());
    let inbox = new_inbox(&reqwest::Client::new(), &base).await;
    let url = inbox["url"].as_str().unwrap();
    assert!(url.starts_with("https://hooks.example.org/api/"), "{url}");
    running.terminate();
    let _ = std::fs::remove_dir_all(&spool);
}

#[test]
fn a_public_url_that_is_no_base_url_stops_the_service_with_the_flag_named() {
    for bad in [
        "hooks.example.com",
        "ftp://hooks.example.com",
        "https://",
        "https://hooks.example.com/?a=b",
        "https://user@hooks.example.com",
    ] {
        let output = binary()
            .args(["--port", "0", "--db", ":memory:", "--public-url", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--public-url"), "{bad}: {stderr}");
    }
}
