//! The body of an error status made without a fault is read for its message up to the
//! message cap and one byte past it, the byte that tells the text was cut: a body of exactly
//! the cap is shown whole, one byte more is cut with the marker, in one frame or in several.

mod common;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use faultline::limits::TRUNCATION_MARKER;
use faultline::FaultLayer;
use http::{Request, Response, StatusCode};
use http_body::{Frame, SizeHint};
use tower::{service_fn, Layer, ServiceExt};

use common::oneshot::{get_request, problem_of};

/// The message cap of these tests: small, so that its bodies cost nothing, and above the
/// least the layer accepts (`limits::MIN_MESSAGE_BYTES`), so it is taken as given.
const MESSAGE_CAP: usize = 64;

/// A body sent in the frames given, whose exact size is known beforehand, as a rejection's
/// is: only such a body is read for its message.
struct Frames(VecDeque<Bytes>);

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|data| Ok(Frame::data(data))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|data| data.len() as u64).sum())
    }
}

/// The `detail` of the problem a 400 gets whose body comes in frames of `sizes` bytes of `a`.
async fn detail_of_a_400_in_frames(sizes: &[usize]) -> String {
    let frames: VecDeque<Bytes> = sizes
        .iter()
        .map(|&size| Bytes::from("a".repeat(size)))
        .collect();
    let layer = FaultLayer::new().max_message_bytes(MESSAGE_CAP);
    let service = layer.layer(service_fn(move |_: Request<axum::body::Body>| {
        let body = Frames(frames.clone());
        async move {
            let response = Response::builder()
                .status(StatusCode::BAD_REQUEST)
                .body(axum::body::Body::new(body))
                .unwrap();
            Ok::<_, Infallible>(response)
        }
    }));
    let response = service.oneshot(get_request("/")).await.unwrap();
    let (status, problem) = problem_of(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    problem["detail"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_body_of_exactly_the_cap_is_shown_whole() {
    let whole = "a".repeat(MESSAGE_CAP);
    let half = MESSAGE_CAP / 2;
    for sizes in [
        vec![MESSAGE_CAP],
        vec![half, MESSAGE_CAP - half],
        vec![1; MESSAGE_CAP],
    ] {
        let detail = detail_of_a_400_in_frames(&sizes).await;
        assert_eq!(detail, whole, "frames of {sizes:?} bytes");
    }
}

#[tokio::test]
async fn one_byte_past_the_cap_is_cut_with_the_marker() {
    let kept = "a".repeat(MESSAGE_CAP - TRUNCATION_MARKER.len());
    let cut = format!("{kept}{TRUNCATION_MARKER}");
    for sizes in [
        vec![MESSAGE_CAP + 1],
        vec![MESSAGE_CAP, 1],
        vec![1, MESSAGE_CAP],
        vec![1; MESSAGE_CAP + 1],
        vec![4 * MESSAGE_CAP],
    ] {
        let detail = detail_of_a_400_in_frames(&sizes).await;
        assert_eq!(detail, cut, "frames of {sizes:?} bytes");
    }
}
