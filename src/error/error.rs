//! [`Error`]: the error type for ad-hoc cases and for any other `std::error::Error` met with
//! `?`, and the faults behind it.

use std::any::Any;
use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};

use crate::error::codes;
use crate::error::{leave_for_layer, Fault, FaultMarker};

/// The error type for handlers that have no error enum of their own, and the catch-all for
/// any `std::error::Error` met with `?`, which becomes a 500 whose text only the report sees.
///
/// It is a response: as a handler's `Err` it hands its fault to the
/// [`FaultLayer`](crate::FaultLayer) polling the handler (or, where none does, leaves it in
/// the response extensions), and the layer renders the problem body. Without the layer the
/// client gets the bare status.
///
/// Make it into a response only to return it. Under the layer its fault waits on the thread,
/// not in the response, for the response of its status: a handler that makes that response,
/// throws it away and returns another of the same status gets the thrown-away fault rendered
/// in place of its own answer, and counted as handled.
///
/// ```
/// use axum::http::StatusCode;
/// use faultline::Error;
///
/// async fn lookup(id: String) -> Result<String, Error> {
///     if id.is_empty() {
///         return Err(Error::new(StatusCode::BAD_REQUEST, "missing-id", "an id is required"));
///     }
///     let n: u32 = id.parse()?; // a ParseIntError: a 500 with a generic body
///     Ok(format!("item {n}"))
/// }
/// # let _ = lookup;
/// ```
///
/// Like `anyhow::Error`, it does not itself implement `std::error::Error`, so that every
/// error converts into it. With `?`, every fault faultline defines keeps its status and code:
/// axum's extractor rejections (counted as `rejected`) and, with the `webhooks` feature,
/// the webhook refusals (counted as `handled`). An error type of yours that implements
/// [`Fault`] cannot be told apart inside `?` (Rust has no specialization): pass it through
/// [`Error::from_fault`], or return it as itself, or `?` makes it a plain 500.
pub struct Error {
    fault: Arc<dyn Fault>,
}

impl Error {
    /// An ad-hoc fault with a status, a stable code and a message. The message is public
    /// for 4xx statuses and internal otherwise.
    pub fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self::from_fault(AdHoc {
            status,
            code,
            message: message.into(),
            source: None,
        })
    }

    /// Attaches the error that caused this one: the report's chain goes on from it, in place
    /// of the fault's own `source()` if it had one. Status, code, message and headers stay.
    ///
    /// ```
    /// use axum::http::StatusCode;
    /// use faultline::Error;
    ///
    /// let error = Error::new(StatusCode::BAD_GATEWAY, "upstream", "the upstream failed")
    ///     .with_source(std::io::Error::other("connection reset"));
    /// let source = std::error::Error::source(error.as_fault()).unwrap();
    /// assert_eq!(source.to_string(), "connection reset");
    /// ```
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        let adhoc = Arc::get_mut(&mut self.fault)
            .and_then(|fault| (fault as &mut dyn StdError).downcast_mut::<AdHoc>());
        match adhoc {
            Some(adhoc) => adhoc.source = Some(Box::new(source)),
            None => {
                self.fault = Arc::new(Caused {
                    fault: self.fault,
                    source: Box::new(source),
                })
            }
        }
        self
    }

    /// Wraps an error that describes itself through [`Fault`].
    pub fn from_fault(fault: impl Fault) -> Self {
        Self {
            fault: Arc::new(fault),
        }
    }

    /// The status the client receives.
    pub fn status(&self) -> StatusCode {
        self.fault.status()
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.fault.code()
    }

    /// The fault inside.
    pub fn as_fault(&self) -> &dyn Fault {
        &*self.fault
    }

    /// Any other error: a 500 whose text and chain go to the report only.
    pub(crate) fn internal(error: impl StdError + Send + Sync + 'static) -> Self {
        Self::from_fault(Internal(error))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("status", &self.status())
            .field("code", &self.code())
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.fault, f)
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = status.into_response();
        // To the layer polling the handler through the thread, when one does; else in the
        // extensions, for whoever meets the response.
        if let Err(fault) = leave_for_layer(self.fault, status) {
            response.extensions_mut().insert(FaultMarker::Fault(fault));
        }
        response
    }
}

/// `error` as the fault `F` it is, when it is one, else `error` back: what lets `?` keep
/// the status and code of the faults faultline defines. The look-up compares type ids and
/// allocates nothing.
pub(crate) fn taken_as<F: Fault, E: Any>(error: E) -> Result<Error, E> {
    let mut slot = Some(error);
    match (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<F>>()
        .and_then(Option::take)
    {
        Some(fault) => Ok(Error::from_fault(fault)),
        None => Err(slot.expect("the slot is emptied only when the type matched")),
    }
}

/// Any `std::error::Error` met with `?`: a 500 whose text and chain go to the report only.
struct Internal<E>(E);

impl<E: StdError> fmt::Debug for Internal<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<E: StdError> fmt::Display for Internal<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl<E: StdError> StdError for Internal<E> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

impl<E: StdError + Send + Sync + 'static> Fault for Internal<E> {
    fn status(&self) -> StatusCode {
        StatusCode::INTERNAL_SERVER_ERROR
    }

    fn code(&self) -> &'static str {
        codes::INTERNAL
    }
}

/// The fault behind [`Error::new`].
#[derive(Debug)]
struct AdHoc {
    status: StatusCode,
    code: &'static str,
    message: Cow<'static, str>,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl fmt::Display for AdHoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for AdHoc {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|s| s as _)
    }
}

impl Fault for AdHoc {
    fn status(&self) -> StatusCode {
        self.status
    }

    fn code(&self) -> &'static str {
        self.code
    }
}

/// A fault with the error that caused it attached by [`Error::with_source`].
struct Caused {
    fault: Arc<dyn Fault>,
    source: Box<dyn StdError + Send + Sync>,
}

impl fmt::Debug for Caused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Caused")
            .field("fault", &self.fault)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for Caused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.fault, f)
    }
}

impl StdError for Caused {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

impl Fault for Caused {
    fn status(&self) -> StatusCode {
        self.fault.status()
    }

    fn code(&self) -> &'static str {
        self.fault.code()
    }

    fn is_public(&self) -> bool {
        self.fault.is_public()
    }

    fn public_message(&self) -> Option<Cow<'_, str>> {
        self.fault.public_message()
    }

    fn headers(&self, headers: &mut HeaderMap) {
        self.fault.headers(headers);
    }

    fn counts_as_rejection(&self) -> bool {
        self.fault.counts_as_rejection()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn any_std_error_becomes_an_internal_500() {
        let error: Error = "x".parse::<u8>().unwrap_err().into();
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(error.code(), "internal");
    }

    #[test]
    fn the_response_carries_the_fault_for_the_layer() {
        let response = Error::new(StatusCode::CONFLICT, "taken", "already there").into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let Some(FaultMarker::Fault(fault)) = response.extensions().get::<FaultMarker>() else {
            panic!("no fault in the extensions");
        };
        assert_eq!(fault.code(), "taken");
        assert_eq!(fault.to_string(), "already there");
    }

    #[test]
    fn with_source_keeps_whether_the_fault_counts_as_a_rejection() {
        let uri = "/?n=x".parse().unwrap();
        let rejection =
            axum::extract::Query::<std::collections::HashMap<String, u32>>::try_from_uri(&uri)
                .unwrap_err();
        let caused = Error::from(rejection).with_source(std::io::Error::other("cause"));
        assert!(caused.as_fault().counts_as_rejection());
        let internal = Error::internal(std::io::Error::other("disk"));
        let caused = internal.with_source(std::io::Error::other("cause"));
        assert!(!caused.as_fault().counts_as_rejection());
    }

    #[test]
    fn with_source_keeps_status_code_and_message() {
        let error = Error::new(StatusCode::BAD_GATEWAY, "upstream", "upstream failed")
            .with_source(std::io::Error::other("connection reset"));
        assert_eq!(error.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(error.to_string(), "upstream failed");
        let source = (error.as_fault() as &dyn StdError).source().unwrap();
        assert_eq!(source.to_string(), "connection reset");
    }
}
