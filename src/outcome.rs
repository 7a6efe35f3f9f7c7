//! How a request ended, and the route labels every failure carries: the vocabulary the rest
//! of the crate is written in.

/// The route, code and status labels of the series that label sets past the cap fold into.
pub const OVERFLOW_LABEL: &str = "~overflow";

/// The route label of failures that matched no route (axum's fallback, or a layer placed
/// outside the router, where the route template is not known).
pub const UNMATCHED_ROUTE: &str = "~unmatched";

/// How a request ended. Every request that enters the layer ends in exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// 2xx or 3xx, no fault attached, body sent to its end. A streamed body is `ok` when it
    /// ends, or once the bytes of its declared length are out; a body of length 0, and an
    /// answer that carries none on the wire (to a HEAD, a 1xx, a 204, a 304), as soon as the
    /// head goes out. A body dropped before that, polled or not, is [`Cancelled`](Self::Cancelled).
    Ok,
    /// A handler returned `Err`; status, code and message came from the error.
    Handled,
    /// A 4xx or 5xx made without a fault: axum's rejections, fallbacks, other layers.
    Rejected,
    /// The inner service returned `Err` instead of a response (timeout, overload, …).
    ServiceError,
    /// A panic while calling or polling the inner service or building the response.
    Panicked,
    /// The head was sent, then the body failed or panicked while streaming.
    Aborted,
    /// The response, or its body, was dropped before it was sent whole: the client went away,
    /// or a layer outside this one dropped the body.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in the order of the exposition. A slice, so that a new outcome is not
    /// a breaking change.
    pub const ALL: &'static [Outcome] = &[
        Outcome::Ok,
        Outcome::Handled,
        Outcome::Rejected,
        Outcome::ServiceError,
        Outcome::Panicked,
        Outcome::Aborted,
        Outcome::Cancelled,
    ];

    /// The `outcome` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Handled => "handled",
            Outcome::Rejected => "rejected",
            Outcome::ServiceError => "service_error",
            Outcome::Panicked => "panicked",
            Outcome::Aborted => "aborted",
            Outcome::Cancelled => "cancelled",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}
