//! One request through a service in process, with `oneshot`, and its answer read to the end.

use axum::body::{to_bytes, Body};
use axum::Router;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, Request, Response, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

/// `GET path`, with no body.
pub fn get_request(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

/// Sends `request` through `app` and reads the answer with [`read`].
pub async fn send(app: &Router, request: Request<Body>) -> (StatusCode, HeaderMap, Value) {
    read(app.clone().oneshot(request).await.unwrap()).await
}

/// Sends `count` GETs of `path` through `app`, each answer read to its end.
pub async fn send_gets(app: &Router, path: &str, count: usize) {
    for _ in 0..count {
        send(app, get_request(path)).await;
    }
}

/// The status, headers and JSON body of `response`, its body read to the end (`Null` when the
/// body is not JSON). A JSON object must come as problem+json, with a true content-length
/// when it has one.
pub async fn read<B>(response: Response<B>) -> (StatusCode, HeaderMap, Value)
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let (head, body) = response.into_parts();
    let bytes = to_bytes(Body::new(body), usize::MAX).await.unwrap();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if value.is_object() {
        assert_eq!(head.headers[CONTENT_TYPE], faultline::service::PROBLEM_JSON);
        if let Some(length) = head.headers.get(CONTENT_LENGTH) {
            assert_eq!(
                length,
                bytes.len().to_string().as_str(),
                "the problem body's"
            );
        }
    }
    (head.status, head.headers, value)
}

/// The status and problem body of `response`, which must be a problem.
pub async fn problem_of<B>(response: Response<B>) -> (StatusCode, Value)
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let (status, _, problem) = read(response).await;
    assert!(problem.is_object(), "not a problem body: {problem}");
    (status, problem)
}
