//! The serve stack: what a service exposed to the internet needs beside the fault layer.
//!
//! faultline counts requests; what happens before a request exists, or between requests, is
//! the server's to bound. This module serves a router over TCP with a limit at every stage:
//!
//! | stage | limit | default |
//! |---|---|---|
//! | first bytes and request head | [`Limits::header_timeout`]: closed if the head is not in | 5 s |
//! | idle connection | [`Limits::idle_timeout`]; HTTP/1 waits for a next head only `header_timeout` | 60 s |
//! | body | [`Deadlines::body`]: 408 `body-timeout`, counted | 5 s |
//! | whole request | [`Deadlines::request`]: 503 `deadline-exceeded` + `Retry-After`, counted | 8 s |
//! | open connections | [`Limits::max_connections`]: past it, connections wait in the backlog | the descriptor limit less 64, at most 10,000 |
//! | HTTP/2 streams | [`Limits::h2_max_streams`] per connection | 100 |
//! | HTTP/2 liveness | a ping every [`Limits::h2_ping_interval`], answered within [`Limits::h2_ping_timeout`] | 20 s, 10 s |
//! | shutdown | [`Limits::shutdown_timeout`] for in-flight requests, then closed | 10 s |
//!
//! hyper's protections against HTTP/2 reset floods (pending-accept and local-error reset
//! stream caps) stay at their defaults, which are on.
//!
//! The two request deadlines run inside the fault layer (see [`deadline`]), so their answers
//! are counted; the rest happens below any request and shows in the connection gauge that
//! [`Connections`] serves beside the ledger's metrics.

pub mod connections;
pub mod deadline;
mod preface;

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::Instant;
use tower::Service;

pub use connections::{default_max_connections, Connections};
pub use deadline::Deadlines;

use preface::PrefaceDeadline;

/// How long a client may take to send a request head: a provider sends it in one packet, so
/// a few seconds is generous, and a stalled client holds a descriptor no longer.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may stay open with no request in progress: providers that keep
/// connections alive reuse them within seconds.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// RFC 9113 recommends allowing no fewer than 100 concurrent streams.
pub const DEFAULT_H2_MAX_STREAMS: u32 = 100;
/// How often an HTTP/2 connection is pinged, so that a peer that vanished is noticed.
pub const DEFAULT_H2_PING_INTERVAL: Duration = Duration::from_secs(20);
/// How long a ping may go unanswered before the connection is closed.
pub const DEFAULT_H2_PING_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for requests in flight: longer than the request deadline, so every
/// request that started can finish, and well inside the 30 s an orchestrator such as
/// Kubernetes waits before it kills the process.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long accepting pauses after an error that is not one connection's (out of
/// descriptors, out of memory), so the loop does not spin while the condition lasts.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// How long connections get to go once they are told to close at the shutdown deadline:
/// they only drop what they hold.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The connection-level limits; [`Deadlines`] holds the request-level ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time for a connection's first request head (HTTP/1), or its preface (HTTP/2), and for
    /// every later HTTP/1 head; hyper starts that clock as soon as it waits for a head, so an
    /// idle HTTP/1 keep-alive connection is closed after this too.
    pub header_timeout: Duration,
    /// Time a connection may stay open with no request in progress.
    pub idle_timeout: Duration,
    /// Connections served at once; the next ones wait in the kernel's listen backlog.
    pub max_connections: usize,
    /// Concurrent HTTP/2 streams per connection.
    pub h2_max_streams: u32,
    /// Interval of HTTP/2 keep-alive pings.
    pub h2_ping_interval: Duration,
    /// Time for a ping's acknowledgement before the connection is closed.
    pub h2_ping_timeout: Duration,
    /// Time in-flight requests get to finish once shutdown begins.
    pub shutdown_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: default_max_connections(),
            h2_max_streams: DEFAULT_H2_MAX_STREAMS,
            h2_ping_interval: DEFAULT_H2_PING_INTERVAL,
            h2_ping_timeout: DEFAULT_H2_PING_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// Where the server is in its life, as its connections see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Serving,
    /// Finish what is in flight, take nothing new.
    Draining,
    /// Drop everything now.
    Closing,
}

/// What every connection task shares.
#[derive(Clone)]
struct ConnectionKit {
    builder: Arc<Builder<Executor>>,
    router: Router,
    limits: Limits,
    executor: Executor,
}

/// Spawns the tasks hyper asks for (HTTP/2 streams) and the connection tasks, each holding a
/// sender of `alive`, so shutdown knows when the last one ends, and each ended at `Closing`.
#[derive(Clone)]
struct Executor {
    phase: watch::Receiver<Phase>,
    alive: mpsc::Sender<()>,
}

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, task: F) {
        let mut phase = self.phase.clone();
        let alive = self.alive.clone();
        tokio::spawn(async move {
            let _alive = alive;
            tokio::select! {
                _ = task => {}
                _ = phase.wait_for(|p| *p == Phase::Closing) => {}
            }
        });
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes, then drains:
/// stops accepting, lets requests in flight finish up to [`Limits::shutdown_timeout`], and
/// closes what is left. Returns once every connection is closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    connections: Connections,
    shutdown: impl Future<Output = ()>,
) {
    let (phase, phase_seen) = watch::channel(Phase::Serving);
    let (alive, mut all_closed) = mpsc::channel::<()>(1);
    let executor = Executor {
        phase: phase_seen,
        alive,
    };
    let shared = ConnectionKit {
        builder: Arc::new(builder(&limits, executor.clone())),
        router,
        limits,
        executor,
    };
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    connections.set_limit(limits.max_connections);
    tokio::pin!(shutdown);
    loop {
        // Not accepting while every permit is out leaves new connections in the backlog.
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&permits).acquire_owned() => permit,
        };
        let Ok(permit) = permit else { break };
        let stream = tokio::select! {
            () = &mut shutdown => break,
            stream = accept(&listener) => stream,
        };
        if let Some(stream) = stream {
            let open = connections.opened();
            let shared = shared.clone();
            hyper::rt::Executor::execute(&shared.executor.clone(), async move {
                shared.serve_connection(stream).await;
                drop((open, permit));
            });
        }
    }
    drop(listener);
    // The executor in `shared` holds a sender of `alive`: without it, the channel closes
    // when the last task ends.
    drop(shared);
    drain(
        &phase,
        &mut all_closed,
        &connections,
        limits.shutdown_timeout,
    )
    .await;
}

/// Asks every connection to finish what it has in flight and close; past `timeout`, makes
/// them drop it. Returns once every task is gone (or [`CLOSE_WAIT`] after that).
async fn drain(
    phase: &watch::Sender<Phase>,
    all_closed: &mut mpsc::Receiver<()>,
    connections: &Connections,
    timeout: Duration,
) {
    tracing::info!(open = connections.open(), "draining");
    let _ = phase.send(Phase::Draining);
    if tokio::time::timeout(timeout, all_closed.recv())
        .await
        .is_ok()
    {
        return;
    }
    tracing::warn!(
        open = connections.open(),
        "shutdown deadline passed; closing the connections still open"
    );
    let _ = phase.send(Phase::Closing);
    let _ = tokio::time::timeout(CLOSE_WAIT, all_closed.recv()).await;
}

/// The next connection, or `None` after an error (paused after, if it was not the
/// connection's own).
async fn accept(listener: &TcpListener) -> Option<TcpStream> {
    match listener.accept().await {
        Ok((stream, _)) => Some(stream),
        Err(error) => {
            let own = matches!(
                error.kind(),
                io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionRefused
            );
            if !own {
                tracing::warn!(%error, "accept failed; pausing");
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
            }
            None
        }
    }
}

/// hyper's connection builder: HTTP/1 and HTTP/2 (detected), both with their timers set.
fn builder(limits: &Limits, executor: Executor) -> Builder<Executor> {
    let mut builder = Builder::new(executor);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.h2_max_streams)
        .keep_alive_interval(limits.h2_ping_interval)
        .keep_alive_timeout(limits.h2_ping_timeout);
    builder
}

impl ConnectionKit {
    /// Serves one connection until it ends, is idle too long, or the server shuts down.
    async fn serve_connection(self, stream: TcpStream) {
        let activity = Arc::new(Activity::new());
        let service = {
            let activity = Arc::clone(&activity);
            let router = self.router.clone();
            hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let busy = activity.begin();
                let mut router = router.clone();
                async move {
                    let response = router.call(request).await;
                    drop(busy);
                    response
                }
            })
        };
        let io = TokioIo::new(PrefaceDeadline::new(stream, self.limits.header_timeout));
        let connection = self.builder.serve_connection(io, service);
        tokio::pin!(connection);
        let mut phase = self.executor.phase.clone();
        let mut closing = false;
        loop {
            let idle_check = activity.next_check(self.limits.idle_timeout);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "connection ended");
                    }
                    return;
                }
                changed = phase.changed() => match changed.map(|()| *phase.borrow_and_update()) {
                    Ok(Phase::Serving) => {}
                    Ok(Phase::Draining) => {
                        closing = true;
                        connection.as_mut().graceful_shutdown();
                    }
                    Ok(Phase::Closing) | Err(_) => return,
                },
                () = tokio::time::sleep_until(idle_check), if !closing => {
                    if activity.idle_past(self.limits.idle_timeout) {
                        closing = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
}

/// Whether a connection has a request in progress, and since when it has had none.
struct Activity {
    start: Instant,
    busy: AtomicUsize,
    /// Milliseconds from `start` to the end of the last request.
    last_end_ms: AtomicU64,
}

/// A request in progress on a connection, until dropped.
struct Busy(Arc<Activity>);

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            busy: AtomicUsize::new(0),
            last_end_ms: AtomicU64::new(0),
        }
    }

    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(self))
    }

    fn idle_since(&self) -> Instant {
        self.start + Duration::from_millis(self.last_end_ms.load(Ordering::Relaxed))
    }

    /// When the idle deadline should next be looked at.
    fn next_check(&self, idle: Duration) -> Instant {
        if self.busy.load(Ordering::Relaxed) > 0 {
            Instant::now() + idle
        } else {
            self.idle_since() + idle
        }
    }

    fn idle_past(&self, idle: Duration) -> bool {
        self.busy.load(Ordering::Relaxed) == 0 && self.idle_since() + idle <= Instant::now()
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let elapsed = self.0.start.elapsed().as_millis();
        let elapsed = u64::try_from(elapsed).unwrap_or(u64::MAX);
        self.0.last_end_ms.store(elapsed, Ordering::Relaxed);
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
