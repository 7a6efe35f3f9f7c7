//! Error responses in OpenAPI (feature `utoipa`): the [`ProblemDetails`] schema of every body
//! faultline renders, and the responses of an error type from its [`Catalog`].
//!
//! `#[derive(Fault)]` implements utoipa's `IntoResponses` when this feature is on, so a
//! handler's error type goes straight into `#[utoipa::path(responses(...))]`; the document
//! then lists every status the type answers with, each code under it with its description
//! and an example body. [`LayerFaults`] adds what the layer itself answers (a panic, a
//! timeout, overload).
//!
//! utoipa keeps one response per status: two types listed apart in `responses(...)` that
//! share a status hide each other's codes there. List them joined instead, as
//! `CatalogResponses<(HookError, LayerFaults)>`, which merges their codes under each status.
//!
//! ```
//! use faultline::catalog::openapi::{CatalogResponses, LayerFaults, ProblemDetails};
//! use faultline::Fault;
//! use utoipa::{IntoResponses, OpenApi};
//!
//! #[derive(Debug, thiserror::Error, Fault)]
//! enum HookError {
//!     /// The event is valid but this service does not take it.
//!     #[error("event `{0}` is not handled here")]
//!     #[fault(status = 422, code = "unsupported-event")]
//!     UnsupportedEvent(String),
//! }
//!
//! #[utoipa::path(post, path = "/hooks", responses(
//!     (status = 201, description = "stored"),
//!     CatalogResponses<(HookError, LayerFaults)>,
//! ))]
//! async fn receive() -> Result<(), HookError> {
//!     Ok(())
//! }
//!
//! #[derive(OpenApi)]
//! #[openapi(paths(receive), components(schemas(ProblemDetails)))]
//! struct Api;
//!
//! let json = Api::openapi().to_json().unwrap();
//! assert!(json.contains("unsupported-event"));
//! assert!(json.contains("#/components/schemas/ProblemDetails"));
//! assert!(json.contains("panic"));
//! assert!(HookError::responses().contains_key("422"));
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use http::StatusCode;
use serde_json::json;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{IntoResponses, PartialSchema, ToSchema};

use crate::error::codes;
use crate::error::{Catalog, CatalogEntry};
use crate::render::{GENERIC_SERVER_DETAIL, PROBLEM_JSON};

/// The body of every problem response faultline writes (RFC 9457, with `code` and
/// `request_id`), as the schema component `ProblemDetails`.
///
/// Every member is always present and there are no others; `detail` is the public message
/// of a 4xx, and a generic text for a 5xx.
#[derive(Debug, Clone, Copy)]
pub struct ProblemDetails;

impl PartialSchema for ProblemDetails {
    fn schema() -> RefOr<Schema> {
        let string = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(description))
        };
        let members = [
            (
                "type",
                string("`about:blank`, or the configured base followed by the code"),
            ),
            ("title", string("the status's reason phrase")),
            ("code", string("the stable kebab-case code of the failure")),
            (
                "request_id",
                string("the request id, also in the `x-request-id` header; quote it in reports"),
            ),
            ("instance", string("the request's path, without the query")),
            (
                "detail",
                string("what the client can do; for a 5xx a generic text, never internals"),
            ),
        ];
        let status = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(400))
            .maximum(Some(599))
            .description(Some("the HTTP status, repeated"));
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "An RFC 9457 problem, as faultline renders it under a byte cap",
            ))
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        // In the order the renderer writes them.
        let mut members = members.into_iter();
        for (name, schema) in members.by_ref().take(2) {
            object = object.property(name, schema).required(name);
        }
        object = object.property("status", status).required("status");
        for (name, schema) in members {
            object = object.property(name, schema).required(name);
        }
        RefOr::T(Schema::Object(object.build()))
    }
}

impl ToSchema for ProblemDetails {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ProblemDetails")
    }
}

/// The OpenAPI responses of a catalog: one per status, listing each code with its
/// description, with an example problem body per code. What the derive's `IntoResponses`
/// returns.
pub fn responses(catalog: &[CatalogEntry]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<&CatalogEntry>> = BTreeMap::new();
    for entry in catalog {
        let entries = by_status.entry(entry.status.as_u16()).or_default();
        if !entries.iter().any(|e| e.code == entry.code) {
            entries.push(entry);
        }
    }
    by_status
        .into_iter()
        .map(|(status, entries)| (status.to_string(), RefOr::T(response(&entries))))
        .collect()
}

fn response(entries: &[&CatalogEntry]) -> Response {
    let status = entries[0].status;
    let reason = status.canonical_reason().unwrap_or("Error");
    let mut description = String::from(reason);
    for entry in entries {
        description.push_str(&format!("\n- `{}`: {}", entry.code, entry.description));
    }
    let examples = entries.iter().map(|entry| {
        let body = json!({
            "type": "about:blank",
            "title": reason,
            "status": status.as_u16(),
            "code": entry.code,
            "request_id": "5f0c6a1e-000000000001",
            "instance": "/",
            "detail": if status.is_server_error() { GENERIC_SERVER_DETAIL } else { entry.description },
        });
        let example = ExampleBuilder::new()
            .summary(entry.description)
            .value(Some(body));
        (entry.code, example.build())
    });
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(ProblemDetails::name())))
        .examples_from_iter(examples)
        .build();
    ResponseBuilder::new()
        .description(description)
        .content(PROBLEM_JSON, content)
        .build()
}

/// The responses of any [`Catalog`] type, for the types utoipa's `IntoResponses` cannot be
/// implemented on here, such as axum's rejections: list `CatalogResponses<JsonRejection>` in
/// a route's responses when its handler passes a `JsonRejection` on with `?`.
pub struct CatalogResponses<T>(PhantomData<fn() -> T>);

impl<T: Catalog> IntoResponses for CatalogResponses<T> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        responses(&T::catalog())
    }
}

/// What the layer itself answers, whatever the handler: a panic, and the errors of tower
/// layers inside it (a timeout, overload, any other service error). List it in a route's
/// responses beside the handler's error type.
#[derive(Debug, Clone, Copy)]
pub struct LayerFaults;

impl Catalog for LayerFaults {
    fn catalog() -> Vec<CatalogEntry> {
        vec![
            CatalogEntry::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                codes::PANIC,
                "the handler panicked; the report holds the panic text",
            ),
            CatalogEntry::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                codes::SERVICE_ERROR,
                "a layer inside failed with an error",
            ),
            CatalogEntry::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::OVERLOADED,
                "the service sheds load; retry later",
            ),
            CatalogEntry::new(
                StatusCode::GATEWAY_TIMEOUT,
                codes::TIMEOUT,
                "the request took longer than the service allows",
            ),
        ]
    }
}

impl IntoResponses for LayerFaults {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        responses(&Self::catalog())
    }
}
