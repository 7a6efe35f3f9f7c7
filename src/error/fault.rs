//! [`Fault`]: the trait user errors implement, and
//! [`impl_into_response!`](crate::impl_into_response!) that makes one an axum response.

use std::borrow::Cow;
use std::error::Error as StdError;

use http::{HeaderMap, StatusCode};

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
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a fault: it has no status and code of its own",
    label = "not a fault",
    note = "a fault is a type that derives `Fault` (or implements it and `Catalog`), \
            `faultline::webhooks::Refusal` or one of axum's rejections; a \
            `#[fault(transparent)]` field must be one",
    note = "for any other error in a variant, give the variant a status and code of its own: \
            `#[fault(status = 502, code = \"upstream-failed\")] Upstream(#[from] E)`"
)]
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
