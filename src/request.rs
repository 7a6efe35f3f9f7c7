//! What the layer keeps of a request to describe its failure: captured at `call` by
//! reference-counted clones only, so the success path copies no bytes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::MatchedPath;
use http::{HeaderName, HeaderValue, Method, Request, Uri};

use crate::outcome::UNMATCHED_ROUTE;

/// The longest request id taken from a client: it is echoed in a header, the problem body and
/// every report, so a client must not be able to make it large. UUIDs and the ids of common
/// tracing systems are well under it.
pub(crate) const MAX_REQUEST_ID_BYTES: usize = 128;

/// The request facts a failure's summary, problem body and report need.
#[derive(Debug)]
pub(crate) struct RequestMeta {
    method: Method,
    uri: Uri,
    route: Option<MatchedPath>,
    request_id: Option<HeaderValue>,
}

impl RequestMeta {
    pub(crate) fn capture<B>(request: &Request<B>, request_id_header: &HeaderName) -> Self {
        Self {
            method: request.method().clone(),
            uri: request.uri().clone(),
            route: request.extensions().get::<MatchedPath>().cloned(),
            request_id: request.headers().get(request_id_header).cloned(),
        }
    }

    pub(crate) fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The route template from axum's `MatchedPath`, never the raw path.
    pub(crate) fn route(&self) -> &str {
        self.route
            .as_ref()
            .map_or(UNMATCHED_ROUTE, MatchedPath::as_str)
    }

    /// The route template, when a route matched.
    #[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
    pub(crate) fn matched_route(&self) -> Option<&str> {
        self.route.as_ref().map(MatchedPath::as_str)
    }

    /// The request path without its query: query strings carry API keys.
    pub(crate) fn path(&self) -> &str {
        self.uri.path()
    }

    /// The request id the client sent, if it is printable and at most
    /// [`MAX_REQUEST_ID_BYTES`]; else a new one unique to this process. A header value, so a
    /// client's id is shared, not copied, and either goes straight into the response head.
    pub(crate) fn request_id(&self) -> HeaderValue {
        match &self.request_id {
            Some(id) if is_usable(id) => id.clone(),
            _ => generate_request_id(),
        }
    }
}

fn is_usable(id: &HeaderValue) -> bool {
    !id.is_empty() && id.len() <= MAX_REQUEST_ID_BYTES && id.to_str().is_ok()
}

/// The text of a request id from [`RequestMeta::request_id`], which is always printable.
pub(crate) fn request_id_text(id: &HeaderValue) -> &str {
    id.to_str().unwrap_or_default()
}

/// Digits of the per-process prefix and of the counter in a generated request id.
const PREFIX_DIGITS: usize = 8;
const COUNTER_DIGITS: usize = 12;

/// A process-unique id: a per-process prefix and a counter, in hex. Made only when a failure
/// needs one and the request brought none, so it costs nothing on the success path.
fn generate_request_id() -> HeaderValue {
    static PREFIX: OnceLock<u32> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = *PREFIX.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Mixed with the pid so that processes started in the same instant differ.
        let mixed = (nanos ^ u64::from(std::process::id()).rotate_left(32))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> 32) as u32
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut id = [b'-'; PREFIX_DIGITS + 1 + COUNTER_DIGITS];
    write_hex(&mut id[..PREFIX_DIGITS], u64::from(prefix));
    write_hex(&mut id[PREFIX_DIGITS + 1..], n);
    HeaderValue::from_bytes(&id).expect("hex digits and a dash are a valid header value")
}

/// Writes the low hex digits of `value` into `out`, most significant first: what `{:0N$x}`
/// writes, without the formatting machinery, which costs more than the rest of the id.
fn write_hex(out: &mut [u8], value: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = out.len();
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 4 * (digits - 1 - i);
        *slot = HEX[(value >> shift & 0xf) as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_id_comes_from_the_header_or_is_generated_unique() {
        let header = HeaderName::from_static("x-request-id");
        let with = Request::builder()
            .uri("/a/b?apiKey=secret")
            .header("x-request-id", "abc-123")
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&with, &header);
        assert_eq!(meta.request_id(), "abc-123");
        assert_eq!(request_id_text(&meta.request_id()), "abc-123");
        assert_eq!(meta.path(), "/a/b");
        assert_eq!(meta.route(), UNMATCHED_ROUTE);

        let without = Request::builder().uri("/").body(()).unwrap();
        let meta = RequestMeta::capture(&without, &header);
        let (a, b) = (meta.request_id(), meta.request_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 8 + 1 + 12);
        let mut hex = [0; 12];
        write_hex(&mut hex, 0xab_cdef_0123);
        assert_eq!(&hex, format!("{:012x}", 0xab_cdef_0123_u64).as_bytes());

        let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        let too_long = Request::get("/")
            .header("x-request-id", &long)
            .body(())
            .unwrap();
        let meta = RequestMeta::capture(&too_long, &header);
        assert_eq!(meta.request_id().len(), 8 + 1 + 12);
    }
}
