//! Driving the router, and what every problem answer must be whatever the case.

use axum::body::{to_bytes, Body};
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::Router;
use faultline::limits::TRUNCATION_MARKER;
use faultline::service::PROBLEM_JSON;
use proptest::prelude::*;
use serde_json::Value;
use tower::ServiceExt;

use crate::case::{Caps, Case};

thread_local! {
    /// One current-thread runtime per test thread, shared by that thread's cases.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
}

/// A problem response, read whole.
pub(crate) struct Answer {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    pub(crate) request_id_header: Option<HeaderValue>,
    body: Vec<u8>,
    pub(crate) json: Value,
}

impl Answer {
    pub(crate) fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("checked to be UTF-8 when read")
    }

    pub(crate) fn detail(&self) -> &str {
        self.json["detail"]
            .as_str()
            .expect("checked to be a string")
    }

    /// The room the body cap left for the escaped detail: the detail is the last member.
    pub(crate) fn detail_room(&self, body_cap: usize) -> usize {
        const KEY: &str = ",\"detail\":\"";
        let text = self.text();
        // Escaped string values cannot hold an unescaped quote, so the first match is the key.
        let start = text.find(KEY).expect("a detail member") + KEY.len();
        let escaped_detail = text.len() - start - "\"}".len();
        body_cap - text.len() + escaped_detail
    }
}

/// Sends `GET /fail` (with `x-request-id` when given) through `case`'s router behind a layer
/// with `caps`, and checks what every problem answer must be.
pub(crate) fn send(
    case: &Case,
    caps: Caps,
    request_id: Option<&str>,
) -> Result<Answer, TestCaseError> {
    let app = Router::new()
        .route("/fail", case.route())
        .layer(caps.layer());
    let mut request = Request::get("/fail");
    if let Some(id) = request_id {
        request = request.header("x-request-id", id);
    }
    let request = request.body(Body::empty()).expect("a valid request");
    let (parts, body) = RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let response = app.oneshot(request).await.expect("infallible");
            let (parts, body) = response.into_parts();
            let body = to_bytes(body, usize::MAX).await.expect("a problem body");
            (parts, body)
        })
    });

    let body = body.to_vec();
    let text = std::str::from_utf8(&body);
    prop_assert!(text.is_ok(), "body is not UTF-8: {:?}", text.err());
    let json = serde_json::from_slice::<Value>(&body);
    prop_assert!(
        json.is_ok(),
        "body is not JSON ({:?}): {}",
        json.as_ref().err(),
        String::from_utf8_lossy(&body)
    );
    let json = json.expect("checked above");
    let answer = Answer {
        status: parts.status,
        content_type: parts.headers.get(header::CONTENT_TYPE).cloned(),
        request_id_header: parts.headers.get("x-request-id").cloned(),
        body,
        json,
    };

    prop_assert_eq!(answer.status, case.status);
    prop_assert_eq!(
        answer.content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some(PROBLEM_JSON)
    );
    prop_assert!(
        answer.body.len() <= caps.body_cap(),
        "{} bytes > body cap {}",
        answer.body.len(),
        caps.body_cap()
    );
    prop_assert!(answer.json.is_object());
    prop_assert_eq!(
        answer.json["status"].as_u64(),
        Some(u64::from(case.status.as_u16()))
    );
    prop_assert_eq!(answer.json["code"].as_str(), Some(case.code()));
    let id = answer.json["request_id"].as_str();
    prop_assert!(
        id.is_some_and(|id| !id.is_empty()),
        "request_id: {:?}",
        answer.json["request_id"]
    );
    prop_assert!(answer.json["detail"].is_string());
    prop_assert!(answer.request_id_header.is_some());
    Ok(answer)
}

/// The length of `s` as a JSON string's content, escaped the shortest usual way.
pub(crate) fn escaped_len(s: &str) -> usize {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

/// Checks that `detail` is `message`, or a prefix of it followed by the truncation marker.
pub(crate) fn check_bounded_copy(detail: &str, message: &str) -> Result<(), TestCaseError> {
    if detail == message {
        return Ok(());
    }
    prop_assert!(
        detail.ends_with(TRUNCATION_MARKER),
        "detail is neither the message nor cut with the truncation marker: {:?}",
        detail
    );
    let kept = &detail[..detail.len() - TRUNCATION_MARKER.len()];
    prop_assert!(
        message.starts_with(kept),
        "the kept part is not a prefix of the message: {:?}",
        kept
    );
    Ok(())
}
