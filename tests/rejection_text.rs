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
    let frames: Vec<String> = sizes.iter().map(|&size| "a".repeat(size)).collect();
    detail_of_a_400_with_body(&frames).await
}

/// The `detail` of the problem a 400 gets whose body comes in the frames given.
async fn detail_of_a_400_with_body(frames: &[String]) -> String {
    let frames: VecDeque<Bytes> = frames.iter().cloned().map(Bytes::from).collect();
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

/// The byte one past the cap is what tells a cut text from a whole one, even where it is
/// whitespace the summary would trim from a whole text: such a body is cut with the marker,
/// never shown as its first `cap` bytes as if that were all of it.
#[tokio::test]
async fn a_body_longer_than_the_cap_is_marked_even_where_the_cut_falls_on_a_space() {
    let kept = "a".repeat(MESSAGE_CAP - TRUNCATION_MARKER.len());
    let cut = format!("{kept}{TRUNCATION_MARKER}");
    let whole = "a".repeat(MESSAGE_CAP);
    for frames in [
        vec![format!("{whole} b")],
        vec![whole.clone(), " b".to_owned()],
        vec![format!("{whole}  \n ")],
        vec![whole.clone(), " ".to_owned(), "b".to_owned()],
    ] {
        let detail = detail_of_a_400_with_body(&frames).await;
        assert_eq!(detail, cut, "frames {frames:?}");
    }
}

/// Whitespace around a whole text is not part of its message.
#[tokio::test]
async fn whitespace_around_a_whole_body_is_trimmed() {
    let text = "a".repeat(MESSAGE_CAP - 4);
    let detail = detail_of_a_400_with_body(&[format!("  {text}\n ")]).await;
    assert_eq!(detail, text);
}

/// Whitespace trimmed from the start of a cut text leaves it shorter than the cap, and still
/// cut: the marker shows.
#[tokio::test]
async fn a_cut_body_that_starts_with_whitespace_is_marked() {
    let whole = "a".repeat(MESSAGE_CAP);
    for frames in [
        vec![format!("  {whole}")],
        vec![" ".repeat(MESSAGE_CAP), "ab".to_owned()],
    ] {
        let detail = detail_of_a_400_with_body(&frames).await;
        assert!(
            detail.ends_with(TRUNCATION_MARKER),
            "frames {frames:?}: {detail:?}"
        );
        assert!(!detail.starts_with(' '), "frames {frames:?}: {detail:?}");
        assert!(detail.len() <= MESSAGE_CAP, "frames {frames:?}: {detail:?}");
    }
}
