//! Bounded writing: the cost of a message is capped before the work, never cut after it.
//!
//! Every message is produced with `Display` into a [`BoundedWriter`] that refuses bytes past
//! its cap, so a `Display` that would write ten megabytes stops at the first refused write.
//! The `source()` chain is walked to a fixed depth and only notes that it goes on. A
//! `Display` or `source()` that panics yields a placeholder instead of failing the request.

use std::any::Any;
use std::error::Error as StdError;
use std::fmt::{self, Write as _};

use crate::limits::TRUNCATION_MARKER;
use crate::panic::catch;

/// What a summary says when an error's `Display` panicked while being formatted.
const DISPLAY_PANICKED: &str = "<the error's Display implementation panicked>";

/// What a summary says of a panic whose payload is neither `&str` nor `String`.
const OPAQUE_PANIC: &str = "<panic payload is not a string>";

/// Room reserved for a source chain once it has a first link.
const CHAIN_CAPACITY: usize = 1024;

/// Placed between the links of a source chain in a summary.
pub(crate) const CHAIN_SEPARATOR: &str = " <- ";

/// Stands for the links past the cap when the chain goes on.
const CHAIN_CONTINUES: &str = "…";

/// A `fmt::Write` that accepts at most `cap` bytes and refuses everything past them.
///
/// When a write does not fit, the writer keeps what fits on a UTF-8 char boundary, appends
/// [`TRUNCATION_MARKER`] (still within the cap) and returns `fmt::Error`, which stops a
/// well-behaved `Display` at once. Later writes are refused without copying anything.
pub(crate) struct BoundedWriter<'a> {
    out: &'a mut String,
    start: usize,
    end: usize,
    truncated: bool,
}

impl<'a> BoundedWriter<'a> {
    /// A writer appending to `out` at most `cap` more bytes.
    pub(crate) fn new(out: &'a mut String, cap: usize) -> Self {
        let start = out.len();
        Self {
            out,
            start,
            end: start.saturating_add(cap),
            truncated: false,
        }
    }

    /// Whether anything was refused.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Write for BoundedWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.truncated {
            return Err(fmt::Error);
        }
        if self.out.len() + s.len() <= self.end {
            self.out.push_str(s);
            return Ok(());
        }
        // The marker must fit inside the cap too, so the kept text ends before `keep_end`.
        let keep_end = self
            .end
            .saturating_sub(TRUNCATION_MARKER.len())
            .max(self.start);
        if self.out.len() > keep_end {
            let cut = floor_char_boundary(self.out, keep_end);
            self.out.truncate(cut);
        } else {
            let room = keep_end - self.out.len();
            self.out.push_str(&s[..floor_char_boundary(s, room)]);
        }
        self.out.push_str(TRUNCATION_MARKER);
        self.truncated = true;
        Err(fmt::Error)
    }
}

/// The largest index `<= at` that is a char boundary of `s`.
pub(crate) fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Appends `value`'s `Display` to `out`, at most `cap` bytes; returns whether it was cut.
///
/// A panicking `Display` leaves a placeholder in place of whatever it had written.
pub(crate) fn write_bounded(out: &mut String, cap: usize, value: &dyn fmt::Display) -> bool {
    let start = out.len();
    let result = catch(|| write_uncaught(out, cap, value));
    match result {
        Ok(truncated) => truncated,
        Err(_) => {
            out.truncate(start);
            let _ = BoundedWriter::new(out, cap).write_str(DISPLAY_PANICKED);
            false
        }
    }
}

/// [`write_bounded`] without its `catch`, for callers inside one already.
fn write_uncaught(out: &mut String, cap: usize, value: &dyn fmt::Display) -> bool {
    let mut writer = BoundedWriter::new(out, cap);
    // An `Err` here is our own refusal (or the impl's own error): what was written stays.
    let _ = write!(writer, "{value}");
    writer.truncated()
}

/// The text a panic payload carries, bounded; `&str` and `String` payloads are read as is.
pub(crate) fn write_panic_payload(out: &mut String, cap: usize, payload: &(dyn Any + Send)) {
    let text = if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        OPAQUE_PANIC
    };
    let _ = BoundedWriter::new(out, cap).write_str(text);
}

/// Appends the `source()` chain of `error` (not `error` itself), at most `max_links` links of
/// at most `cap` bytes each; returns whether the chain goes on past what was written.
///
/// The walk stops at the cap: a chain 10,000 deep costs what one of `max_links` costs. One
/// catch covers the whole walk: a link whose `Display` or `source()` panics leaves the
/// placeholder in place of the chain.
fn write_chain(
    out: &mut String,
    error: &(dyn StdError + 'static),
    max_links: usize,
    cap: usize,
) -> bool {
    let start = out.len();
    let walked = catch(|| walk_chain(out, error, max_links, cap));
    walked.unwrap_or_else(|_| chain_panicked(out, start))
}

/// [`write_bounded`] of `error` into `message`, then [`write_chain`] of its sources into
/// `chain`, under one catch for both: what the two write is theirs, and a panic in either
/// leaves what each leaves. One catch fewer per failure (BENCHMARKS.md, "Fifth round").
pub(crate) fn write_message_and_chain(
    message: &mut String,
    chain: &mut String,
    error: &(dyn StdError + 'static),
    max_links: usize,
    cap: usize,
) {
    let (message_start, chain_start) = (message.len(), chain.len());
    let mut message_written = false;
    let walked = catch(|| {
        write_uncaught(message, cap, error);
        message_written = true;
        walk_chain(chain, error, max_links, cap)
    });
    if walked.is_ok() {
        return;
    }
    if message_written {
        chain_panicked(chain, chain_start);
    } else {
        // As `write_bounded` leaves it; the chain not walked yet is walked on its own.
        message.truncate(message_start);
        let _ = BoundedWriter::new(message, cap).write_str(DISPLAY_PANICKED);
        write_chain(chain, error, max_links, cap);
    }
}

/// [`write_chain`] without its `catch`.
fn walk_chain(
    out: &mut String,
    error: &(dyn StdError + 'static),
    max_links: usize,
    cap: usize,
) -> bool {
    let mut next = error.source();
    if next.is_some() {
        // Room for a few links up front, so a long chain grows the string once or twice.
        out.reserve(cap.min(CHAIN_CAPACITY));
    }
    let mut links = 0;
    while let Some(link) = next {
        if links > 0 {
            out.push_str(CHAIN_SEPARATOR);
        }
        if links == max_links {
            out.push_str(CHAIN_CONTINUES);
            return true;
        }
        write_uncaught(out, cap, link);
        links += 1;
        next = link.source();
    }
    false
}

/// What a chain whose walk panicked leaves: the placeholder in place of what was written.
fn chain_panicked(out: &mut String, start: usize) -> bool {
    out.truncate(start);
    out.push_str(DISPLAY_PANICKED);
    false
}

#[cfg(all(test, not(loom)))]
mod tests;
