//! axum's extractor rejections as faults, so that `?` on one keeps its status and code, and is
//! counted as `rejected` just as if the extractor itself had refused the request.
//!
//! A handler may take an extractor as `Result<Json<T>, JsonRejection>` to look at the
//! rejection first; when it then gives up with `?`, the rejection travels inside the
//! handler's error. As a [`Fault`] it answers with the status axum would have used, the code
//! of that status (`unprocessable-entity` for a 422, as for any rejection the layer re-renders)
//! and axum's text as the public message of a 4xx.

use axum::extract::rejection::{
    BytesRejection, ExtensionRejection, FailedToBufferBody, FormRejection, MatchedPathRejection,
    NestedPathRejection, PathRejection, QueryRejection, RawFormRejection, RawPathParamsRejection,
    StringRejection,
};
use std::any::Any;

use http::StatusCode;

use crate::error::codes;
use crate::error::{taken_as, Catalog, CatalogEntry, Error, Fault};

/// Implements [`Fault`] and [`Catalog`] for rejections, each with the statuses axum answers
/// it with and what they mean.
macro_rules! rejection_faults {
    ($($(#[$cfg:meta])* $ty:ty => [$(($status:ident, $meaning:literal)),+ $(,)?];)+) => {
        $(
            $(#[$cfg])*
            impl Fault for $ty {
                fn status(&self) -> StatusCode {
                    <$ty>::status(self)
                }

                fn code(&self) -> &'static str {
                    codes::for_status(<$ty>::status(self))
                }

                fn counts_as_rejection(&self) -> bool {
                    true
                }
            }

            $(#[$cfg])*
            impl Catalog for $ty {
                fn catalog() -> Vec<CatalogEntry> {
                    vec![$(CatalogEntry::new(
                        StatusCode::$status,
                        codes::for_status(StatusCode::$status),
                        $meaning,
                    )),+]
                }
            }
        )+

        /// Takes an error met with `?` back as the rejection fault it is, if it is one; the
        /// look-up compares type ids and allocates nothing.
        pub(crate) fn as_rejection<E: Any>(error: E) -> Result<Error, E> {
            let found = Err(error);
            $(
                $(#[$cfg])*
                let found = found.or_else(taken_as::<$ty, E>);
            )+
            found
        }
    };
}

rejection_faults! {
    #[cfg(feature = "json")]
    axum::extract::rejection::JsonRejection => [
        (BAD_REQUEST, "the body is not valid JSON"),
        (UNPROCESSABLE_ENTITY, "the JSON does not have the expected shape"),
        (UNSUPPORTED_MEDIA_TYPE, "the request lacks `content-type: application/json`"),
        (PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
    ];
    QueryRejection => [(BAD_REQUEST, "the query string does not have the expected shape")];
    FormRejection => [
        (BAD_REQUEST, "the form does not have the expected shape"),
        (UNPROCESSABLE_ENTITY, "the form body does not have the expected shape"),
        (UNSUPPORTED_MEDIA_TYPE, "the request is not a form"),
        (PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
    ];
    RawFormRejection => [
        (UNSUPPORTED_MEDIA_TYPE, "the request is not a form"),
        (PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
        (BAD_REQUEST, "the body could not be read"),
    ];
    PathRejection => [
        (BAD_REQUEST, "a path parameter does not have the expected shape"),
        (INTERNAL_SERVER_ERROR, "the route has no such path parameter"),
    ];
    RawPathParamsRejection => [
        (BAD_REQUEST, "a path parameter is not valid UTF-8"),
        (INTERNAL_SERVER_ERROR, "the route has no path parameters"),
    ];
    BytesRejection => [
        (PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
        (BAD_REQUEST, "the body could not be read"),
    ];
    StringRejection => [
        (PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
        (BAD_REQUEST, "the body could not be read, or is not UTF-8"),
    ];
    FailedToBufferBody => [
        (PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
        (BAD_REQUEST, "the body could not be read"),
    ];
    ExtensionRejection => [(INTERNAL_SERVER_ERROR, "a request extension is missing")];
    MatchedPathRejection => [(INTERNAL_SERVER_ERROR, "the route has no matched path")];
    NestedPathRejection => [(INTERNAL_SERVER_ERROR, "the route is not nested")];
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_is_taken_back_and_anything_else_returned_as_it_was() {
        let uri = "/?n=x".parse().unwrap();
        let rejection =
            axum::extract::Query::<std::collections::HashMap<String, u32>>::try_from_uri(&uri)
                .unwrap_err();
        let error = Error::from(rejection);
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(error.code(), "bad-request");
        assert!(error.as_fault().counts_as_rejection());

        let other = as_rejection(std::io::Error::other("disk")).unwrap_err();
        assert_eq!(other.to_string(), "disk");
    }
}
