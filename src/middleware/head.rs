//! The head of a response: whether a body follows it, the length it declares, and the
//! headers of a body that a problem body replaces.

use http::header::{
    CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_LENGTH, CONTENT_LOCATION, CONTENT_RANGE, ETAG,
    LAST_MODIFIED, TRANSFER_ENCODING,
};
use http::{HeaderMap, HeaderName, Method, StatusCode};

/// Whether an answer with `status` to a request with `method` carries no body on the wire,
/// whatever body the response holds: the answer to a HEAD, a 1xx, a 204 and a 304 (RFC 9110,
/// sections 9.3.2, 15.2, 15.3.5 and 15.4.5). A server sends the head alone and never polls
/// the body, so the head going out delivers the answer whole.
pub(crate) fn sends_no_body(method: &Method, status: StatusCode) -> bool {
    status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || *method == Method::HEAD
}

/// The `Content-Length` a response head declares.
pub(crate) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

/// Headers that describe a body the problem body replaces: its framing, its coding, its
/// language, its identity and its digest. (`Content-Type` is overwritten.)
const REPLACED_BODY_HEADERS: [HeaderName; 8] = [
    CONTENT_LENGTH,
    TRANSFER_ENCODING,
    CONTENT_ENCODING,
    CONTENT_LANGUAGE,
    CONTENT_LOCATION,
    ETAG,
    LAST_MODIFIED,
    HeaderName::from_static("content-digest"),
];

/// Removes from an answered response's head the headers of the body the problem body
/// replaces, and keeps every header that describes the resource or the exchange: `Allow` on a
/// 405, `WWW-Authenticate` on a 401, `Retry-After`, `Location`, `Vary` and CORS headers
/// alike. (`Cache-Control` is then set to `no-store` for the problem body.)
///
/// `Content-Range` is kept on a 416 only: there it gives the resource's length
/// (`bytes */100`), which RFC 9110 (section 15.5.17) requires; anywhere else it places the
/// replaced body's bytes.
pub(crate) fn remove_replaced_body_headers(headers: &mut HeaderMap, status: StatusCode) {
    if headers.is_empty() {
        return;
    }
    for name in REPLACED_BODY_HEADERS {
        headers.remove(name);
    }
    if status != StatusCode::RANGE_NOT_SATISFIABLE {
        headers.remove(CONTENT_RANGE);
    }
}
