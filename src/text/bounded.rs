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
mod tests {
    use super::*;

    struct Endless;

    impl fmt::Display for Endless {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // Would write forever if the writer did not refuse.
            loop {
                f.write_str("é and more ")?;
            }
        }
    }

    #[test]
    fn bounded_writer_stops_an_endless_display_at_the_cap() {
        let mut out = String::new();
        assert!(write_bounded(&mut out, 100, &Endless));
        assert!(out.len() <= 100, "{} bytes", out.len());
        assert!(out.ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn short_text_is_kept_whole_without_marker() {
        let mut out = String::from("x");
        assert!(!write_bounded(&mut out, 10, &"abc"));
        assert_eq!(out, "xabc");
    }

    #[test]
    fn text_exactly_at_the_cap_is_not_marked() {
        let mut out = String::new();
        assert!(!write_bounded(&mut out, 5, &"abcde"));
        assert_eq!(out, "abcde");
    }

    #[test]
    fn cut_lands_on_a_char_boundary() {
        for cap in 14..40 {
            let mut out = String::new();
            write_bounded(&mut out, cap, &"ééééééééééééééééééééééééé");
            assert!(out.len() <= cap);
            assert!(out.ends_with(TRUNCATION_MARKER), "cap {cap}: {out}");
        }
    }

    struct Panicky;

    impl fmt::Display for Panicky {
        fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
            panic!("display exploded")
        }
    }

    #[test]
    fn a_panicking_display_leaves_a_placeholder() {
        let mut out = String::from("before:");
        write_bounded(&mut out, 512, &Panicky);
        assert_eq!(out, format!("before:{DISPLAY_PANICKED}"));
    }

    #[derive(Debug)]
    struct Link(usize, Option<Box<Link>>);

    impl fmt::Display for Link {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "link {}", self.0)
        }
    }

    impl StdError for Link {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    fn chain(depth: usize) -> Link {
        let mut link = Link(depth, None);
        for n in (0..depth).rev() {
            link = Link(n, Some(Box::new(link)));
        }
        link
    }

    #[test]
    fn chain_walk_stops_at_the_link_cap_and_says_it_goes_on() {
        let deep = chain(20);
        let mut out = String::new();
        assert!(write_chain(&mut out, &deep, 3, 64));
        assert_eq!(out, "link 1 <- link 2 <- link 3 <- …");
        let mut out = String::new();
        assert!(write_chain(&mut out, &deep, 0, 64));
        assert_eq!(out, "…");
        let short = chain(2);
        let mut out = String::new();
        assert!(!write_chain(&mut out, &short, 3, 64));
        assert_eq!(out, "link 1 <- link 2");
    }

    #[derive(Debug)]
    struct PanickyLink;

    impl fmt::Display for PanickyLink {
        fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
            panic!("link display exploded")
        }
    }

    impl StdError for PanickyLink {}

    #[derive(Debug)]
    struct Top(PanickyLink);

    impl fmt::Display for Top {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("top")
        }
    }

    impl StdError for Top {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_chain_link_whose_display_panics_leaves_the_placeholder() {
        crate::install_panic_hook();
        let mut out = String::new();
        assert!(!write_chain(&mut out, &Top(PanickyLink), 8, 64));
        assert_eq!(out, DISPLAY_PANICKED);
    }

    /// An error whose own `Display` panics, over a chain that does not.
    #[derive(Debug)]
    struct PanickyTop(Link);

    impl fmt::Display for PanickyTop {
        fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
            panic!("top display exploded")
        }
    }

    impl StdError for PanickyTop {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn message_and_chain_under_one_catch_leave_what_each_leaves_alone() {
        crate::install_panic_hook();
        let write = |error: &(dyn StdError + 'static)| {
            let (mut message, mut chain) = (String::from("m:"), String::from("c:"));
            write_message_and_chain(&mut message, &mut chain, error, 8, 64);
            (message, chain)
        };
        let separately = |error: &(dyn StdError + 'static)| {
            let (mut message, mut chain) = (String::from("m:"), String::from("c:"));
            write_bounded(&mut message, 64, &error);
            write_chain(&mut chain, error, 8, 64);
            (message, chain)
        };
        let cases: [&(dyn StdError + 'static); 3] =
            [&chain(2), &Top(PanickyLink), &PanickyTop(chain(1))];
        for error in cases {
            assert_eq!(write(error), separately(error));
        }
        assert_eq!(
            write(&chain(2)),
            ("m:link 0".into(), "c:link 1 <- link 2".into())
        );
        let chain_panicked = ("m:top".into(), format!("c:{DISPLAY_PANICKED}"));
        assert_eq!(write(&Top(PanickyLink)), chain_panicked);
        let message_panicked = (format!("m:{DISPLAY_PANICKED}"), "c:link 0 <- link 1".into());
        assert_eq!(write(&PanickyTop(chain(1))), message_panicked);
    }

    #[test]
    fn panic_payloads_are_read_as_text_when_they_are_text() {
        let mut out = String::new();
        write_panic_payload(&mut out, 64, &"static text");
        assert_eq!(out, "static text");
        let mut out = String::new();
        write_panic_payload(&mut out, 64, &String::from("owned text"));
        assert_eq!(out, "owned text");
        let mut out = String::new();
        write_panic_payload(&mut out, 64, &42_u32);
        assert_eq!(out, OPAQUE_PANIC);
    }
}
