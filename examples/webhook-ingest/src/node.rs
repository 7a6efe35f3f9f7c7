//! One node of the service, run as the `webhook-ingest` binary runs it ([`run`]): its logs, its
//! store and spool opened, its socket bound, served until SIGTERM or Ctrl-C, its catch-up
//! leases given back and its ledger's last counts logged. `src/main.rs` is this with the
//! configuration the flags make; an example of the package runs the same node with something
//! added to that configuration, so that the start is written once.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

use crate::cli::Cli;
use crate::serve;
use crate::spool::{unverified, Spool};
use crate::store::{self, Store};
use crate::verify::webhook;
use crate::Config;

/// Runs the node `cli` describes, or, with `--sign`, signs stdin; the process's exit code.
/// `adjust` changes the configuration the flags made before the node starts: the binary
/// changes nothing; an example of the package adds what no flag gives (a
/// [`WrapStore`](crate::catchup::WrapStore) around catch-up's store).
pub fn run(cli: Cli, adjust: impl FnOnce(&mut Config)) -> ExitCode {
    let outcome = if cli.sign {
        sign_stdin()
    } else {
        tokio::runtime::Runtime::new().and_then(|runtime| runtime.block_on(serve_node(cli, adjust)))
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("webhook-ingest: {error}");
            ExitCode::FAILURE
        }
    }
}

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

/// The log subscriber: logs go through a background writer, so no request ever waits on
/// stderr; when it falls behind, lines are dropped rather than requests slowed. The guard
/// flushes what is left when dropped, at the end.
fn log_to_stderr() -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, flush_on_exit) = tracing_appender::non_blocking(io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(writer)
        .with_ansi(io::stderr().is_terminal())
        .init();
    flush_on_exit
}

/// The node from start to stop: the store and the spools opened, `adjust` applied, the
/// socket bound and served until a signal, the leases given back, the last counts logged.
async fn serve_node(args: Cli, adjust: impl FnOnce(&mut Config)) -> io::Result<()> {
    let _flush_on_exit = log_to_stderr();
    faultline::install_panic_hook();
    // The location as logs may show it: a PostgreSQL URL's password is masked.
    let db = store::redacted(&args.db);
    let store = open_store_said(&args, &db).await?;
    let spool_dir = args.spool_config().dir;
    let (spool, unverified) = open_spools(&args).await?;
    let spooled = spool.stats();
    let store_kind = store.kind();
    let mut config = Config {
        spool: Some(spool),
        unverified: Some(unverified),
        ..args.config()
    };
    // Named here, so that this node's catch-up leases are given back at a clean stop.
    let node = crate::catchup::node_name();
    config.catchup.node = Some(node.clone());
    adjust(&mut config);
    let leases = store.clone();
    let limits = args.limits();
    let connections = config.connections.clone();
    let deadlines = config.deadlines;
    let listen = args.listen_addr();
    let listener = bind(listen)
        .map_err(|e| io::Error::new(e.kind(), format!("binding {listen} failed: {e}")))?;
    let bound = listener.local_addr()?;
    let config = Config {
        public_url: Some(public_url(args.public_url.as_deref(), bound)),
        ..config
    };
    let public = config.public_url.clone().unwrap_or_default();
    let (router, ledger) = crate::app(store, config);
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
    log_final_ledger(&ledger);
    Ok(())
}

/// The store the flags name, or why it cannot be opened, said with `db` (the location with
/// its password masked).
async fn open_store_said(args: &Cli, db: &str) -> io::Result<Store> {
    let options = store::OpenOptions {
        db_ca: args.db_ca.clone(),
        sqlite_sync: args.sqlite_sync,
    };
    open_store(&args.db, options).await.map_err(|e| {
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
    })
}

/// The spool and the unverified spool the flags describe, opened off the runtime's threads.
async fn open_spools(args: &Cli) -> io::Result<(Spool, Spool)> {
    let spool_config = args.spool_config();
    let spool_dir = spool_config.dir.clone();
    let unverified_max_bytes = args.unverified_max_bytes.get();
    tokio::task::spawn_blocking(move || {
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
    })
}

/// The ledger's counts at the end, logged once.
fn log_final_ledger(ledger: &faultline::Ledger) {
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
