//! What a response of the inner service is: a success to pass on, a handler's fault to
//! render, an answer an inner fault layer rendered already, or an error status to re-render
//! (and whether its body is worth reading for a message, and the bounded read of that body).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::CONTENT_ENCODING;
use http::{response, Response, StatusCode};
use http_body::Body;
use tower::BoxError;

use crate::config::Config;
use crate::error::{marked, Fault, FaultMarker, WaitingFault};
use crate::limits::MAX_READABLE_BODY_BYTES;
use crate::middleware::guard::PassedFailure;
use crate::outcome::Outcome;
use crate::panic::{catch, Caught};
use crate::summary::Summary;

/// Whether a response without a fault is a failure to re-render and count as rejected.
pub(crate) fn is_error_status(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

/// Whether an error response's body is worth reading for its message: plain text of a known,
/// small size.
pub(crate) fn is_readable<B: Body>(head: &response::Parts, body: &B) -> bool {
    !head.headers.contains_key(CONTENT_ENCODING)
        && body
            .size_hint()
            .upper()
            .is_some_and(|upper| upper <= MAX_READABLE_BODY_BYTES as u64)
}

/// Reads `body` into `text` until its end or until `text` holds more than `cap` bytes, so a
/// rejection's message costs at most the cap. An error or a panic of the body ends the read.
pub(crate) fn read_bounded<B: Body<Data = Bytes>>(
    mut body: Pin<&mut B>,
    text: &mut Vec<u8>,
    cap: usize,
    cx: &mut Context<'_>,
) -> Poll<()> {
    while text.len() <= cap {
        let polled = catch(|| body.as_mut().poll_frame(cx));
        match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Some(Ok(frame)))) => {
                if let Some(data) = frame.data_ref() {
                    // One byte past the cap tells the summary the text was cut.
                    let room = cap + 1 - text.len();
                    text.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Ok(Poll::Ready(Some(Err(_)) | None)) | Err(_) => break,
        }
    }
    Poll::Ready(())
}

/// What one poll of a state decided.
pub(super) enum Step<B> {
    Pending,
    /// An answer an inner fault layer rendered and counted: passed on, counted here too.
    Forward(Response<B>, Summary),
    /// An error status whose body is read for its message first.
    Read(response::Parts, B),
    /// A failure to answer, with the head of the response it replaces, if any.
    Answer(Option<response::Parts>, Summary),
}

/// What one poll of the inner future that was not a plain success is: a response to
/// classify, a service error or a panic to answer.
pub(super) fn failed_or_marked<B, E>(
    polled: Result<Poll<Result<Response<B>, E>>, Box<Caught>>,
    waiting: Option<WaitingFault>,
    config: &Config,
) -> Step<B>
where
    E: Into<BoxError>,
    B: Body,
{
    match polled {
        Ok(Poll::Pending) => Step::Pending,
        Ok(Poll::Ready(Ok(response))) => classify(response, waiting, config),
        Ok(Poll::Ready(Err(error))) => {
            Step::Answer(None, Summary::from_service_error(&*error.into(), config))
        }
        Err(caught) => Step::Answer(None, panicked(*caught, config)),
    }
}

/// A response that is neither an error status nor marked by a fault: passed on as it is.
/// `classify` would say the same, after looking at more.
pub(super) fn is_plain_success<B>(response: &Response<B>) -> bool {
    !is_error_status(response.status()) && response.extensions().get::<FaultMarker>().is_none()
}

/// What a response of the inner service that is not a plain success is: a fault to render
/// (in its extensions, or `waiting` for a response of its status), an answer already
/// rendered, or an error status to re-render.
fn classify<B: Body>(
    response: Response<B>,
    waiting: Option<WaitingFault>,
    config: &Config,
) -> Step<B> {
    match response.extensions().get::<FaultMarker>().cloned() {
        Some(FaultMarker::Rendered { outcome, code }) => {
            let summary = Summary::already_answered(outcome, response.status(), code);
            Step::Forward(response, summary)
        }
        Some(FaultMarker::Fault(fault)) => render_fault(response, &*fault, config),
        None => {
            if let Some((fault, _)) = waiting.filter(|(_, made)| *made == response.status()) {
                return render_fault(response, &*fault, config);
            }
            // An error status: a plain success went on without coming here.
            if let Some((outcome, code)) = marked(response.extensions(), response.status()) {
                let summary = Summary::already_answered(outcome, response.status(), code);
                return Step::Forward(response, summary);
            }
            if let Some(PassedFailure(summary)) = response.extensions().get::<PassedFailure>() {
                return Step::Answer(None, Summary::clone(summary));
            }
            let (head, body) = response.into_parts();
            if is_readable(&head, &body) && !body.is_end_stream() {
                return Step::Read(head, body);
            }
            let summary = Summary::from_rejection(head.status, &[], config);
            Step::Answer(Some(head), summary)
        }
    }
}

/// A handler's fault to answer in place of `response`, keeping its head.
fn render_fault<B>(response: Response<B>, fault: &dyn Fault, config: &Config) -> Step<B> {
    let mut head = response.into_parts().0;
    // `status`, `code`, `headers` are the user's code: a panic there is a panicking
    // request, not a crashed connection.
    let described = catch(|| {
        let summary = Summary::from_fault(fault, config);
        fault.headers(&mut head.headers);
        summary
    });
    match described {
        Ok(summary) => Step::Answer(Some(head), summary),
        Err(caught) => Step::Answer(None, panicked(*caught, config)),
    }
}

pub(super) fn panicked(caught: Caught, config: &Config) -> Summary {
    Summary::from_panic(
        Outcome::Panicked,
        StatusCode::INTERNAL_SERVER_ERROR,
        caught,
        config,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::convert::Infallible;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use bytes::Bytes;
    use http_body::{Body, Frame};

    use super::read_bounded;

    /// A body of the frames given, each ready at once.
    struct Frames(VecDeque<Bytes>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Ready(self.0.pop_front().map(|data| Ok(Frame::data(data))))
        }
    }

    /// What `read_bounded` keeps of a body in frames of `sizes` bytes, under `cap`.
    fn read(sizes: &[usize], cap: usize) -> Vec<u8> {
        let frames = sizes.iter().map(|&size| Bytes::from(vec![b'a'; size]));
        let mut body = pin!(Frames(frames.collect()));
        let mut text = Vec::new();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(read_bounded(body.as_mut(), &mut text, cap, &mut cx).is_ready());
        text
    }

    /// The cost of a rejection's text is the cap and one byte, however the body is framed:
    /// no frame is copied past the byte that tells the text was cut.
    #[test]
    fn reads_one_byte_past_the_cap_and_no_more() {
        let cap = 16;
        for sizes in [
            vec![4 * cap],
            vec![1, 4 * cap],
            vec![cap - 1, 4 * cap],
            vec![cap, 4 * cap],
            vec![cap / 2, cap / 2, cap],
            vec![1; 2 * cap],
        ] {
            assert_eq!(
                read(&sizes, cap).len(),
                cap + 1,
                "frames of {sizes:?} bytes"
            );
        }
    }

    /// A body that ends within the cap, or one byte past it, is read whole.
    #[test]
    fn reads_a_body_that_ends_by_the_byte_past_the_cap_whole() {
        let cap = 16;
        for sizes in [
            vec![],
            vec![cap],
            vec![cap / 2, cap / 2, 1],
            vec![1; cap + 1],
        ] {
            let total: usize = sizes.iter().sum();
            assert_eq!(read(&sizes, cap).len(), total, "frames of {sizes:?} bytes");
        }
    }
}
