//! A server with one route per kind of failure, for tests, load scripts and benchmarks.
//!
//! ```text
//! cargo run --release -p failure-lab -- --port 3001 [--mode faultline]
//! ```
//!
//! It binds 127.0.0.1 on `--port` (0 picks a free port) and prints
//! `listening on 127.0.0.1:PORT` as its first line on stdout.
//!
//! `--mode` picks what handles failures, for the side-by-side benchmark
//! (`load-scripts/bench/bench.sh`):
//!
//! | mode | failures are handled by |
//! |---|---|
//! | `faultline` (default) | the fault layer, its panic hook, reports through a non-blocking writer |
//! | `bare` | nothing: small JSON errors written by hand, panics not caught |
//! | `catch-panic` | tower-http's `CatchPanicLayer`, std's default panic hook |
//! | `naive` | `{:#?}` of the whole error, cut to 5,000 chars, logged synchronously |

use std::io;

use tracing_appender::non_blocking::WorkerGuard;

/// What handles failures; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Faultline,
    Bare,
    CatchPanic,
    Naive,
}

impl Mode {
    fn parse(value: &str) -> io::Result<Self> {
        match value {
            "faultline" => Ok(Self::Faultline),
            "bare" => Ok(Self::Bare),
            "catch-panic" => Ok(Self::CatchPanic),
            "naive" => Ok(Self::Naive),
            other => Err(invalid(format!(
                "bad --mode `{other}`; one of faultline, bare, catch-panic, naive"
            ))),
        }
    }
}

struct Args {
    port: u16,
    mode: Mode,
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn parse_args() -> io::Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        port: 0,
        mode: Mode::Faultline,
    };
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--port" => {
                parsed.port = value
                    .parse()
                    .map_err(|_| invalid(format!("bad --port `{value}`")))?;
            }
            "--mode" => parsed.mode = Mode::parse(&value)?,
            other => {
                return Err(invalid(format!(
                    "unknown argument `{other}`; usage: failure-lab [--port N] [--mode MODE]"
                )))
            }
        }
    }
    Ok(parsed)
}

/// Sets up the mode's panic hook and log writer. The guard flushes the non-blocking writer
/// when dropped, so it lives as long as `main`.
fn init_reporting(mode: Mode) -> Option<WorkerGuard> {
    match mode {
        Mode::Faultline => {
            faultline::install_panic_hook();
            let (writer, guard) = tracing_appender::non_blocking(io::stdout());
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_writer(writer)
                .with_ansi(false)
                .init();
            Some(guard)
        }
        Mode::Naive => {
            // The writer most services start with: every event written to stdout in place.
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_writer(io::stdout)
                .with_ansi(false)
                .init();
            None
        }
        Mode::Bare | Mode::CatchPanic => None,
    }
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let args = parse_args()?;
    let _guard = init_reporting(args.mode);
    let app = match args.mode {
        Mode::Faultline => failure_lab::app().0,
        Mode::Bare => failure_lab::bare(),
        Mode::CatchPanic => failure_lab::catch_panic(),
        Mode::Naive => failure_lab::naive(),
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await
}
