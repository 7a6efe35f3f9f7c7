//! The stand-in GitHub answers as GitHub's published OpenAPI description says it does, for
//! the operations catch-up uses: every answer of the stand-in, for repository, organization
//! and App hooks, is checked against the schemas and statuses kept in
//! `tests/fixtures/github-openapi/hook-deliveries.json` (API version 2022-11-28, description
//! 1.1.4; `SOURCES.md` says where from), so that the stand-in cannot drift from GitHub. The
//! service's reading of a delivery is checked against the description's example, and it reads
//! no field the description does not require.

mod common;

use common::catchup::is_date_time;
use common::*;
use serde_json::Value;
use webhook_ingest::catchup::github::Delivery;

const DESCRIPTION: &str = include_str!("fixtures/github-openapi/hook-deliveries.json");
const TOKEN: &str = "ghp_contract";

fn description() -> Value {
    serde_json::from_str(DESCRIPTION).unwrap()
}

/// Where `value` breaks `schema` (a subset of OpenAPI 3.0's: type, nullable, format
/// date-time, properties, required, items, `$ref` to the fixture's schemas); and, stricter
/// than OpenAPI, a property the schema does not name, which would be the stand-in inventing.
fn violations(value: &Value, schema: &Value, at: &str, out: &mut Vec<String>) {
    if let Some(name) = schema["$ref"].as_str() {
        return violations(value, &description()["schemas"][name], at, out);
    }
    if value.is_null() {
        if schema["nullable"] != true {
            out.push(format!("{at}: null where the schema does not allow it"));
        }
        return;
    }
    let fits = match schema["type"].as_str() {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !fits {
        out.push(format!("{at}: {value} is not of type {}", schema["type"]));
        return;
    }
    if schema["format"] == "date-time" && !is_date_time(value.as_str().unwrap_or_default()) {
        out.push(format!("{at}: {value} is not a date-time"));
    }
    if let Some(items) = schema.get("items") {
        for (n, item) in value.as_array().unwrap().iter().enumerate() {
            violations(item, items, &format!("{at}[{n}]"), out);
        }
    }
    if let Some(properties) = schema["properties"].as_object() {
        let object = value.as_object().unwrap();
        for required in schema["required"].as_array().into_iter().flatten() {
            if !object.contains_key(required.as_str().unwrap()) {
                out.push(format!("{at}: required `{required}` missing"));
            }
        }
        for (name, member) in object {
            match properties.get(name) {
                Some(property) => violations(member, property, &format!("{at}.{name}"), out),
                None => out.push(format!("{at}: `{name}` is not in the schema")),
            }
        }
    }
}

/// Checks one answer of `operation` against the description: a status it declares (or,
/// for 401 and 404, which GitHub answers to any call, the basic error), and its body's
/// schema.
async fn check(response: reqwest::Response, operation: &str) -> Vec<String> {
    let spec = description()["operations"][operation].clone();
    let status = response.status().as_u16().to_string();
    let body: Value = response.json().await.unwrap();
    let schema = match status.as_str() {
        "401" | "404" => "basic-error",
        "422" => "validation-error",
        declared
            if spec["statuses"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s == declared) =>
        {
            spec[declared].as_str().unwrap()
        }
        other => {
            return vec![format!(
                "{operation}: status {other} is not in the description"
            )]
        }
    };
    let mut out = Vec::new();
    violations(
        &body,
        &serde_json::json!({ "$ref": schema }),
        operation,
        &mut out,
    );
    out
}

#[test]
fn the_service_reads_the_descriptions_example_and_only_required_fields() {
    let description = description();
    let read: Vec<Delivery> = serde_json::from_value(description["example"].clone()).unwrap();
    assert_eq!(read[1].id, 123456789);
    assert!(read[0].succeeded());
    let required = &description["schemas"]["hook-delivery-item"]["required"];
    for field in ["id", "guid", "status_code"] {
        assert!(
            required.as_array().unwrap().iter().any(|r| r == field),
            "{field} is read but not required"
        );
    }
    let mut out = Vec::new();
    violations(
        &description["example"],
        &serde_json::json!({ "$ref": "hook-delivery-list" }),
        "example",
        &mut out,
    );
    assert!(
        out.is_empty(),
        "the checker refuses GitHub's own example: {out:?}"
    );
}

#[tokio::test]
async fn the_checker_finds_a_field_of_the_wrong_type_a_missing_one_and_an_invented_one() {
    let item = |edit: fn(&mut Value)| {
        let mut example = description()["example"][0].clone();
        edit(&mut example);
        let mut out = Vec::new();
        violations(
            &example,
            &serde_json::json!({ "$ref": "hook-delivery-item" }),
            "item",
            &mut out,
        );
        out.len()
    };
    assert_eq!(item(|v| v["status_code"] = "200".into()), 1);
    assert_eq!(item(|v| v["delivered_at"] = "yesterday".into()), 1);
    assert_eq!(item(|v| v["guid"] = Value::Null), 1);
    assert_eq!(
        item(|v| drop(v.as_object_mut().unwrap().remove("event"))),
        1
    );
    assert_eq!(item(|v| v["statusCode"] = 200.into()), 1);
}

#[tokio::test]
async fn every_answer_of_the_stand_in_fits_githubs_description() {
    let github = GitHubStandIn::start().await;
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", listener.local_addr().unwrap())
    };
    let public = include_str!("fixtures/catchup/app-key.pub.pem");
    let private = include_str!("fixtures/catchup/app-key.pem");
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(private.as_bytes()).unwrap();
    let jwt =
        webhook_ingest::catchup::jwt::app_jwt(42, &key, std::time::SystemTime::now()).unwrap();
    let hooks = [
        (
            HookKind::Repository("octo/hello".into(), 7),
            Credential::Token(TOKEN.into()),
            "repos",
            "/repos/octo/hello/hooks/7/deliveries",
            TOKEN.to_owned(),
        ),
        (
            HookKind::Organization("octo-org".into(), 8),
            Credential::Token(TOKEN.into()),
            "orgs",
            "/orgs/octo-org/hooks/8/deliveries",
            TOKEN.to_owned(),
        ),
        (
            HookKind::App,
            Credential::App(42, public.into()),
            "apps",
            "/app/hook/deliveries",
            jwt,
        ),
    ];
    let client = reqwest::Client::new();
    let mut broken = Vec::new();
    for (kind, credential, tag, path, bearer) in hooks {
        let hook = github.add_hook(kind, credential, down.clone(), "whs_secret".into());
        for n in 0..3 {
            github
                .push(
                    hook,
                    &format!("{tag}-{n}"),
                    github_push(&["a"]),
                    (n == 0).then_some(200),
                )
                .await;
        }
        let (list, redeliver) = (
            format!("{tag}/list-webhook-deliveries"),
            format!("{tag}/redeliver-webhook-delivery"),
        );
        let url = |rest: &str| format!("{}{path}{rest}", github.api());
        let first = client
            .get(url("?per_page=2"))
            .bearer_auth(&bearer)
            .send()
            .await
            .unwrap();
        let link = first.headers()["link"].to_str().unwrap().to_owned();
        assert!(
            link.contains("rel=\"next\"") && link.contains("cursor="),
            "{link}"
        );
        broken.extend(check(first, &list).await);
        let cursor = link
            .split("cursor=")
            .nth(1)
            .unwrap()
            .split('>')
            .next()
            .unwrap()
            .to_owned();
        let second = client
            .get(url(&format!("?per_page=2&cursor={cursor}")))
            .bearer_auth(&bearer)
            .send()
            .await
            .unwrap();
        broken.extend(check(second, &list).await);
        let id = github.records(hook)[1].id;
        let accepted = client
            .post(url(&format!("/{id}/attempts")))
            .bearer_auth(&bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(accepted.status(), 202);
        broken.extend(check(accepted, &redeliver).await);
        let bad_cursor = client
            .get(url("?cursor=nonsense"))
            .bearer_auth(&bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(bad_cursor.status(), 422);
        broken.extend(check(bad_cursor, &list).await);
        let no_such = client
            .post(url("/999999/attempts"))
            .bearer_auth(&bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(no_such.status(), 404);
        broken.extend(check(no_such, &redeliver).await);
        let refused = client
            .get(url(""))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        broken.extend(check(refused, &list).await);
    }
    assert!(
        broken.is_empty(),
        "the stand-in drifted from GitHub's description: {broken:#?}"
    );
}
