//! The failure lab's OpenAPI document, generated from `#[derive(Fault)]` and utoipa: it
//! parses, it lists every status and code each route really answers with, and every problem
//! body the lab returns over TCP validates against its `ProblemDetails` schema.
#![cfg(feature = "utoipa")]

mod common;

use common::Lab;
use serde_json::{Map, Value};

/// Validates `value` against `schema`, for the keywords the `ProblemDetails` schema uses; any
/// other keyword fails the test rather than being ignored.
fn validate(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = schema.as_object().expect("a schema is an object");
    for keyword in schema.keys() {
        let known = [
            "type",
            "properties",
            "required",
            "additionalProperties",
            "minimum",
            "maximum",
            "description",
        ];
        assert!(
            known.contains(&keyword.as_str()),
            "unchecked keyword `{keyword}`"
        );
    }
    let ty = schema["type"].as_str().expect("every schema has a type");
    let fits = match ty {
        "object" => value.is_object(),
        "string" => value.is_string(),
        "integer" => value.is_u64() || value.is_i64(),
        other => panic!("unchecked type `{other}`"),
    };
    if !fits {
        return Err(format!("{at}: {value} is not a {ty}"));
    }
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        if value.as_f64().unwrap() < min {
            return Err(format!("{at}: {value} < {min}"));
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        if value.as_f64().unwrap() > max {
            return Err(format!("{at}: {value} > {max}"));
        }
    }
    if ty != "object" {
        return Ok(());
    }
    let object = value.as_object().unwrap();
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for required in schema["required"].as_array().into_iter().flatten() {
        let name = required.as_str().unwrap();
        if !object.contains_key(name) {
            return Err(format!("{at}: `{name}` is missing"));
        }
    }
    for (name, member) in object {
        match properties.get(name) {
            Some(sub) => validate(sub, member, &format!("{at}.{name}"))?,
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(format!("{at}: `{name}` is not in the schema"))
            }
            None => {}
        }
    }
    Ok(())
}

/// The (status, code) pairs the document lists for `method path`.
fn documented(doc: &Value, method: &str, path: &str) -> Vec<(u16, String)> {
    let responses = doc["paths"][path][method]["responses"]
        .as_object()
        .unwrap_or_else(|| panic!("{method} {path} is not documented"));
    let mut pairs = Vec::new();
    for (status, response) in responses {
        let status: u16 = status.parse().unwrap();
        let examples = response["content"]["application/problem+json"]["examples"].as_object();
        for code in examples.into_iter().flat_map(|e| e.keys()) {
            pairs.push((status, code.clone()));
        }
    }
    pairs
}

#[tokio::test]
async fn the_labs_document_lists_every_answer_and_its_schema_validates_every_body() {
    let lab = Lab::start().await;
    let client = reqwest::Client::new();
    let doc: Value = client
        .get(lab.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .map(|bytes| serde_json::from_slice(&bytes).expect("the document is JSON"))
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let schema = doc["components"]["schemas"]["ProblemDetails"].clone();
    assert_eq!(schema["type"], "object", "{schema}");

    // Every failing route of the lab, as a client meets it: the answer must be documented
    // for that route (fallbacks aside) and its body must validate.
    let json = |body: &'static str, content_type: &'static str| {
        client
            .post(lab.url("/json"))
            .header("content-type", content_type)
            .body(body)
    };
    let get = |path: &str| client.get(lab.url(path));
    let cases = [
        ("get", "/handled", get("/handled"), 422, "demo-invalid"),
        ("get", "/internal", get("/internal"), 500, "store-failed"),
        ("get", "/panic", get("/panic"), 500, "panic"),
        ("get", "/small", get("/small"), 500, "demo-sized"),
        ("get", "/huge", get("/huge"), 500, "demo-sized"),
        ("get", "/slow", get("/slow?ms=x"), 400, "bad-request"),
        (
            "post",
            "/json",
            json("{", "application/json"),
            400,
            "bad-request",
        ),
        (
            "post",
            "/json",
            json("{}", "text/plain"),
            415,
            "unsupported-media-type",
        ),
        ("get", "/timeout", get("/timeout"), 504, "timeout"),
        // The router's fallbacks, which no route documents.
        ("", "", get("/missing"), 404, "not-found"),
        (
            "",
            "",
            client.post(lab.url("/ok")),
            405,
            "method-not-allowed",
        ),
    ];
    for (method, path, request, status, code) in cases {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{method} {path}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(body["code"], code, "{method} {path}: {body}");
        validate(&schema, &body, "body").unwrap_or_else(|e| panic!("{path}: {e}"));
        if !path.is_empty() {
            let pairs = documented(&doc, method, path);
            assert!(
                pairs.contains(&(status, code.to_owned())),
                "{method} {path} answers {status} {code}, documented: {pairs:?}"
            );
        }
    }

    // A body that breaks the schema is caught: the validator is not a yes-machine.
    let mut broken: Value = serde_json::from_str(
        r#"{"type":"about:blank","title":"x","status":200,"code":"c","request_id":"r","instance":"/","detail":"d"}"#,
    )
    .unwrap();
    assert!(validate(&schema, &broken, "body").is_err(), "status 200");
    broken["status"] = 422.into();
    assert!(validate(&schema, &broken, "body").is_ok());
    broken["extra"] = 1.into();
    assert!(
        validate(&schema, &broken, "body").is_err(),
        "an extra member"
    );
}

#[test]
fn each_documented_status_lists_its_codes_with_their_descriptions() {
    use faultline::catalog::openapi::LayerFaults;
    use utoipa::IntoResponses;

    let responses = failure_lab::LabError::responses();
    let json = serde_json::to_value(&responses).unwrap();
    let description = json["500"]["description"].as_str().unwrap();
    assert!(description.contains("`store-failed`"), "{description}");
    assert!(description.contains("`demo-sized`"), "{description}");
    assert!(
        json["422"]["content"]["application/problem+json"]["examples"]["demo-invalid"].is_object()
    );
    let layer = serde_json::to_value(LayerFaults::responses()).unwrap();
    let codes: Vec<&str> = ["500", "503", "504"]
        .iter()
        .flat_map(|s| {
            layer[s]["content"]["application/problem+json"]["examples"]
                .as_object()
                .unwrap()
                .keys()
        })
        .map(String::as_str)
        .collect();
    assert_eq!(codes, ["panic", "service-error", "overloaded", "timeout"]);
}
