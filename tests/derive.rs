//! `#[derive(Fault)]` end to end: what the attributes mean, through the layer to the problem
//! body and the ledger; and `?` on axum's rejections, which keeps their status and code.

mod common;

use axum::body::Body;
use axum::extract::rejection::{
    BytesRejection, ExtensionRejection, FormRejection, JsonRejection, PathRejection,
    QueryRejection, RawFormRejection, RawPathParamsRejection, StringRejection,
};
use axum::extract::{Extension, Form, Json, Path, Query, RawForm, RawPathParams};
use axum::http::{Request, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use faultline::catalog::Catalog;
use faultline::ledger::Outcome;
use faultline::{Error, Fault, FaultLayer};
use std::collections::HashMap;

use common::oneshot::send;

#[derive(Debug, thiserror::Error)]
#[error("the upstream answered 502")]
struct UpstreamError;

impl Fault for UpstreamError {
    fn status(&self) -> StatusCode {
        StatusCode::BAD_GATEWAY
    }
    fn code(&self) -> &'static str {
        "upstream-failed"
    }
}

impl Catalog for UpstreamError {
    fn catalog() -> Vec<faultline::catalog::CatalogEntry> {
        vec![faultline::catalog::CatalogEntry::new(
            StatusCode::BAD_GATEWAY,
            "upstream-failed",
            "the upstream failed",
        )]
    }
}

#[derive(Debug, thiserror::Error, Fault)]
#[fault(status = 400)]
enum HookError {
    /// The event is well formed, but this service does not take it.
    #[error("event `{0}` is not handled here")]
    #[fault(status = 422, code = "unsupported-event")]
    UnsupportedEvent(String),
    #[error("payload lacks `{field}`")]
    #[fault(code = "malformed-payload")]
    Malformed { field: &'static str },
    #[error("the store failed")]
    #[fault(status = 503, code = "store-unavailable", retry_after = 5)]
    Store(#[source] std::io::Error),
    #[error("the signature is wrong: {0}")]
    #[fault(
        status = 401,
        code = "bad-signature",
        message = "the signature does not match"
    )]
    BadSignature(&'static str),
    #[error("the API key is missing")]
    #[fault(
        status = 401,
        code = "bad-api-key",
        header = "WWW-Authenticate: Bearer"
    )]
    BadApiKey,
    #[error("quota of {0} used up")]
    #[fault(status = 429, code = "quota", public = false)]
    Quota(u32),
    #[error(transparent)]
    #[fault(transparent)]
    Upstream(UpstreamError),
    #[error(transparent)]
    #[fault(transparent)]
    Json(#[from] JsonRejection),
}

#[derive(Debug, thiserror::Error, Fault)]
#[error("the inbox {0} is full")]
#[fault(status = 507, code = "inbox-full", public)]
struct InboxFull(u32);

#[derive(Debug, thiserror::Error, Fault)]
#[error(transparent)]
#[fault(transparent)]
struct Wrapped<E: Fault>(E);

#[test]
fn each_variant_answers_with_its_attribute_or_the_enum_default() {
    let unsupported = HookError::UnsupportedEvent("issues".into());
    assert_eq!(unsupported.status(), 422);
    assert_eq!(unsupported.code(), "unsupported-event");
    assert!(unsupported.is_public());
    assert_eq!(unsupported.public_message(), None);

    let malformed = HookError::Malformed { field: "ref" };
    assert_eq!(malformed.status(), 400, "the enum's default status");
    assert_eq!(malformed.code(), "malformed-payload");

    let store = HookError::Store(std::io::Error::other("disk"));
    assert!(!store.is_public());
    let mut headers = axum::http::HeaderMap::new();
    store.headers(&mut headers);
    assert_eq!(headers["retry-after"], "5");

    let signature = HookError::BadSignature("sha256=00");
    assert_eq!(
        signature.public_message().as_deref(),
        Some("the signature does not match")
    );
    assert!(!HookError::Quota(10).is_public(), "`public = false` wins");
    let mut headers = axum::http::HeaderMap::new();
    HookError::BadApiKey.headers(&mut headers);
    assert_eq!(headers["www-authenticate"], "Bearer");
    assert!(InboxFull(3).is_public(), "`public` on a 5xx");
    assert!(!HookError::Quota(1).counts_as_rejection());
}

#[test]
fn transparent_answers_with_everything_of_its_field() {
    let upstream = HookError::Upstream(UpstreamError);
    assert_eq!(upstream.status(), 502);
    assert_eq!(upstream.code(), "upstream-failed");
    assert!(!upstream.is_public());

    let wrapped = Wrapped(HookError::Store(std::io::Error::other("disk")));
    assert_eq!(wrapped.status(), 503);
    let mut headers = axum::http::HeaderMap::new();
    wrapped.headers(&mut headers);
    assert_eq!(headers["retry-after"], "5", "the field's headers");
}

#[test]
fn the_catalog_lists_every_answer_with_transparent_fields_expanded() {
    let catalog = HookError::catalog();
    let codes: Vec<(u16, &str)> = catalog
        .iter()
        .map(|e| (e.status.as_u16(), e.code))
        .collect();
    assert_eq!(
        &codes[..7],
        [
            (422, "unsupported-event"),
            (400, "malformed-payload"),
            (503, "store-unavailable"),
            (401, "bad-signature"),
            (401, "bad-api-key"),
            (429, "quota"),
            (502, "upstream-failed"),
        ]
    );
    // JsonRejection's own answers follow.
    assert!(codes[7..].contains(&(415, "unsupported-media-type")));
    assert!(codes[7..].contains(&(422, "unprocessable-entity")));
    assert_eq!(
        catalog[0].description,
        "The event is well formed, but this service does not take it."
    );
    assert_eq!(catalog[1].description, "payload lacks `{field}`");
    assert_eq!(InboxFull::catalog()[0].code, "inbox-full");
}

#[tokio::test]
async fn a_derived_error_is_a_response_the_layer_renders_and_counts() {
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route(
            "/store",
            post(|| async { Err::<(), _>(HookError::Store(std::io::Error::other("disk full"))) }),
        )
        .route(
            "/event",
            post(|| async { Err::<(), _>(HookError::UnsupportedEvent("issues".into())) }),
        )
        .layer(layer);

    let (status, headers, body) =
        send(&app, Request::post("/store").body(Body::empty()).unwrap()).await;
    assert_eq!(status, 503);
    assert_eq!(headers["retry-after"], "5");
    assert_eq!(body["code"], "store-unavailable");
    assert!(
        !body.to_string().contains("disk full"),
        "5xx text stays internal"
    );

    let (status, _, body) = send(&app, Request::post("/event").body(Body::empty()).unwrap()).await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"], "event `issues` is not handled here");
    let snapshot = ledger.snapshot();
    assert_eq!(snapshot.handled, 2);
    assert_eq!(snapshot.rejected, 0);
}

/// One route per axum rejection: the handler takes the extractor as a `Result` and passes
/// the rejection on with `?`.
fn rejections() -> Router {
    async fn json(r: Result<Json<HashMap<String, u32>>, JsonRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn json_in_enum(
        r: Result<Json<HashMap<String, u32>>, JsonRejection>,
    ) -> Result<(), HookError> {
        let _ = r?;
        Ok(())
    }
    async fn query(r: Result<Query<HashMap<String, u32>>, QueryRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn form(r: Result<Form<HashMap<String, u32>>, FormRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn raw_form(r: Result<RawForm, RawFormRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn path(r: Result<Path<u32>, PathRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn raw_path(r: Result<RawPathParams, RawPathParamsRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn bytes(r: Result<Bytes, BytesRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn string(r: Result<String, StringRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    async fn extension(r: Result<Extension<u32>, ExtensionRejection>) -> Result<(), Error> {
        let _ = r?;
        Ok(())
    }
    Router::new()
        .route("/json", post(json))
        .route("/json-in-enum", post(json_in_enum))
        .route("/query", get(query))
        .route("/form", post(form))
        .route("/raw-form", post(raw_form))
        .route("/path/{n}", get(path))
        .route("/raw-path/{n}", get(raw_path))
        .route("/bytes", post(bytes))
        .route("/string", post(string))
        .route("/extension", get(extension))
        .layer(axum::extract::DefaultBodyLimit::max(16))
}

#[tokio::test]
async fn every_rejection_met_with_question_mark_keeps_its_status_and_code_and_counts_as_rejected() {
    let json = |uri: &str, content_type: &str, body: &'static str| {
        Request::post(uri)
            .header("content-type", content_type)
            .body(Body::from(body))
            .unwrap()
    };
    let cases: Vec<(Request<Body>, u16, &str)> = vec![
        (json("/json", "application/json", "{"), 400, "bad-request"),
        (
            json("/json", "application/json", r#"{"a":"x"}"#),
            422,
            "unprocessable-entity",
        ),
        (
            json("/json", "text/plain", "{}"),
            415,
            "unsupported-media-type",
        ),
        (
            json("/json", "application/json", r#"{"aaaaaaaaaa":1,"b":2}"#),
            413,
            "payload-too-large",
        ),
        (
            json("/json-in-enum", "text/plain", "{}"),
            415,
            "unsupported-media-type",
        ),
        (
            Request::get("/query?n=x").body(Body::empty()).unwrap(),
            400,
            "bad-request",
        ),
        (
            json("/form", "text/plain", "n=1"),
            415,
            "unsupported-media-type",
        ),
        (
            json("/form", "application/x-www-form-urlencoded", "n=x"),
            422,
            "unprocessable-entity",
        ),
        (
            json("/raw-form", "text/plain", "n=1"),
            415,
            "unsupported-media-type",
        ),
        (
            Request::get("/path/x").body(Body::empty()).unwrap(),
            400,
            "bad-request",
        ),
        (
            Request::get("/raw-path/%FF").body(Body::empty()).unwrap(),
            400,
            "bad-request",
        ),
        (
            json("/bytes", "text/plain", "0123456789abcdefXYZ"),
            413,
            "payload-too-large",
        ),
        (
            json("/string", "text/plain", "0123456789abcdefXYZ"),
            413,
            "payload-too-large",
        ),
        (
            Request::get("/extension").body(Body::empty()).unwrap(),
            500,
            "internal",
        ),
    ];
    let (layer, ledger) = FaultLayer::pair();
    let app = rejections().layer(layer);
    let total = cases.len() as u64;
    for (request, status, code) in cases {
        let uri = request.uri().clone();
        let (got, headers, body) = send(&app, request).await;
        assert_eq!(got, status, "{uri}: {body}");
        assert_eq!(body["code"], code, "{uri}");
        assert_eq!(headers["content-type"], "application/problem+json", "{uri}");
        if status < 500 {
            assert!(
                body["detail"].as_str().is_some_and(|d| !d.is_empty()),
                "{uri}: {body}"
            );
        }
    }
    let snapshot = ledger.snapshot();
    assert_eq!(snapshot.outcome(Outcome::Rejected), total, "{snapshot:#?}");
    assert_eq!(snapshot.handled, 0);
    assert_eq!((snapshot.started, snapshot.finished()), (total, total));
}

#[test]
fn any_other_error_met_with_question_mark_is_still_an_internal_500() {
    let error: Error = "x".parse::<u8>().unwrap_err().into();
    assert_eq!(error.status(), 500);
    assert_eq!(error.code(), "internal");
    assert!(!error.as_fault().counts_as_rejection());
}

#[test]
fn with_source_attaches_a_cause_to_any_error() {
    let error = Error::from_fault(HookError::Quota(3)).with_source(std::io::Error::other("redis"));
    assert_eq!(error.status(), 429);
    assert_eq!(error.code(), "quota");
    let source = std::error::Error::source(error.as_fault()).unwrap();
    assert_eq!(source.to_string(), "redis");
}
