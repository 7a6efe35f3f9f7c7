//! The reference webhook ingestion service: instances own digests, digests have inboxes, and
//! each inbox stores the commits of one provider's push webhooks, in SQLite or PostgreSQL.
//!
//! ```text
//! cargo run --release -p webhook-ingest -- [--listen ADDR | --port N] [--db PATH|postgres://…]
//!     [--body-limit BYTES] [limits]
//! cargo run --release -p webhook-ingest -- --help
//! ```
//!
//! It binds `--listen` (default `127.0.0.1:3000`; `--port N` is short for `127.0.0.1:N`, and 0
//! picks a free port) and prints `listening on ADDR` as its first line on stdout; logs go to
//! stderr. `GET /` says what the service is and how to start; the URLs it and every inbox
//! answer with start with `--public-url`, else `http://ADDR`, never the request's `Host`. `--db :memory:` keeps nothing; `--db postgres://USER:PASSWORD@HOST:PORT/DB` uses
//! that PostgreSQL database (its migrations run at start-up), so several nodes can share
//! one store. The password is never logged. Its `sslmode` (`disable`, `prefer` by default,
//! `require`, `verify-full`) means what it means to libpq; `verify-full` trusts the system's
//! roots and those in `--db-ca FILE`, and a certificate that does not verify stops the service
//! at start-up with the reason; a PostgreSQL database that is merely down at start is connected
//! (and migrated) in the background, with backoff.
//!
//! A delivery the store cannot take is appended to the spool (`--spool DIR`, default
//! `webhook-ingest-spool`, one per node), flushed to disk, answered 202 queued, and
//! drained into the store once it answers; past `--spool-max-bytes` (default 1 GiB) such a
//! delivery gets 503 with `Retry-After`. See `webhook_ingest::spool`. A delivery to an inbox
//! this node does not know (from its file of known inboxes beside the spool, refreshed
//! every `--inbox-refresh`) is spooled unverified only within `--unverified-max-bytes`
//! (64 MiB) and `--unverified-max-body` (1 MiB), else 503; see
//! `webhook_ingest::spool::unverified`.
//!
//! `--secret-grace` (default 24h) is how long an inbox's previous secret still passes after a
//! rotation (`POST /api/{instance}/digests/{digest}/inboxes/{inbox}/secret`); the deliveries an
//! inbox refused are listed at `GET /api/{instance}/inboxes/{inbox}/failures`.
//! `docs/reference-service.md` is the service's guide.
//!
//! Every flag, its default and its environment variable are in `--help` and in
//! `webhook_ingest::cli`; deployment settings and secrets (`WEBHOOK_INGEST_LISTEN`,
//! `WEBHOOK_INGEST_DB`, `WEBHOOK_INGEST_ADMIN_TOKEN`, …) may come from the environment, which
//! keeps a password or a token out of the process list. Durations are written `500ms`, `5s`,
//! `10m`, `24h` or plain seconds; see `webhook_ingest::serve` for the why of each limit's
//! default.
//!
//! On SIGTERM or Ctrl-C it stops accepting, lets requests in flight finish up to the shutdown
//! timeout, closes the rest, and logs the ledger's final counts.
//!
//! `/errors` (the error groups, which hold internal text) is served only when an admin token
//! is set, to clients that send it as a bearer token.
//!
//! `--sign` turns it into a signing helper for machines without openssl: it prints the hex
//! HMAC-SHA256 of stdin under the secret in `WEBHOOK_SECRET` (an environment variable, so the
//! secret stays out of the process list) and exits.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;

use tracing_subscriber::EnvFilter;
use webhook_ingest::cli::Cli;
use webhook_ingest::serve;
use webhook_ingest::spool::{unverified, Spool};
use webhook_ingest::store::{self, Store};
use webhook_ingest::verify::webhook;

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn sign_stdin() -> io::Result<()> {
    let secret = std::env::var("WEBHOOK_SECRET")
        .map_err(|_| invalid("--sign reads the secret from WEBHOOK_SECRET".into()))?;
    let mut body = Vec::new();
    io::stdin().read_to_end(&mut body)?;
    println!("{}", webhook::sign(secret.as_bytes(), &body));
    Ok(())
}

/// mimalloc rather than the system allocator: a delivery makes a couple of hundred small
/// allocations (the push's JSON, the HTTP head, the rows), and glibc's took 15% of the
/// service's CPU under load, against a few per cent here (`BENCHMARKS.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse_checked();
    let outcome = if cli.sign {
        sign_stdin()
    } else {
        tokio::runtime::Runtime::new().and_then(|runtime| runtime.block_on(serve(cli)))
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("webhook-ingest: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Cli) -> io::Result<()> {
    // Logs go through a background writer, so no request ever waits on stderr; when it falls
    // behind, lines are dropped rather than requests slowed.
    let (writer, _flush_on_exit) = tracing_appender::non_blocking(io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(writer)
        .with_ansi(io::stderr().is_terminal())
        .init();
    faultline::install_panic_hook();

    // The location as logs may show it: a PostgreSQL URL's password is masked.
    let db = store::redacted(&args.db);
    let options = store::OpenOptions {
        db_ca: args.db_ca.clone(),
        sqlite_sync: args.sqlite_sync,
    };
    let store = open_store(&args.db, options).await.map_err(|e| {
        // Every cause, so that a refused certificate says why (an unknown issuer, a host name
        // the certificate does not name); none of them carries the URL.
        // A pool's error repeats its cause in its own text: each is said once.
        let mut said = format!("{e} at `{db}`");
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            let text = c.to_string();
            if !said.contains(&text) {
                said.push_str(&format!(": {text}"));
            }
            cause = c.source();
        }
        io::Error::other(said)
    })?;
    let spool_config = args.spool_config();
    let spool_dir = spool_config.dir.clone();
    let unverified_max_bytes = args.unverified_max_bytes.get();
    let (spool, unverified) = tokio::task::spawn_blocking(move || {
        let spool = Spool::open(spool_config)?;
        let unverified = unverified::open(spool.dir(), unverified_max_bytes)?;
        Ok::<_, io::Error>((spool, unverified))
    })
    .await
    .map_err(io::Error::other)?
    .map_err(|e| {
        io::Error::other(format!(
            "opening the spool at `{}`: {e}",
            spool_dir.display()
        ))
    })?;
    let spooled = spool.stats();
    let store_kind = store.kind();
    let mut config = webhook_ingest::Config {
        spool: Some(spool),
        unverified: Some(unverified),
        ..args.config()
    };
    // Named here, so that this node's catch-up leases are given back at a clean stop.
    let node = webhook_ingest::catchup::node_name();
    config.catchup.node = Some(node.clone());
    let leases = store.clone();
    let limits = args.limits();
    let connections = config.connections.clone();
    let deadlines = config.deadlines;
    let listen = args.listen_addr();
    let listener = bind(listen)
        .map_err(|e| io::Error::new(e.kind(), format!("binding {listen} failed: {e}")))?;
    let bound = listener.local_addr()?;
    let config = webhook_ingest::Config {
        public_url: Some(public_url(args.public_url.as_deref(), bound)),
        ..config
    };
    let public = config.public_url.clone().unwrap_or_default();
    let (router, ledger) = webhook_ingest::app(store, config);
    println!("listening on {bound}");
    tracing::info!(
        db = %db,
        store = store_kind,
        spool = %spool_dir.display(),
        spool_depth = spooled.depth,
        public_url = %public,
        ?limits,
        ?deadlines,
        "serving"
    );
    serve::serve(listener, router, limits, connections, shutdown_signal()).await;
    if let Err(error) = leases.release_leases(node).await {
        tracing::warn!(%error, "catch-up's leases could not be given back; they run out by themselves");
    }
    let counts = ledger.snapshot();
    tracing::info!(
        started = counts.started,
        ok = counts.ok,
        handled = counts.handled,
        rejected = counts.rejected,
        service_error = counts.service_error,
        panicked = counts.panicked,
        aborted = counts.aborted,
        cancelled = counts.cancelled,
        in_flight = counts.in_flight,
        consistent = counts.is_consistent(),
        "final ledger"
    );
    Ok(())
}

/// The base URL of callback URLs and of the first page: `--public-url`, else built from the
/// address bound (never from a request's `Host`). An address of every interface is no URL
/// a provider can call: said once, at start.
fn public_url(configured: Option<&str>, bound: std::net::SocketAddr) -> String {
    if let Some(url) = configured {
        return url.to_owned();
    }
    if bound.ip().is_unspecified() {
        tracing::warn!(
            %bound,
            "no --public-url: inbox callback URLs name an address of every interface; \
             set --public-url to the URL providers reach this service by"
        );
    }
    format!("http://{bound}")
}

/// The store: SQLite opened now; PostgreSQL opened now if it answers, else in the background
/// while deliveries go to the spool. A setting no retry can fix (an `sslmode` the URL gets
/// wrong, a certificate that does not verify) stops the start.
async fn open_store(
    location: &str,
    options: store::OpenOptions,
) -> Result<Store, store::StoreError> {
    if !store::is_postgres(location) {
        return Store::open_with(location, &options).await;
    }
    match Store::open_with(location, &options).await {
        Ok(store) => Ok(store),
        Err(error) if error.is_lasting() => Err(error),
        Err(error) => {
            let cause = std::error::Error::source(&error).map(ToString::to_string);
            tracing::warn!(
                db = %store::redacted(location),
                %error,
                cause = cause.as_deref().unwrap_or(""),
                "the store is not reachable; connecting in the background"
            );
            Ok(Store::open_in_background(location, options))
        }
    }
}

/// Ctrl-C or SIGTERM (what `kill PID` sends): stop accepting, finish the requests in flight,
/// and let the log writer flush.
async fn shutdown_signal() {
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}

/// Connections the kernel holds for the service before it accepts them. A burst of a few
/// thousand at once (senders retrying after an outage, a flood of stalled clients) must fit:
/// past the backlog the kernel drops a connection's data or falls back to SYN cookies, and
/// that client waits a retransmission (1 s, then 3, 7, 15 s) before the service even sees it,
/// its header and body deadlines with it. tokio's `TcpListener::bind` asks for 1,024; Linux
/// caps what is asked at `net.core.somaxconn` (4,096 by default).
const LISTEN_BACKLOG: u32 = 4096;

/// The listening socket, as `TcpListener::bind` makes it (`SO_REUSEADDR` on Unix), with a
/// backlog of [`LISTEN_BACKLOG`].
fn bind(listen: std::net::SocketAddr) -> io::Result<tokio::net::TcpListener> {
    let socket = if listen.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(listen)?;
    socket.listen(LISTEN_BACKLOG)
}
