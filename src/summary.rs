//! One bounded summary per failure: what the problem body, the report and the ledger read.
//! Every text in it went through the bounded writer, so its cost was capped before the work.

use std::cell::Cell;
use std::error::Error as StdError;

use http::StatusCode;

use crate::config::Config;
use crate::error::codes;
use crate::error::Fault;
use crate::outcome::Outcome;
use crate::panic::{Caught, PanicSite};
use crate::text::{write_bounded, write_message_and_chain, write_panic_payload, CHAIN_SEPARATOR};

/// Room reserved up front for a message: most are shorter, so formatting one rarely grows it.
const MESSAGE_CAPACITY: usize = 128;

/// The largest message buffer a thread keeps for its next failure: one grown past it, for a
/// long message under a high `max_message_bytes`, is freed rather than held by every thread.
const KEPT_MESSAGE_CAPACITY: usize = 4096;

thread_local! {
    /// The message buffer of the last summary this thread answered with, empty, for the next
    /// failure's message: a run of failures allocates none for it (`bench-smoke`'s
    /// `/handled`, BENCHMARKS.md, "Fourth round").
    static KEPT_MESSAGE: Cell<String> = const { Cell::new(String::new()) };
}

/// An empty buffer for a message with room for [`MESSAGE_CAPACITY`] bytes: the one this
/// thread kept, if any. In a thread-local destructor, a new one.
fn message_buffer() -> String {
    let mut message = KEPT_MESSAGE.try_with(Cell::take).unwrap_or_default();
    message.reserve(MESSAGE_CAPACITY);
    message
}

/// A bounded account of one failure, computed once and used by the problem body, the report
/// and the ledger.
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    pub(crate) outcome: Outcome,
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    /// What a client may read.
    pub(crate) public: Public,
    /// The internal message: the error's `Display`, the panic text, the rejection body.
    pub(crate) message: String,
    /// The bounded `source()` chain, links joined by `" <- "`; empty when there is none.
    pub(crate) chain: String,
    /// Where a panic happened, when the panic hook is installed.
    pub(crate) site: Option<PanicSite>,
}

impl Summary {
    fn new(outcome: Outcome, status: StatusCode, code: &'static str) -> Self {
        Self {
            outcome,
            status,
            code,
            public: Public::Hidden,
            // Allocated when there is something to say: a rejection without text says nothing.
            message: String::new(),
            chain: String::new(),
            site: None,
        }
    }

    /// Gives the message's buffer, emptied, to this thread for its next failure's message.
    /// A summary without one (a rejection without text) leaves the kept one as it is.
    #[inline]
    pub(crate) fn keep_message_buffer(self) {
        let mut message = self.message;
        if message.capacity() == 0 || message.capacity() > KEPT_MESSAGE_CAPACITY {
            return;
        }
        message.clear();
        let _ = KEPT_MESSAGE.try_with(|kept| kept.set(message));
    }

    /// A handler's error, as its [`Fault`] implementation describes it.
    pub(crate) fn from_fault(fault: &dyn Fault, config: &Config) -> Self {
        let outcome = if fault.counts_as_rejection() {
            Outcome::Rejected
        } else {
            Outcome::Handled
        };
        let mut summary = Self::new(outcome, fault.status(), fault.code());
        summary.message = message_buffer();
        let cap = config.max_message_bytes;
        let max_links = config.max_chain_links;
        write_message_and_chain(
            &mut summary.message,
            &mut summary.chain,
            fault,
            max_links,
            cap,
        );
        if fault.is_public() {
            summary.public = match fault.public_message() {
                // The usual case: the message is the public text, formatted once for both.
                None => Public::Message,
                Some(text) => {
                    let mut public = String::new();
                    write_bounded(&mut public, cap, &text);
                    Public::Text(public)
                }
            };
        }
        summary.expose_in_development(config);
        summary
    }

    /// A panic caught while calling or polling the inner service, or streaming its body.
    pub(crate) fn from_panic(
        outcome: Outcome,
        status: StatusCode,
        caught: Caught,
        config: &Config,
    ) -> Self {
        let code = match outcome {
            Outcome::Aborted => codes::BODY_PANIC,
            _ => codes::PANIC,
        };
        let mut summary = Self::new(outcome, status, code);
        summary.message = message_buffer();
        write_panic_payload(
            &mut summary.message,
            config.max_message_bytes,
            &*caught.payload,
        );
        summary.site = caught.site;
        summary.expose_in_development(config);
        summary
    }

    /// An error the inner service returned instead of a response: timeouts and overload get
    /// their own status, anything else is a 500.
    pub(crate) fn from_service_error(error: &(dyn StdError + 'static), config: &Config) -> Self {
        let [timeout, overloaded, other] = codes::SERVICE_ERRORS;
        let (status, code) = if error.is::<tower::timeout::error::Elapsed>() {
            timeout
        } else if error.is::<tower::load_shed::error::Overloaded>() {
            overloaded
        } else {
            other
        };
        Self::from_error(Outcome::ServiceError, status, code, error, config)
    }

    /// A response body that failed while streaming, after the head was sent.
    pub(crate) fn from_body_error(
        status: StatusCode,
        error: &(dyn StdError + 'static),
        config: &Config,
    ) -> Self {
        Self::from_error(Outcome::Aborted, status, codes::BODY_ABORTED, error, config)
    }

    fn from_error(
        outcome: Outcome,
        status: StatusCode,
        code: &'static str,
        error: &(dyn StdError + 'static),
        config: &Config,
    ) -> Self {
        let mut summary = Self::new(outcome, status, code);
        summary.message = message_buffer();
        write_message_and_chain(
            &mut summary.message,
            &mut summary.chain,
            error,
            config.max_chain_links,
            config.max_message_bytes,
        );
        summary.expose_in_development(config);
        summary
    }

    /// An error status made without a fault (axum's rejections, fallbacks, other layers):
    /// `text` is the start of the response body it came with, already bounded by the caller,
    /// who reads one byte past the message cap when the body goes on: a `text` longer than
    /// the cap was cut, and its message says so.
    pub(crate) fn from_rejection(status: StatusCode, text: &[u8], config: &Config) -> Self {
        let mut summary = Self::new(Outcome::Rejected, status, codes::for_status(status));
        // Most rejections come without a body: nothing to decode, trim or format.
        if text.is_empty() {
            summary.expose_in_development(config);
            return summary;
        }
        let cap = config.max_message_bytes;
        let cut = text.len() > cap;
        let text = String::from_utf8_lossy(text);
        // The end of a cut text is not the end of the body: trimming it could leave a text
        // that fits the cap, shown as if whole.
        let text = if cut { text.trim_start() } else { text.trim() };
        // Trimming the start of a cut text may leave it within the cap too: a room one byte
        // short of it makes the writer cut it again, so the marker shows.
        let room = if cut {
            cap.min(text.len().saturating_sub(1))
        } else {
            cap
        };
        // A body of blanks only: nothing to format, so no formatter is run.
        if !text.is_empty() {
            write_bounded(&mut summary.message, room, &text);
        }
        if status.is_client_error() && !summary.message.is_empty() {
            summary.public = Public::Message;
        }
        summary.expose_in_development(config);
        summary
    }

    /// A response an inner fault layer already rendered, reported and counted in its own
    /// ledger: counted here too, under the same outcome and code.
    pub(crate) fn already_answered(
        outcome: Outcome,
        status: StatusCode,
        code: &'static str,
    ) -> Self {
        let mut summary = Self::new(outcome, status, code);
        summary
            .message
            .push_str("answered by an inner fault layer; its report has the detail");
        summary
    }

    /// The response future was dropped before it finished, or the body was dropped mid-way.
    pub(crate) fn cancelled() -> Self {
        let mut summary = Self::new(
            Outcome::Cancelled,
            codes::CLIENT_CLOSED_REQUEST,
            codes::CANCELLED,
        );
        summary
            .message
            .push_str("the client went away before the response was complete");
        summary
    }

    /// In development mode clients see the internal message and chain of every failure.
    fn expose_in_development(&mut self, config: &Config) {
        if config.development && matches!(self.public, Public::Hidden) {
            let mut public = self.message.clone();
            if !self.chain.is_empty() {
                public.push_str(CHAIN_SEPARATOR);
                public.push_str(&self.chain);
            }
            self.public = Public::Text(public);
        }
    }

    /// The text a client may read, if any.
    pub(crate) fn public_text(&self) -> Option<&str> {
        match &self.public {
            Public::Hidden => None,
            Public::Message => Some(&self.message),
            Public::Text(text) => Some(text),
        }
    }
}

/// What of a failure a client may read.
#[derive(Debug, Clone)]
pub(crate) enum Public {
    /// Nothing: the problem body carries a generic detail.
    Hidden,
    /// The internal message itself.
    Message,
    /// A text of its own.
    Text(String),
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Error;

    fn summary_of(message: &str) -> Summary {
        let fault = Error::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            message.to_owned(),
        );
        Summary::from_fault(fault.as_fault(), &Config::default())
    }

    /// The buffer a summary leaves is the next one's, emptied: the next message holds its own
    /// text only. One grown past the cap is not kept.
    #[test]
    fn a_message_buffer_is_kept_emptied_for_the_next_failure_and_a_large_one_is_not() {
        let first = summary_of("the first message");
        let buffer = first.message.as_ptr();
        first.keep_message_buffer();
        let second = summary_of("second");
        assert_eq!(second.message, "second");
        assert_eq!(second.message.as_ptr(), buffer);
        second.keep_message_buffer();
        // A summary without a buffer leaves the kept one.
        let kept_capacity = || {
            KEPT_MESSAGE.with(|kept| {
                let buffer = kept.take();
                let capacity = buffer.capacity();
                kept.set(buffer);
                capacity
            })
        };
        assert!(kept_capacity() >= MESSAGE_CAPACITY);
        Summary::new(Outcome::Rejected, StatusCode::NOT_FOUND, "not-found").keep_message_buffer();
        assert!(kept_capacity() >= MESSAGE_CAPACITY);
        let third = summary_of("third");
        assert_eq!(third.message, "third");
        third.keep_message_buffer();

        // A buffer of the cap itself is kept.
        let mut at_cap = summary_of("at the cap");
        at_cap.message = String::with_capacity(KEPT_MESSAGE_CAPACITY);
        at_cap.keep_message_buffer();
        assert_eq!(kept_capacity(), KEPT_MESSAGE_CAPACITY);
        drop(summary_of("taken"));

        let mut large = summary_of("large");
        large.message.reserve(KEPT_MESSAGE_CAPACITY + 1);
        large.keep_message_buffer();
        let next = summary_of("next");
        assert_eq!(next.message, "next");
        // A new buffer (the allocator may hand out the same address again).
        assert!(next.message.capacity() <= KEPT_MESSAGE_CAPACITY);
    }
}
