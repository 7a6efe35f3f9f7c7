//! [`Catalog`]: every answer an error type can give, for API documentation.

use http::StatusCode;

/// Every answer an error type can give, for API documentation: `#[derive(Fault)]` writes it
/// from the attributes, and faultline's `utoipa` feature turns it into OpenAPI responses.
///
/// ```
/// use faultline::catalog::Catalog;
/// use faultline::Fault;
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
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a fault: it has no catalog of answers",
    label = "not a fault",
    note = "a fault is a type that derives `Fault` (or implements it and `Catalog`), \
            `faultline::webhooks::Refusal` or one of axum's rejections; a \
            `#[fault(transparent)]` field must be one",
    note = "for any other error in a variant, give the variant a status and code of its own: \
            `#[fault(status = 502, code = \"upstream-failed\")] Upstream(#[from] E)`"
)]
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
