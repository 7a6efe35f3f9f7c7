//! A deadline on a connection's first bytes.
//!
//! hyper-util's protocol detection reads up to HTTP/2's 24-byte preface before it hands the
//! connection to HTTP/1 or HTTP/2, and it has no timer: a client that connects and sends
//! nothing, or a few bytes of the preface, would hold its connection for ever. hyper's own
//! header read timeout only starts once HTTP/1 has taken over. This wrapper fails the read
//! when the first [`PREFACE_LEN`] bytes have not all arrived in time.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The length of HTTP/2's connection preface, the most protocol detection reads.
const PREFACE_LEN: usize = 24;

pin_project! {
    /// A connection whose first bytes must arrive within a deadline.
    pub(crate) struct PrefaceDeadline<T> {
        #[pin]
        io: T,
        // Dropped once the first bytes are in: the rest is hyper's to time.
        deadline: Option<Pin<Box<Sleep>>>,
        read: usize,
    }
}

impl<T> PrefaceDeadline<T> {
    pub(crate) fn new(io: T, timeout: Duration) -> Self {
        Self {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
            read: 0,
        }
    }
}

impl<T: AsyncRead> AsyncRead for PrefaceDeadline<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        match this.io.poll_read(cx, buf) {
            Poll::Ready(result) => {
                *this.read += buf.filled().len() - before;
                if *this.read >= PREFACE_LEN {
                    *this.deadline = None;
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let expired = this
                    .deadline
                    .as_mut()
                    .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
                if expired {
                    let error = io::Error::new(io::ErrorKind::TimedOut, "no request head in time");
                    Poll::Ready(Err(error))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl<T: AsyncWrite> AsyncWrite for PrefaceDeadline<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}
