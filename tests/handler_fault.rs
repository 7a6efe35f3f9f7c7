//! How a handler's fault reaches the layer: through the thread while a layer calls or polls
//! the handler, in the response's extensions otherwise; rendered only for a response of the
//! fault's status; and kept apart between the layers of two ledgers when both meet one.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::response::IntoResponse;
use faultline::{Error, FaultLayer, Ledger};
use futures::FutureExt;
use http::{Request, Response, StatusCode};
use tower::{service_fn, Layer, Service, ServiceExt};

/// The answer of `service` to one request, read whole, with its problem code if any.
fn answer<S>(service: S) -> (StatusCode, Option<String>)
where
    S: Service<Request<Body>, Response = Response<faultline::service::FaultBody<Body>>>,
    S::Error: std::fmt::Debug,
{
    let response = service
        .oneshot(Request::new(Body::empty()))
        .now_or_never()
        .expect("ready at once")
        .expect("infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), 4096)
        .now_or_never()
        .expect("ready at once")
        .expect("a body in memory");
    let code = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|json| json["code"].as_str().map(str::to_owned));
    (status, code)
}

fn conflict() -> Error {
    Error::new(StatusCode::CONFLICT, "taken", "already there")
}

/// (handled, rejected, ok) of `ledger`, nothing left in flight.
fn tally(ledger: &Ledger) -> (u64, u64, u64) {
    let snapshot = ledger.snapshot();
    assert_eq!(snapshot.in_flight, 0);
    (snapshot.handled, snapshot.rejected, snapshot.ok)
}

#[test]
fn a_fault_made_while_the_layer_polls_reaches_it_without_the_extensions() {
    let bare = Arc::new(AtomicBool::new(false));
    let seen = bare.clone();
    let handler = service_fn(move |_: Request<Body>| {
        let seen = seen.clone();
        async move {
            let response = conflict().into_response();
            // Nothing allocated for the fault in the response: it waits on the thread.
            seen.store(response.extensions().is_empty(), Ordering::SeqCst);
            Ok::<_, Infallible>(response)
        }
    });
    let (layer, ledger) = FaultLayer::pair();
    assert_eq!(
        answer(layer.layer(handler)),
        (StatusCode::CONFLICT, Some("taken".into()))
    );
    assert!(bare.load(Ordering::SeqCst));
    assert_eq!(tally(&ledger), (1, 0, 0));
    // Made outside any layer, the fault is in the extensions: whoever meets it finds it.
    assert!(!conflict().into_response().extensions().is_empty());
}

#[test]
fn a_fault_whose_response_came_back_with_another_status_is_not_rendered() {
    // A layer in between answered the fault's response with a status of its own: that answer
    // is its own, re-rendered as what its status says, not as the fault.
    let replaced = service_fn(|_: Request<Body>| async {
        let mut response = conflict().into_response();
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        Ok::<_, Infallible>(response)
    });
    let (layer, ledger) = FaultLayer::pair();
    let (status, code) = answer(layer.layer(replaced));
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_ne!(code.as_deref(), Some("taken"));
    assert_eq!(tally(&ledger), (0, 1, 0));
    // Turned into a success, it passes as one.
    let succeeded = service_fn(|_: Request<Body>| async {
        let _made = conflict().into_response();
        Ok::<_, Infallible>(Response::new(Body::from("fine")))
    });
    let (layer, ledger) = FaultLayer::pair();
    assert_eq!(answer(layer.layer(succeeded)), (StatusCode::OK, None));
    assert_eq!(tally(&ledger), (0, 0, 1));
}

#[test]
fn faults_met_by_the_layers_of_two_ledgers_each_reach_their_own() {
    // The outer layer's handler makes its fault, then calls a service under a layer of
    // another ledger whose handler makes one of its own, then returns its own.
    let (inner_layer, inner_ledger) = FaultLayer::pair();
    let inner = inner_layer.layer(service_fn(|_: Request<Body>| async {
        Ok::<_, Infallible>(
            Error::new(StatusCode::UNPROCESSABLE_ENTITY, "bad", "no").into_response(),
        )
    }));
    let outer_handler = service_fn(move |_: Request<Body>| {
        let inner = inner.clone();
        async move {
            let mine = conflict().into_response();
            let (status, code) = answer(inner);
            assert_eq!(
                (status, code.as_deref()),
                (StatusCode::UNPROCESSABLE_ENTITY, Some("bad"))
            );
            Ok::<_, Infallible>(mine)
        }
    });
    let (outer_layer, outer_ledger) = FaultLayer::pair();
    assert_eq!(
        answer(outer_layer.layer(outer_handler)),
        (StatusCode::CONFLICT, Some("taken".into()))
    );
    assert_eq!(tally(&inner_ledger), (1, 0, 0));
    assert_eq!(tally(&outer_ledger), (1, 0, 0));
}

#[test]
fn a_fault_of_a_success_status_is_rendered_as_the_fault_it_is() {
    // A fault's status is its own choice: one of 2xx is still the handler's fault, answered
    // and counted as one, not passed on as the empty success its response is.
    let accepted = service_fn(|_: Request<Body>| async {
        Ok::<_, Infallible>(Error::new(StatusCode::ACCEPTED, "queued", "later").into_response())
    });
    let (layer, ledger) = FaultLayer::pair();
    assert_eq!(
        answer(layer.layer(accepted)),
        (StatusCode::ACCEPTED, Some("queued".into()))
    );
    assert_eq!(tally(&ledger), (1, 0, 0));
}

#[test]
fn a_fault_response_thrown_away_is_still_rendered_for_another_of_its_status() {
    // The fault waits on the thread, not in the response it was made into: a handler that
    // makes that response, drops it and returns one of its own with the same status gets
    // the dropped fault rendered in place of its own body, and counted as handled. A
    // response of another status
    // (`a_fault_whose_response_came_back_with_another_status_is_not_rendered`) or one
    // made where no layer polls (in its own extensions, dropped with it) is not met by
    // this.
    let own = service_fn(|_: Request<Body>| async {
        drop(conflict().into_response());
        Ok::<_, Infallible>((StatusCode::CONFLICT, "a body of its own").into_response())
    });
    let (layer, ledger) = FaultLayer::pair();
    assert_eq!(
        answer(layer.layer(own)),
        (StatusCode::CONFLICT, Some("taken".into()))
    );
    assert_eq!(tally(&ledger), (1, 0, 0));
}
