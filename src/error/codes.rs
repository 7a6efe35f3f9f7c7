//! The stable codes faultline itself gives to failures that carry none of their own.

use http::StatusCode;

pub(crate) const PANIC: &str = "panic";
pub(crate) const TIMEOUT: &str = "timeout";
pub(crate) const OVERLOADED: &str = "overloaded";
pub(crate) const SERVICE_ERROR: &str = "service-error";
pub(crate) const INTERNAL: &str = "internal";
pub(crate) const BODY_ABORTED: &str = "body-aborted";
pub(crate) const BODY_PANIC: &str = "body-panic";
pub(crate) const CANCELLED: &str = "cancelled";

/// nginx's "client closed request": the status under which cancellations are counted.
/// No response carries it; it only labels the series.
pub(crate) const CLIENT_CLOSED_REQUEST: StatusCode = match StatusCode::from_u16(499) {
    Ok(status) => status,
    Err(_) => StatusCode::BAD_REQUEST,
};

/// The statuses and codes of the service errors the layer answers: a timeout, overload, and
/// any other error of the inner service.
pub(crate) const SERVICE_ERRORS: [(StatusCode, &str); 3] = [
    (StatusCode::GATEWAY_TIMEOUT, TIMEOUT),
    (StatusCode::SERVICE_UNAVAILABLE, OVERLOADED),
    (StatusCode::INTERNAL_SERVER_ERROR, SERVICE_ERROR),
];

/// The code of a service error answered with `status`, if it is one of [`SERVICE_ERRORS`].
pub(crate) fn for_service_error(status: StatusCode) -> Option<&'static str> {
    SERVICE_ERRORS
        .iter()
        .find(|(answered, _)| *answered == status)
        .map(|&(_, code)| code)
}

/// The code of an error status that came without a fault: the status's name, kebab-cased.
pub(crate) fn for_status(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad-request",
        401 => "unauthorized",
        402 => "payment-required",
        403 => "forbidden",
        404 => "not-found",
        405 => "method-not-allowed",
        406 => "not-acceptable",
        408 => "request-timeout",
        409 => "conflict",
        410 => "gone",
        411 => "length-required",
        412 => "precondition-failed",
        413 => "payload-too-large",
        414 => "uri-too-long",
        415 => "unsupported-media-type",
        416 => "range-not-satisfiable",
        417 => "expectation-failed",
        421 => "misdirected-request",
        422 => "unprocessable-entity",
        423 => "locked",
        424 => "failed-dependency",
        425 => "too-early",
        426 => "upgrade-required",
        428 => "precondition-required",
        429 => "too-many-requests",
        431 => "request-header-fields-too-large",
        451 => "unavailable-for-legal-reasons",
        500 => INTERNAL,
        501 => "not-implemented",
        502 => "bad-gateway",
        503 => "service-unavailable",
        504 => "gateway-timeout",
        505 => "http-version-not-supported",
        507 => "insufficient-storage",
        508 => "loop-detected",
        511 => "network-authentication-required",
        _ if status.is_client_error() => "client-error",
        _ => "server-error",
    }
}
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn rejection_codes_follow_the_status() {
        assert_eq!(for_status(StatusCode::NOT_FOUND), "not-found");
        assert_eq!(
            for_status(StatusCode::PAYLOAD_TOO_LARGE),
            "payload-too-large"
        );
        assert_eq!(for_status(StatusCode::IM_A_TEAPOT), "client-error");
        assert_eq!(CLIENT_CLOSED_REQUEST.as_u16(), 499);
    }
}
