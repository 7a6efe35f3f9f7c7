//! RFC 9457 `application/problem+json` bodies, rendered from a summary under a hard byte cap.
//!
//! Each member has its own cap on its escaped length, and `detail` goes last with whatever the
//! body cap leaves, so no input (a long request id header, a message of control characters
//! that escape to six bytes each) can push the body past the cap.

use std::cell::RefCell;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use http::StatusCode;

use crate::config::Config;
use crate::limits::MAX_REQUEST_ID_BYTES;
use crate::limits::TRUNCATION_MARKER;
use crate::request::RequestId;
use crate::summary::Summary;
use crate::text::freeze_written;

/// The media type of every body faultline renders.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Cap on the escaped `type` member: a base URI of the operator's plus a code.
const TYPE_CAP: usize = 256;
/// Cap on the escaped `code` member.
const CODE_CAP: usize = 64;
/// Cap on the escaped `request_id` member: ids from clients are at most
/// `MAX_REQUEST_ID_BYTES`, and quotes and backslashes escape to two bytes.
const REQUEST_ID_CAP: usize = 2 * MAX_REQUEST_ID_BYTES;
/// Cap on the escaped `instance` member (the request path).
const INSTANCE_CAP: usize = 256;

/// The detail of a 5xx, a panic or a service error, unless development mode is on.
pub(crate) const GENERIC_SERVER_DETAIL: &str =
    "The server failed to handle this request. Quote the request_id when you report it.";

/// The detail of an error status that came without a message of its own. No text here has a
/// byte JSON escapes: [`render`] copies them as they are.
fn status_detail(status: StatusCode) -> &'static str {
    match status.as_u16() {
        404 => "No route matches this path.",
        405 => "This route does not accept this method.",
        406 => "None of the accepted media types can be produced.",
        408 => "The request took too long to arrive.",
        413 => "The request body is larger than this route accepts.",
        415 => "This route does not accept this content type.",
        429 => "Too many requests; slow down.",
        503 => "The service is overloaded or unavailable; retry later.",
        504 => "The request took too long to handle.",
        500..=599 => GENERIC_SERVER_DETAIL,
        _ => "The request was rejected.",
    }
}

/// Room made before rendering a body: the usual body is a few hundred bytes; one larger
/// grows its buffer once.
const USUAL_BODY_BYTES: usize = 1024;

/// The problem body of `summary` for the request at `path`, rendered straight into this
/// thread's scratch chunk: no buffer of its own and no copy. With it, where in it the
/// request id's escaped text is, for the id's header value to share.
pub(crate) fn problem_body(
    summary: &Summary,
    request_id: &RequestId,
    path: &str,
    config: &Config,
) -> (Bytes, Range<usize>) {
    let room = config.max_body_bytes.min(USUAL_BODY_BYTES);
    let mut id_at = 0..0;
    let body = freeze_written(room, |out| {
        id_at = render(out, summary, request_id, path, config);
    });
    (body, id_at)
}

/// Renders the problem body of `summary` for the request at `path` into `out`; returns where
/// the request id's escaped text is, from the body's start.
///
/// Two members are copied without the scan for bytes to escape (ledger-grind's rejected row,
/// a 404: 5,403 instructions per request with the scans, 5,135 without): an id this process
/// made, hex digits and a dash, and the detail of a status that came without a message of
/// its own, one of [`status_detail`]'s texts, when it fits.
fn render(
    out: &mut BytesMut,
    summary: &Summary,
    request_id: &RequestId,
    path: &str,
    config: &Config,
) -> Range<usize> {
    let cap = config.max_body_bytes;
    let start = out.len();
    match &config.type_base {
        None => push_usual_head(out, summary),
        Some(base) => push_head(out, summary, Some(base)),
    }
    let id_start = out.len() - start;
    match request_id {
        RequestId::Made(made) => out.extend_from_slice(made),
        // Only a sent id's text is checked (as UTF-8) and scanned: a made one is bytes here.
        RequestId::Sent(_) => push_escaped(out, request_id.text(), REQUEST_ID_CAP),
    }
    let id_at = id_start..out.len() - start;
    out.extend_from_slice(b"\",\"instance\":\"");
    push_escaped(out, path, INSTANCE_CAP);
    out.extend_from_slice(b"\",\"detail\":\"");
    let public = summary
        .public_text()
        .filter(|public| !public.is_empty() && (config.development || !is_server_side(summary)));
    // The closing quote and brace follow the detail's text.
    let room = cap.saturating_sub(out.len() - start + 2);
    match public {
        Some(detail) => push_escaped(out, detail, room),
        None => {
            let detail = status_detail(summary.status);
            if detail.len() <= room {
                out.extend_from_slice(detail.as_bytes());
            } else {
                push_escaped(out, detail, room);
            }
        }
    }
    out.extend_from_slice(b"\"}");
    id_at
}

/// Pushes the members up to the request id's value: each key with the quotes around it in
/// one piece, fewer and longer copies than a push per quote.
fn push_head(out: &mut BytesMut, summary: &Summary, type_base: Option<&str>) {
    out.extend_from_slice(b"{\"type\":\"");
    match type_base {
        Some(base) => push_escaped(out, &format!("{base}{}", summary.code), TYPE_CAP),
        None => out.extend_from_slice(b"about:blank"),
    }
    out.extend_from_slice(b"\",\"title\":\"");
    let title = summary.status.canonical_reason().unwrap_or("Error");
    push_escaped(out, title, CODE_CAP);
    out.extend_from_slice(b"\",\"status\":");
    out.extend_from_slice(summary.status.as_str().as_bytes());
    out.extend_from_slice(b",\"code\":\"");
    push_escaped(out, summary.code, CODE_CAP);
    out.extend_from_slice(b"\",\"request_id\":\"");
}

/// [`push_head`] without a `type` base, whose bytes depend only on the status and the code:
/// kept per thread from the last body, so that a run of the same failure copies them once.
/// In a thread-local destructor, after the kept head is gone, the head is written afresh.
fn push_usual_head(out: &mut BytesMut, summary: &Summary) {
    /// The status and the code (a `&'static str`, compared by address and length: equal
    /// pointers are equal texts) of the head in the buffer.
    type Head = (StatusCode, &'static str, BytesMut);
    thread_local! {
        static HEAD: RefCell<Head> = RefCell::new((StatusCode::OK, "", BytesMut::new()));
    }
    let copied = HEAD.try_with(|head| {
        let Ok(mut head) = head.try_borrow_mut() else {
            return false;
        };
        let (status, code, bytes) = &mut *head;
        if *status != summary.status || !std::ptr::eq(*code, summary.code) || bytes.is_empty() {
            bytes.clear();
            push_head(bytes, summary, None);
            (*status, *code) = (summary.status, summary.code);
        }
        out.extend_from_slice(bytes);
        true
    });
    if copied != Ok(true) {
        push_head(out, summary, None);
    }
}

/// Whether the client must see a generic detail, whatever the summary holds.
fn is_server_side(summary: &Summary) -> bool {
    summary.status.is_server_error()
}

/// Pushes the JSON-escaped content of `s`, at most `cap` bytes of it. When it does not fit,
/// it keeps whole escapes and chars up to where the marker still fits within the cap, and
/// never so many that the text with the marker reads longer than `s` itself, so a cut here
/// keeps every cap the text was written under.
#[inline]
fn push_escaped(out: &mut BytesMut, s: &str, cap: usize) {
    // The usual case: nothing to escape, and it fits.
    if s.len() <= cap && !any_needs_escape(s.as_bytes()) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    push_escaped_slowly(out, s, cap);
}

/// [`push_escaped`] of a text that needs escaping or does not fit: out of line, so that the
/// usual case, inlined, costs no call (BENCHMARKS.md, "Fifth round", "And after").
#[inline(never)]
fn push_escaped_slowly(out: &mut BytesMut, s: &str, cap: usize) {
    let escaped_len: usize = s.bytes().map(escaped_byte_len).sum();
    if escaped_len <= cap {
        push_all_escaped(out, s, escaped_len);
        return;
    }
    let start = out.len();
    // The end of the last piece after which the marker still fits.
    let mut safe = start;
    let mut buf = [0u8; 6];
    for (at, c) in s.char_indices() {
        let piece = escape(c, &mut buf);
        if out.len() - start + piece.len() > cap {
            out.truncate(safe);
            if out.len() - start + TRUNCATION_MARKER.len() <= cap {
                out.extend_from_slice(TRUNCATION_MARKER.as_bytes());
            }
            return;
        }
        out.extend_from_slice(piece.as_bytes());
        let kept = at + c.len_utf8();
        if out.len() - start + TRUNCATION_MARKER.len() <= cap
            && kept + TRUNCATION_MARKER.len() <= s.len()
        {
            safe = out.len();
        }
    }
}

/// Whether JSON escapes any byte of `bytes`, tested eight bytes at a time: a problem body's
/// members are short texts, where a byte-by-byte loop costs more than the copy itself.
fn any_needs_escape(bytes: &[u8]) -> bool {
    /// A 1 in every byte of a word.
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH_BITS: u64 = ONES * 0x80;
    // Whether any byte of `word` is below `n` (exact for any word when `n` <= 0x80): a byte
    // below `n` borrows into its high bit, which `!word` keeps only for bytes under 0x80.
    let any_below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH_BITS;
    let any_equal = |word: u64, byte: u8| any_below(word ^ (ONES * u64::from(byte)), 1);
    let needs = |word: u64| any_below(word, 0x20) | any_equal(word, b'"') | any_equal(word, b'\\');
    let mut chunks = bytes.chunks_exact(8);
    let mut found = 0;
    for chunk in &mut chunks {
        found |= needs(u64::from_ne_bytes(
            chunk.try_into().expect("chunks of eight"),
        ));
    }
    found != 0 || chunks.remainder().iter().any(|&byte| needs_escape(byte))
}

/// Whether JSON escapes this byte: quotes, backslashes and control characters.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Bytes a byte of UTF-8 takes once escaped. Every byte JSON escapes is ASCII, so the bytes
/// of multi-byte chars count one each, as they are copied.
fn escaped_byte_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 2,
        0..=0x1f => 6,
        _ => 1,
    }
}

/// Pushes all of `s` escaped, copying the runs between escapes whole: the usual case, where
/// the text fits its cap.
fn push_all_escaped(out: &mut BytesMut, s: &str, escaped_len: usize) {
    out.reserve(escaped_len);
    let mut buf = [0u8; 6];
    let mut run = 0;
    let bytes = s.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        if needs_escape(byte) {
            // `at` is an ASCII byte, so the runs copied are whole chars.
            out.extend_from_slice(&bytes[run..at]);
            out.extend_from_slice(escape(char::from(byte), &mut buf).as_bytes());
            run = at + 1;
        }
    }
    out.extend_from_slice(&bytes[run..]);
}

fn escape(c: char, buf: &mut [u8; 6]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        c if (c as u32) < 0x20 => {
            let n = c as u8;
            *buf = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(n >> 4) as usize],
                HEX[(n & 15) as usize],
            ];
            std::str::from_utf8(&buf[..]).unwrap_or("?")
        }
        c => c.encode_utf8(&mut buf[..]),
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
