//! The reference webhook ingestion service: instances own digests, digests have inboxes, and
//! each inbox stores the commits of one provider's push webhooks, in SQLite or PostgreSQL.
//!
//! ```text
//! cargo run --release -p webhook-ingest -- [--port 3000] [--db webhook-ingest.db | --db postgres://…]
//!     [--body-limit BYTES] [--fail-store]
//! ```
//!
//! It binds 127.0.0.1 on `--port` (0 picks a free port) and prints
//! `listening on 127.0.0.1:PORT` as its first line on stdout; logs go to stderr. `--db :memory:`
//! keeps nothing; `--db postgres://USER:PASSWORD@HOST:PORT/DB` uses that PostgreSQL database
//! (its migrations run at start-up), so several instances can share one store. The password
//! is never logged. `--fail-store` makes every store operation fail, to see the 503s providers
//! would see.
//!
//! `/errors` (the error groups, which hold internal text) is served only when the environment
//! variable `WEBHOOK_INGEST_ADMIN_TOKEN` is set, to clients that send it as a bearer token.
//!
//! `--sign` turns it into a signing helper for machines without openssl: it prints the hex
//! HMAC-SHA256 of stdin under the secret in `WEBHOOK_SECRET` (an environment variable, so the
//! secret stays out of the process list) and exits.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;

use tracing_subscriber::EnvFilter;
use webhook_ingest::store::{self, Store};
use webhook_ingest::{webhook, Config};

const USAGE: &str =
    "usage: webhook-ingest [--port N] [--db PATH|postgres://…] [--body-limit BYTES] \
                     [--fail-store] | --sign";
const DEFAULT_PORT: u16 = 3000;
const DEFAULT_DB: &str = "webhook-ingest.db";
/// Where the bearer token of `/errors` comes from: the environment, so it stays out of the
/// process list.
const ADMIN_TOKEN_ENV: &str = "WEBHOOK_INGEST_ADMIN_TOKEN";

struct Args {
    port: u16,
    db: String,
    config: Config,
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
        fail_store: false,
        sign: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| invalid(format!("{name} needs a value; {USAGE}")))
        };
        match arg.as_str() {
            "--port" => {
                let v = value("--port")?;
                parsed.port = v
                    .parse()
                    .map_err(|_| invalid(format!("bad --port `{v}`")))?;
            }
            "--db" => parsed.db = value("--db")?,
            "--body-limit" => {
                let v = value("--body-limit")?;
                parsed.config.body_limit = v
                    .parse()
                    .map_err(|_| invalid(format!("bad --body-limit `{v}`")))?;
            }
            "--fail-store" => parsed.fail_store = true,
            "--sign" => parsed.sign = true,
            other => return Err(invalid(format!("unknown argument `{other}`; {USAGE}"))),
        }
    }
    Ok(parsed)
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
    let store = Store::open(&args.db).await.map_err(|e| {
        let cause = std::error::Error::source(&e).map(|c| format!(": {c}"));
        io::Error::other(format!("{e} at `{db}`{}", cause.unwrap_or_default()))
    })?;
    if args.fail_store {
        store.set_failing(true);
    }
    let store_kind = store.kind();
    let (router, _ledger) = webhook_ingest::app(store, args.config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("listening on {}", listener.local_addr()?);
    tracing::info!(db = %db, store = store_kind, fail_store = args.fail_store, "serving");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown_signal())
        .await
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
