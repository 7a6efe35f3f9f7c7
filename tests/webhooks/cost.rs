//! Verifying copies no body: the extractor hands over the very buffer the body arrived in.

use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::http::Request;
use axum::routing::post;
use axum::Router;
use faultline::webhooks::senders::GitHub;
use faultline::webhooks::{Intake, SecretSet, Sender, Verified};
use tower::ServiceExt;

use crate::sign::signed;

#[tokio::test]
async fn the_verified_body_is_the_buffer_it_arrived_in() {
    let body = Bytes::from(vec![b'x'; 64 * 1024]);
    let arrived = body.as_ptr() as usize;
    let intake = Intake::new(GitHub::new(SecretSet::one("gh-secret").unwrap()).unwrap());
    let app = Router::new()
        .route(
            "/hooks",
            post(|delivery: Verified<GitHub>| async move {
                (delivery.body().as_ptr() as usize).to_string()
            }),
        )
        .with_state(intake);
    let mut request = Request::post("/hooks");
    for (name, value) in signed(Sender::GitHub, "gh-secret", &body, SystemTime::now()) {
        request = request.header(name, value);
    }
    let response = app
        .oneshot(request.body(Body::from(body.clone())).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer = axum::body::to_bytes(response.into_body(), 64)
        .await
        .unwrap();
    assert_eq!(std::str::from_utf8(&answer).unwrap(), arrived.to_string());
}
