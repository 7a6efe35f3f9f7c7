//! Request ids: a client's own, when it is usable, else one made here, unique to this
//! process and cheap enough to make only when a failure needs one.

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::HeaderValue;

use crate::limits::MAX_REQUEST_ID_BYTES;
use crate::text::freeze;

/// Whether a client's id may be echoed: printable, not empty, and at most
/// [`MAX_REQUEST_ID_BYTES`].
pub(super) fn is_usable(id: &HeaderValue) -> bool {
    !id.is_empty() && id.len() <= MAX_REQUEST_ID_BYTES && id.to_str().is_ok()
}

/// Digits of the per-process prefix and of the counter in a generated request id.
const PREFIX_DIGITS: usize = 8;
const COUNTER_DIGITS: usize = 12;

/// Bytes of a generated request id: the prefix, a dash, the counter.
const MADE_ID_BYTES: usize = PREFIX_DIGITS + 1 + COUNTER_DIGITS;

/// A request's id, from [`RequestMeta::request_id`](super::RequestMeta::request_id): the one
/// the client sent, when it is usable ([`is_usable`]), or one made here, kept as text until an
/// answer needs it as a header value, so that it can share the problem body's buffer.
#[derive(Debug, Clone)]
pub(crate) enum RequestId {
    Sent(HeaderValue),
    Made([u8; MADE_ID_BYTES]),
}

impl RequestId {
    /// The id as text. Printable ASCII either way (a sent id is usable, a made one is hex
    /// digits and a dash), so the check is the cheap UTF-8 one, never the header one again.
    pub(crate) fn text(&self) -> &str {
        let bytes = match self {
            Self::Sent(value) => value.as_bytes(),
            Self::Made(bytes) => bytes,
        };
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The id as a header value. A made one is a slice of `rendered` at `at` when its text is
    /// there (the problem body it was rendered into: one buffer for both), else bytes of its
    /// own.
    // Inlined into the answer, its one caller (BENCHMARKS.md, "Sixth round").
    #[inline]
    pub(crate) fn header_value(&self, rendered: &Bytes, at: Range<usize>) -> HeaderValue {
        let made = match self {
            Self::Sent(value) => return value.clone(),
            Self::Made(made) => made,
        };
        let bytes = match rendered.get(at.clone()) {
            Some(text) if text == made => rendered.slice(at),
            _ => freeze(made),
        };
        HeaderValue::from_maybe_shared(bytes)
            .expect("hex digits and a dash are a valid header value")
    }
}

/// Ids a thread takes from the process-wide counter at a time, so that failures on different
/// cores do not all write one counter.
const ID_BLOCK: u64 = 1024;

/// The next number of this process's request ids: unique, increasing per thread.
fn next_id_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        /// The next number of this thread's block, and the end of the block.
        static BLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    BLOCK
        .try_with(|block| {
            let (mut next, mut end) = block.get();
            if next == end {
                next = NEXT.fetch_add(ID_BLOCK, Ordering::Relaxed);
                end = next + ID_BLOCK;
            }
            block.set((next + 1, end));
            next
        })
        // Without the block (which a `const` cell without a destructor never is): one number
        // straight from the process-wide counter, still unique.
        .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A process-unique id: a per-process prefix and a number, in hex. Made only when a failure
/// needs one and the request brought none, so it costs nothing on the success path.
pub(super) fn generate_request_id() -> RequestId {
    /// The prefix's digits, written once.
    static PREFIX: OnceLock<[u8; PREFIX_DIGITS]> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Mixed with the pid so that processes started in the same instant differ.
        let mixed = (nanos ^ u64::from(std::process::id()).rotate_left(32))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut digits = [0; PREFIX_DIGITS];
        write_hex(&mut digits, mixed >> 32);
        digits
    });
    let n = next_id_number();
    let mut id = [b'-'; MADE_ID_BYTES];
    id[..PREFIX_DIGITS].copy_from_slice(prefix);
    write_hex(&mut id[PREFIX_DIGITS + 1..], n);
    RequestId::Made(id)
}

/// Writes the low hex digits of `value` into `out` (at most 16), most significant first: what
/// `{:0N$x}` writes, without the formatting machinery, which costs more than the rest of the
/// id. All sixteen digits are made at once, a nibble to a byte, with word arithmetic instead
/// of a lookup per digit (ledger-grind's rejected row: BENCHMARKS.md, "Fifth round").
fn write_hex(out: &mut [u8], value: u64) {
    let mut digits = [0; 16];
    digits[..8].copy_from_slice(&hex_digits(value >> 32));
    digits[8..].copy_from_slice(&hex_digits(value));
    out.copy_from_slice(&digits[16 - out.len()..]);
}

/// The eight hex digits of the low 32 bits of `value`, most significant first.
fn hex_digits(value: u64) -> [u8; 8] {
    /// One in every byte.
    const ONES: u64 = 0x0101_0101_0101_0101;
    // A nibble to a byte: the lowest nibble in the lowest byte.
    let mut x = value & 0xffff_ffff;
    x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    // One in each byte whose nibble is 10 or more, which is then a letter: `'a' - '0' - 10`
    // = 39 further on. No byte carries into the next: at most 15 + 48 + 39.
    let letters = ((x + 6 * ONES) >> 4) & ONES;
    (x + u64::from(b'0') * ONES + 39 * letters).to_be_bytes()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_unique_and_written_in_fixed_width_hex() {
        let (a, b) = (generate_request_id(), generate_request_id());
        let (a, b) = (a.text(), b.text());
        assert_ne!(a, b);
        assert_eq!(a.len(), PREFIX_DIGITS + 1 + COUNTER_DIGITS);
        assert_eq!(a[..PREFIX_DIGITS], b[..PREFIX_DIGITS]);
        // The prefix, a dash, the counter: each in its place.
        assert_eq!(&a[PREFIX_DIGITS..=PREFIX_DIGITS], "-");
        assert!(a
            .bytes()
            .filter(|&b| b != b'-')
            .all(|b| b.is_ascii_hexdigit()));
        // The prefix is the high half of the mixed word: all zeros only by a 2^-32 chance
        // (its low half, the mistake, would be zeros always).
        assert_ne!(&a[..PREFIX_DIGITS], "00000000");
        let mut hex = [0; 12];
        write_hex(&mut hex, 0xab_cdef_0123);
        assert_eq!(&hex, format!("{:012x}", 0xab_cdef_0123_u64).as_bytes());
    }

    /// Every digit at every place, the edges of the letters (9, a, f) and of the widths: the
    /// digits are `{:0N$x}`'s, of the low N nibbles.
    #[test]
    fn hex_digits_are_formats_at_every_width_and_digit() {
        let mut values = vec![0, u64::MAX, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];
        values.extend((0..16).map(|shift| 0x9a_u64 << (4 * shift.min(14))));
        values.extend((0..16u64).map(|digit| digit * 0x1111_1111_1111_1111));
        for value in values {
            for width in [1, 8, 12, 16] {
                let mut hex = vec![0; width];
                write_hex(&mut hex, value);
                let low = if width == 16 {
                    value
                } else {
                    value & ((1 << (4 * width)) - 1)
                };
                let expected = format!("{low:0width$x}");
                assert_eq!(std::str::from_utf8(&hex).unwrap(), expected, "{value:#x}");
            }
        }
    }

    #[test]
    fn a_made_id_shares_the_body_it_was_rendered_into_when_its_text_is_there() {
        let id = generate_request_id();
        let body = Bytes::from(format!("{{\"request_id\":\"{}\"}}", id.text()));
        let at = 15..15 + MADE_ID_BYTES;
        let shared = id.header_value(&body, at.clone());
        assert_eq!(shared, id.text());
        assert_eq!(shared.as_bytes().as_ptr(), body[at].as_ptr());
        // Not there (a body cut short, another text): bytes of its own, the same id.
        for at in [15..15 + MADE_ID_BYTES - 1, 0..MADE_ID_BYTES, 100..121] {
            let own = id.header_value(&body, at);
            assert_eq!(own, id.text());
        }
        let sent = RequestId::Sent(HeaderValue::from_static("abc-123"));
        assert_eq!(sent.header_value(&body, 0..0), "abc-123");
        assert_eq!(sent.text(), "abc-123");
    }
}
