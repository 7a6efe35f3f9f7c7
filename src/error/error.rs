//! The errors handlers return: the [`Fault`] trait user errors implement, and [`Error`] for
//! ad-hoc cases and for any other `std::error::Error` met with `?`.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};

use crate::error::codes;
use crate::outcome::Outcome;

/// An error that knows how it answers over HTTP: a status, a stable machine-readable code and
/// a public message.
///
/// Derive it with [`#[derive(Fault)]`](derive@crate::Fault), one attribute per variant, which
/// also makes the type an axum response; handlers then return `Result<T, YourError>` and the
/// [`FaultLayer`](crate::FaultLayer) renders, reports and counts every `Err`.
///
/// The manual route, for types whose answer takes code to decide: implement the trait by hand
/// and make the type a response with [`impl_into_response!`](crate::impl_into_response), as
/// below.
///
/// For 4xx statuses the error's `Display` is its public message by default: write it for the
/// client who has to correct the request. For 5xx the client sees a generic message and the
/// request id; the `Display` text and the `source()` chain go to the report only.
///
/// ```
/// use axum::http::StatusCode;
///
/// #[derive(Debug, thiserror::Error)]
/// enum WebhookError {
///     #[error("event `{0}` is not handled here")]
///     UnsupportedEvent(String),
///     #[error("the store failed")]
///     Store(#[from] std::io::Error),
/// }
///
/// impl faultline::Fault for WebhookError {
///     fn status(&self) -> StatusCode {
///         match self {
///             Self::UnsupportedEvent(_) => StatusCode::UNPROCESSABLE_ENTITY,
///             Self::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
///         }
///     }
///
///     fn code(&self) -> &'static str {
///         match self {
///             Self::UnsupportedEvent(_) => "unsupported-event",
///             Self::Store(_) => "store-unavailable",
///         }
///     }
/// }
///
/// faultline::impl_into_response!(WebhookError);
///
/// async fn receive() -> Result<&'static str, WebhookError> {
///     Err(WebhookError::UnsupportedEvent("issues".into()))
/// }
/// # let _ = axum::Router::<()>::new().route("/", axum::routing::post(receive));
/// ```
pub trait Fault: StdError + Send + Sync + 'static {
    /// The HTTP status the client receives.
    fn status(&self) -> StatusCode;

    /// A stable, machine-readable code in kebab-case, such as `unsupported-event`: the
    /// `code` member of the problem body, the `code` label of the error series and the
    /// `error.type` of the report. Keep the set small and fixed: it is a metric label.
    fn code(&self) -> &'static str;

    /// Whether the client may read [`public_message`](Fault::public_message).
    ///
    /// By default a client error (4xx) is public and anything else is not. A 5xx is never
    /// shown outside development mode, whatever this says: its text goes to the report only.
    fn is_public(&self) -> bool {
        self.status().is_client_error()
    }

    /// The message the client reads when the fault [is public](Fault::is_public), when it
    /// should differ from the error's `Display`.
    ///
    /// By default `None`: the `Display` text is the public message, formatted once for the
    /// client and the report alike. Either is cut at the message cap; put what matters first.
    fn public_message(&self) -> Option<Cow<'_, str>> {
        None
    }

    /// Adds headers to the problem response, such as `Retry-After` on a 503 that clients
    /// should retry, or `WWW-Authenticate` on a 401. By default none.
    fn headers(&self, headers: &mut HeaderMap) {
        let _ = headers;
    }

    /// Whether the failure is counted as `rejected` rather than `handled`: true for axum's
    /// extractor rejections met with `?`, so that they count the same whether the extractor
    /// refused the request or the handler passed the refusal on. By default false.
    fn counts_as_rejection(&self) -> bool {
        false
    }
}

/// Every answer an error type can give, for API documentation: `#[derive(Fault)]` writes it
/// from the attributes, and faultline's `utoipa` feature turns it into OpenAPI responses.
///
/// ```
/// use faultline::{Catalog, Fault};
///
/// #[derive(Debug, thiserror::Error, Fault)]
/// enum HookError {
///     /// The event is valid but this service does not take it.
///     #[error("event `{0}` is not handled here")]
///     #[fault(status = 422, code = "unsupported-event")]
///     UnsupportedEvent(String),
///     #[error("the signature does not match")]
///     #[fault(status = 401, code = "bad-signature")]
///     BadSignature,
/// }
///
/// let catalog = HookError::catalog();
/// assert_eq!(catalog.len(), 2);
/// assert_eq!(catalog[0].code, "unsupported-event");
/// assert_eq!(catalog[0].description, "The event is valid but this service does not take it.");
/// assert_eq!(catalog[1].status, 401);
/// assert_eq!(catalog[1].description, "the signature does not match");
/// ```
pub trait Catalog {
    /// The (status, code, description) of every answer, in the order of declaration; one
    /// code may appear with one status only.
    fn catalog() -> Vec<CatalogEntry>;
}

/// Catalogs joined: a tuple of error types answers what any of them answers. With the
/// `utoipa` feature, `CatalogResponses<(HookError, LayerFaults)>` documents both under each
/// status (utoipa keeps one response per status, so two types listed apart would hide each
/// other's codes where their statuses meet).
macro_rules! joined_catalogs {
    ($($name:ident),+) => {
        impl<$($name: Catalog),+> Catalog for ($($name,)+) {
            fn catalog() -> Vec<CatalogEntry> {
                let mut entries = Vec::new();
                $(entries.extend($name::catalog());)+
                entries
            }
        }
    };
}

joined_catalogs!(A, B);
joined_catalogs!(A, B, C);
joined_catalogs!(A, B, C, D);

/// One answer of a [`Catalog`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogEntry {
    /// The status of the answer.
    pub status: StatusCode,
    /// The stable code of the answer.
    pub code: &'static str,
    /// What the answer means, for the reader of the API's documentation.
    pub description: &'static str,
}

impl CatalogEntry {
    /// An answer with its status, code and meaning.
    pub const fn new(status: StatusCode, code: &'static str, description: &'static str) -> Self {
        Self {
            status,
            code,
            description,
        }
    }
}

/// The error type for handlers that have no error enum of their own, and the catch-all for
/// any `std::error::Error` met with `?`, which becomes a 500 whose text only the report sees.
///
/// It is a response: as a handler's `Err` it leaves its fault in the response extensions,
/// where the [`FaultLayer`](crate::FaultLayer) finds it and renders the problem body. Without
/// the layer the client gets the bare status.
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
/// error converts into it. With `?`, axum's extractor rejections keep their status and code
/// and count as `rejected`. An error type of yours that implements [`Fault`] cannot be told
/// apart inside `?` (Rust has no specialization): pass it through [`Error::from_fault`], or
/// return it as itself, or `?` makes it a plain 500.
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
        let mut response = self.status().into_response();
        response
            .extensions_mut()
            .insert(FaultMarker::Fault(self.fault));
        response
    }
}

/// Makes a type that implements [`Fault`] an axum response, so handlers can return
/// `Result<T, ThatType>` directly.
///
/// Rust's coherence rules keep faultline from doing this for every `Fault` at once; this one
/// line per error type does it without re-typing anything.
///
/// ```
/// # use axum::http::StatusCode;
/// #[derive(Debug, thiserror::Error)]
/// #[error("payload lacks `{0}`")]
/// struct Malformed(&'static str);
///
/// impl faultline::Fault for Malformed {
///     fn status(&self) -> StatusCode { StatusCode::BAD_REQUEST }
///     fn code(&self) -> &'static str { "malformed-payload" }
/// }
///
/// faultline::impl_into_response!(Malformed);
/// ```
#[macro_export]
macro_rules! impl_into_response {
    ($($ty:ty),+ $(,)?) => {
        $(
            impl $crate::__private::IntoResponse for $ty {
                fn into_response(self) -> $crate::__private::Response {
                    $crate::__private::IntoResponse::into_response($crate::Error::from_fault(self))
                }
            }
        )+
    };
}

/// What faultline leaves in the response extensions for a fault layer to find.
#[derive(Clone)]
pub(crate) enum FaultMarker {
    /// A handler's error, for the layer to render.
    Fault(Arc<dyn Fault>),
    /// An answer a fault layer rendered already: a layer outside it counts it under the same
    /// outcome and code, and passes it on untouched.
    Rendered {
        outcome: Outcome,
        code: &'static str,
    },
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

#[cfg(test)]
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
    fn with_source_keeps_status_code_and_message() {
        let error = Error::new(StatusCode::BAD_GATEWAY, "upstream", "upstream failed")
            .with_source(std::io::Error::other("connection reset"));
        assert_eq!(error.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(error.to_string(), "upstream failed");
        let source = (error.as_fault() as &dyn StdError).source().unwrap();
        assert_eq!(source.to_string(), "connection reset");
    }
}
