//! faultline in one file: an error type with `#[derive(Fault)]`, the layer, `/metrics`, the
//! errors page, and a graceful shutdown that waits until every request is answered and counted.
//!
//! ```text
//! cargo run -p quickstart -- --port 3000    # or PORT=3000; port 0 picks a free one
//! curl -i 127.0.0.1:3000/hooks -H 'content-type: application/json' -d '{"event":"issues","commits":1}'
//! ```

use std::future::Future;
use std::io;
use std::process::ExitCode;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use faultline::{Fault, FaultLayer};
use serde::Deserialize;

/// How long a shutdown waits for the requests in flight before it gives up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A push hook, as far as this service reads it.
#[derive(Deserialize)]
struct Hook {
    event: String,
    commits: u32,
}

/// One attribute per variant: the status, and a stable code for clients and metrics.
#[derive(Debug, thiserror::Error, Fault)]
enum HookError {
    #[error("event `{0}` is not handled here")]
    #[fault(status = 422, code = "unsupported-event")]
    UnsupportedEvent(String),
    #[error("a push needs at least one commit")]
    #[fault(status = 400, code = "empty-push")]
    EmptyPush,
}

/// A body that is not JSON, or lacks a field, never gets here: axum rejects it, and the layer
/// answers and counts that too.
async fn receive(Json(hook): Json<Hook>) -> Result<StatusCode, HookError> {
    match hook.event.as_str() {
        "push" if hook.commits == 0 => Err(HookError::EmptyPush),
        "push" => Ok(StatusCode::ACCEPTED),
        other => Err(HookError::UnsupportedEvent(other.to_owned())),
    }
}

/// A bug, to see what a panic becomes: a generic 500 for the client, one report, one count.
async fn bug() -> StatusCode {
    panic!("the handler indexed past the end of the commits")
}

#[tokio::main]
async fn main() -> io::Result<ExitCode> {
    // Reports go through a writer that never makes a request wait; stdout stays for this.
    let (writer, _flush_on_drop) = tracing_appender::non_blocking(io::stderr());
    tracing_subscriber::fmt().with_writer(writer).init();
    faultline::install_panic_hook();

    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/hooks", post(receive))
        .route("/bug", get(bug))
        .route("/metrics", get(ledger.metrics_handler()))
        // These two show internal text (5xx messages, panic text): in a real service, mount
        // them behind your admin guard. Here the listener is reachable from this host only.
        .route("/errors", get(ledger.errors_handler()))
        .route("/errors/inbox", get(ledger.errors_page_handler()))
        .layer(layer);

    let shutdown = shutdown_signal()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port()?)).await?;
    println!("listening on {}", listener.local_addr()?);

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    let server = tokio::spawn(async move { server.await });

    shutdown.await;
    // axum stops accepting, and each open connection finishes the request it has.
    let _ = stop.send(());
    // A request is in flight until its body is sent to the end: once none is, every request
    // has been answered and counted.
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    let drained = tokio::time::timeout_at(deadline, ledger.quiescent()).await;
    // The last bytes of an answer are written after it is counted: let the connections close.
    let _ = tokio::time::timeout_at(deadline, server).await;

    let s = ledger.snapshot();
    println!(
        "stopped after {} requests: {} ok, {} handled, {} rejected, {} panicked, {} in flight",
        s.started, s.ok, s.handled, s.rejected, s.panicked, s.in_flight
    );
    Ok(if drained.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The port: `--port N`, else `$PORT`, else 3000.
fn port() -> io::Result<u16> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = match args.as_slice() {
        [flag, port] if flag == "--port" => port.clone(),
        [] => std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned()),
        _ => return Err(io::Error::other("usage: quickstart [--port N]")),
    };
    value
        .parse()
        .map_err(|_| io::Error::other(format!("bad port `{value}`")))
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM (what `kill` and orchestrators send). It listens
/// from the moment it is called, so a signal sent right after start-up is not missed.
fn shutdown_signal() -> io::Result<impl Future<Output = ()>> {
    #[cfg(unix)]
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    })
}
