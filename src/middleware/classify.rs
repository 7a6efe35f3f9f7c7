//! What a response is: a success to pass on, an error status to re-render (and whether its
//! body is worth reading for a message), and the bounded read of that body.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{
    CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_LENGTH, CONTENT_LOCATION, CONTENT_RANGE, ETAG,
    LAST_MODIFIED, TRANSFER_ENCODING,
};
use http::{response, HeaderMap, HeaderName, StatusCode};
use http_body::Body;

use crate::panic::catch;

/// Whether a response without a fault is a failure to re-render and count as rejected.
pub(crate) fn is_error_status(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

/// The most an error response's body may declare for the layer to wait for its text.
/// axum's rejections are a few dozen bytes; a larger or open-ended body (a proxied 502 that
/// streams) is not waited for, so a stalled body cannot hold back the answer.
const MAX_READABLE_BODY_BYTES: u64 = 64 * 1024;

/// Whether an error response's body is worth reading for its message: plain text of a known,
/// small size.
pub(crate) fn is_readable<B: Body>(head: &response::Parts, body: &B) -> bool {
    !head.headers.contains_key(CONTENT_ENCODING)
        && body
            .size_hint()
            .upper()
            .is_some_and(|upper| upper <= MAX_READABLE_BODY_BYTES)
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

/// Reads `body` into `text` until its end or until `text` holds more than `cap` bytes, so a
/// rejection's message costs at most the cap. An error or a panic of the body ends the read.
pub(crate) fn read_bounded<B: Body<Data = Bytes>>(
    mut body: Pin<&mut B>,
    text: &mut Vec<u8>,
    cap: usize,
    cx: &mut Context<'_>,
) -> Poll<()> {
    while text.len() <= cap {
        let polled = catch(|| body.as_mut().poll_frame(cx));
        match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Some(Ok(frame)))) => {
                if let Some(data) = frame.data_ref() {
                    // One byte past the cap tells the summary the text was cut.
                    let room = cap + 1 - text.len();
                    text.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Ok(Poll::Ready(Some(Err(_)) | None)) | Err(_) => break,
        }
    }
    Poll::Ready(())
}
