//! The reference webhook ingestion service: instances own digests, digests have inboxes, and
//! each inbox stores the commits of one provider's push webhooks, in SQLite or PostgreSQL.
//!
//! ```text
//! cargo run --release -p webhook-ingest -- [--port 3000] [--db webhook-ingest.db | --db postgres://…]
//!     [--body-limit BYTES] [--fail-store] [limits]
//! ```
//!
//! It binds 127.0.0.1 on `--port` (0 picks a free port) and prints
//! `listening on 127.0.0.1:PORT` as its first line on stdout; logs go to stderr. `--db :memory:`
//! keeps nothing; `--db postgres://USER:PASSWORD@HOST:PORT/DB` uses that PostgreSQL database
//! (its migrations run at start-up), so several instances can share one store. The password
//! is never logged; a PostgreSQL database that is down at start is connected (and migrated)
//! in the background, with backoff. `--fail-store` makes every store operation fail, to see
//! what providers see when the store is down.
//!
//! A delivery the store cannot take is appended to the spool (`--spool DIR`, default
//! `webhook-ingest-spool`, one per instance), flushed to disk, answered 202 queued, and
//! drained into the store once it answers; past `--spool-max-bytes` (default 1 GiB) such a
//! delivery gets 503 with `Retry-After`. See `webhook_ingest::spool`.
//!
//! The limits (durations as `500ms`, `5s` or plain seconds; see `webhook_ingest::serve` for
//! the why of each default):
//!
//! | flag | limits | default |
//! |---|---|---|
//! | `--header-timeout` | a request head's arrival; an idle HTTP/1 connection | 5s |
//! | `--idle-timeout` | a connection with no request in progress | 60s |
//! | `--body-timeout` | a request body's arrival, from the head (408) | 5s |
//! | `--request-timeout` | the answer, from the head (503 + `Retry-After`) | 8s |
//! | `--max-connections` | connections served at once | descriptor limit − 64, ≤ 10000 |
//! | `--h2-max-streams` | concurrent HTTP/2 streams per connection | 100 |
//! | `--h2-ping-interval`, `--h2-ping-timeout` | HTTP/2 keep-alive pings | 20s, 10s |
//! | `--shutdown-timeout` | in-flight requests after SIGTERM or Ctrl-C | 10s |
//!
//! On SIGTERM or Ctrl-C it stops accepting, lets requests in flight finish up to the shutdown
//! timeout, closes the rest, and logs the ledger's final counts.
//!
//! `/errors` (the error groups, which hold internal text) is served only when the environment
//! variable `WEBHOOK_INGEST_ADMIN_TOKEN` is set, to clients that send it as a bearer token.
//!
//! `--sign` turns it into a signing helper for machines without openssl: it prints the hex
//! HMAC-SHA256 of stdin under the secret in `WEBHOOK_SECRET` (an environment variable, so the
//! secret stays out of the process list) and exits.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;
use std::time::Duration;

use tracing_subscriber::EnvFilter;
use webhook_ingest::serve::{self, Limits};
use webhook_ingest::spool::{Spool, SpoolConfig};
use webhook_ingest::store::{self, Store};
use webhook_ingest::{webhook, Config};

const USAGE: &str =
    "usage: webhook-ingest [--port N] [--db PATH|postgres://…] [--body-limit BYTES] \
                     [--fail-store] [--header-timeout D] [--idle-timeout D] [--body-timeout D] \
                     [--request-timeout D] [--max-connections N] [--h2-max-streams N] \
                     [--h2-ping-interval D] [--h2-ping-timeout D] [--shutdown-timeout D] \
                     [--spool DIR] [--spool-max-bytes BYTES] | --sign";
const DEFAULT_PORT: u16 = 3000;
const DEFAULT_DB: &str = "webhook-ingest.db";
/// Where the bearer token of `/errors` comes from: the environment, so it stays out of the
/// process list.
const ADMIN_TOKEN_ENV: &str = "WEBHOOK_INGEST_ADMIN_TOKEN";

struct Args {
    port: u16,
    db: String,
    config: Config,
    limits: Limits,
    spool: SpoolConfig,
    fail_store: bool,
    sign: bool,
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn parse_args() -> io::Result<Args> {
    let mut parsed = Args {
        port: DEFAULT_PORT,
        db: DEFAULT_DB.to_owned(),
        config: Config {
            admin_token: std::env::var(ADMIN_TOKEN_ENV)
                .ok()
                .filter(|t| !t.is_empty()),
            ..Config::default()
        },
        limits: Limits::default(),
        spool: SpoolConfig::default(),
        fail_store: false,
        sign: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| invalid(format!("{name} needs a value; {USAGE}")))
        };
        let limits = &mut parsed.limits;
        let deadlines = &mut parsed.config.deadlines;
        match arg.as_str() {
            "--port" => parsed.port = number(&arg, &value(&arg)?)?,
            "--db" => parsed.db = value("--db")?,
            "--body-limit" => parsed.config.body_limit = number(&arg, &value(&arg)?)?,
            "--header-timeout" => limits.header_timeout = duration(&arg, &value(&arg)?)?,
            "--idle-timeout" => limits.idle_timeout = duration(&arg, &value(&arg)?)?,
            "--body-timeout" => deadlines.body = duration(&arg, &value(&arg)?)?,
            "--request-timeout" => deadlines.request = duration(&arg, &value(&arg)?)?,
            "--max-connections" => limits.max_connections = count(&arg, &value(&arg)?)?,
            "--h2-max-streams" => limits.h2_max_streams = count(&arg, &value(&arg)?)?,
            "--h2-ping-interval" => limits.h2_ping_interval = duration(&arg, &value(&arg)?)?,
            "--h2-ping-timeout" => limits.h2_ping_timeout = duration(&arg, &value(&arg)?)?,
            "--shutdown-timeout" => limits.shutdown_timeout = duration(&arg, &value(&arg)?)?,
            "--spool" => parsed.spool.dir = value(&arg)?.into(),
            "--spool-max-bytes" => parsed.spool.max_bytes = count(&arg, &value(&arg)?)?,
            "--fail-store" => parsed.fail_store = true,
            "--sign" => parsed.sign = true,
            other => return Err(invalid(format!("unknown argument `{other}`; {USAGE}"))),
        }
    }
    let deadlines = parsed.config.deadlines;
    if deadlines.body >= deadlines.request {
        // A stalled body would get the generic 503 instead of the 408 that names it.
        return Err(invalid(
            "--body-timeout must be shorter than --request-timeout".into(),
        ));
    }
    Ok(parsed)
}

/// A number, such as a port or a byte count.
fn number<T: std::str::FromStr>(flag: &str, text: &str) -> io::Result<T> {
    text.parse()
        .map_err(|_| invalid(format!("bad {flag} `{text}`")))
}

/// A number that must not be zero: a bound of zero would serve nothing.
fn count<T: std::str::FromStr + Default + PartialEq>(flag: &str, text: &str) -> io::Result<T> {
    let n: T = number(flag, text)?;
    if n == T::default() {
        return Err(invalid(format!("{flag} must be at least 1")));
    }
    Ok(n)
}

/// A positive duration: `250ms`, `5s`, or seconds (`1.5`).
fn duration(flag: &str, text: &str) -> io::Result<Duration> {
    let (number, scale) = match text.strip_suffix("ms") {
        Some(ms) => (ms, 1e-3),
        None => (text.strip_suffix('s').unwrap_or(text), 1.0),
    };
    number
        .parse::<f64>()
        .ok()
        .and_then(|n| Duration::try_from_secs_f64(n * scale).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            invalid(format!(
                "bad {flag} `{text}`: give a duration such as 500ms or 5s"
            ))
        })
}

fn sign_stdin() -> io::Result<()> {
    let secret = std::env::var("WEBHOOK_SECRET")
        .map_err(|_| invalid("--sign reads the secret from WEBHOOK_SECRET".into()))?;
    let mut body = Vec::new();
    io::stdin().read_to_end(&mut body)?;
    println!("{}", webhook::sign(secret.as_bytes(), &body));
    Ok(())
}

fn main() -> ExitCode {
    let outcome = parse_args().and_then(|args| {
        if args.sign {
            sign_stdin()
        } else {
            tokio::runtime::Runtime::new()?.block_on(serve(args))
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("webhook-ingest: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> io::Result<()> {
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
    let store = if args.db.starts_with("postgres") {
        // A database that is down at start is retried in the background; meanwhile
        // deliveries go to the spool.
        Store::open_in_background(&args.db)
    } else {
        Store::open(&args.db).await.map_err(|e| {
            let cause = std::error::Error::source(&e).map(|c| format!(": {c}"));
            io::Error::other(format!("{e} at `{db}`{}", cause.unwrap_or_default()))
        })?
    };
    if args.fail_store {
        store.set_failing(true);
    }
    let spool_dir = args.spool.dir.clone();
    let spool = tokio::task::spawn_blocking(move || Spool::open(args.spool))
        .await
        .map_err(io::Error::other)?
        .map_err(|e| {
            io::Error::other(format!(
                "opening the spool at `{}`: {e}",
                spool_dir.display()
            ))
        })?;
    let spooled = spool.stats();
    let config = Config {
        spool: Some(spool),
        ..args.config
    };
    let store_kind = store.kind();
    let connections = config.connections.clone();
    let deadlines = config.deadlines;
    let (router, ledger) = webhook_ingest::app(store, config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("listening on {}", listener.local_addr()?);
    tracing::info!(
        db = %db,
        store = store_kind,
        fail_store = args.fail_store,
        spool = %spool_dir.display(),
        spool_depth = spooled.depth,
        limits = ?args.limits,
        ?deadlines,
        "serving"
    );
    serve::serve(
        listener,
        router,
        args.limits,
        connections,
        shutdown_signal(),
    )
    .await;
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
        balanced = counts.is_balanced(),
        "final ledger"
    );
    Ok(())
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
