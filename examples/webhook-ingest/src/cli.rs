//! The service's command line: every flag, its default, and the environment variable that may
//! set it instead.
//!
//! Deployment settings and secrets also come from the environment (`WEBHOOK_INGEST_*`), so a
//! container or a unit file sets them without a wrapper script, and a secret stays out of the
//! process list. A flag given on the command line wins over its variable. `--help` shows
//! every default; a variable's value is never shown, since some hold secrets.
//!
//! ```
//! use webhook_ingest::cli::Cli;
//!
//! let cli = Cli::try_parse_args(["webhook-ingest", "--port", "0", "--idle-timeout", "500ms"])
//!     .unwrap();
//! assert_eq!(cli.listen_addr().port(), 0);
//! assert_eq!(cli.limits().idle_timeout, std::time::Duration::from_millis(500));
//!
//! let bad = Cli::try_parse_args(["webhook-ingest", "--body-timeout", "soon"]).unwrap_err();
//! assert!(bad.to_string().contains("--body-timeout"));
//! ```

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::str::FromStr;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::Parser;

use crate::app::{Config, DEFAULT_BODY_LIMIT};
use crate::catchup;
use crate::manage::rotation;
use crate::pipeline::refusals;
use crate::serve::{self, Deadlines, Limits};
use crate::spool::{self, SpoolConfig};
use crate::store;
use crate::verify::refresh;

/// The address served when neither `--listen` nor `--port` is given: loopback only, so a
/// service started by hand is not reachable from the network until someone says so.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 3000);
/// The SQLite file used when no `--db` is given, in the working directory.
pub const DEFAULT_DB: &str = "webhook-ingest.db";

/// The webhook ingestion service.
///
/// Receives GitHub, GitLab, Bitbucket, Gitea and Forgejo push webhooks and stores their commits in SQLite or
/// PostgreSQL. Prints `listening on ADDR` as its first line on stdout; logs go to stderr.
#[derive(Debug, Parser)]
#[command(name = "webhook-ingest", version, max_term_width = 100)]
pub struct Cli {
    /// The address to serve on; `0.0.0.0:3000` serves every interface (behind a load
    /// balancer, in a container)
    #[arg(long, value_name = "ADDR", env = "WEBHOOK_INGEST_LISTEN", default_value_t = DEFAULT_LISTEN)]
    pub listen: SocketAddr,

    /// The URL providers and people reach the service by, such as
    /// `https://hooks.example.com` behind TLS or a proxy; inbox callback URLs and the first
    /// page are built from it (default: `http://` and the address bound)
    #[arg(long, value_name = "URL", env = "WEBHOOK_INGEST_PUBLIC_URL", value_parser = public_url)]
    pub public_url: Option<String>,

    /// Shorthand for `--listen 127.0.0.1:PORT`; 0 picks a free port (wins over
    /// WEBHOOK_INGEST_LISTEN, not with `--listen`)
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,

    /// The store: a SQLite file, `:memory:`, or `postgres://USER:PASSWORD@HOST:PORT/DB`
    /// (prefer the variable: a password on the command line is in the process list)
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "WEBHOOK_INGEST_DB",
        hide_env_values = true,
        default_value = DEFAULT_DB
    )]
    pub db: String,

    /// A PEM file of CA certificates trusted beside the system's roots when the database URL
    /// says `sslmode=verify-full` (`disable`, `prefer` (the default) and `require` are libpq's
    /// too)
    #[arg(long, value_name = "FILE", env = "WEBHOOK_INGEST_DB_CA")]
    pub db_ca: Option<std::path::PathBuf>,

    /// Whether a SQLite commit waits for the disk: `full` (fsync before every answer that says
    /// stored, shared by every delivery waiting) or `normal` (fsync at checkpoints only: a
    /// power cut can lose acknowledged deliveries; `/health` says so)
    #[arg(long, value_name = "MODE", env = "WEBHOOK_INGEST_SQLITE_SYNC", value_enum, default_value_t = store::SqliteSync::Full)]
    pub sqlite_sync: store::SqliteSync,

    /// The bearer token `/errors` asks for; without one `/errors` is not served (prefer the
    /// variable: a token on the command line is in the process list)
    #[arg(
        long,
        value_name = "TOKEN",
        env = "WEBHOOK_INGEST_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,

    /// The largest webhook body accepted, in bytes, at most 32 MiB; larger ones get 413
    #[arg(long, value_name = "BYTES", env = "WEBHOOK_INGEST_BODY_LIMIT", default_value_t = DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,

    /// How long an inbox's previous secret still passes after a rotation
    #[arg(long, value_name = "D", env = "WEBHOOK_INGEST_SECRET_GRACE", default_value_t = Span(rotation::DEFAULT_SECRET_GRACE))]
    pub secret_grace: Span,

    /// Where deliveries the store cannot take are kept until drained into it; each node
    /// needs its own
    #[arg(long, value_name = "DIR", env = "WEBHOOK_INGEST_SPOOL", default_value = spool::DEFAULT_SPOOL_DIR)]
    pub spool: std::path::PathBuf,

    /// The spool's bound in bytes; past it a delivery the store cannot take gets 503
    #[arg(long, value_name = "BYTES", env = "WEBHOOK_INGEST_SPOOL_MAX_BYTES", default_value_t = NonZeroU64::new(spool::DEFAULT_SPOOL_MAX_BYTES).expect("not zero"))]
    pub spool_max_bytes: NonZeroU64,

    /// The bound in bytes of deliveries to inboxes unknown here, taken unverified while the
    /// store is down; past it they get 503
    #[arg(long, value_name = "BYTES", env = "WEBHOOK_INGEST_UNVERIFIED_MAX_BYTES", default_value_t = NonZeroU64::new(spool::unverified::DEFAULT_UNVERIFIED_MAX_BYTES).expect("not zero"))]
    pub unverified_max_bytes: NonZeroU64,

    /// The largest body taken unverified; larger ones get 503 while the store is down
    #[arg(long, value_name = "BYTES", env = "WEBHOOK_INGEST_UNVERIFIED_MAX_BODY", default_value_t = spool::unverified::DEFAULT_UNVERIFIED_MAX_BODY)]
    pub unverified_max_body: usize,

    /// Refused deliveries kept for the inboxes' refusal lists per second at most, over every
    /// inbox; past it a refusal gets the same answer and is only counted
    #[arg(long, value_name = "N", env = "WEBHOOK_INGEST_REFUSALS_PER_SECOND", default_value_t = refusals::DEFAULT_REFUSALS_PER_SECOND)]
    pub refusals_per_second: u32,

    /// How often the known inboxes are read again from the store, for the changes made
    /// through other nodes
    #[arg(long, value_name = "D", env = "WEBHOOK_INGEST_INBOX_REFRESH", default_value_t = Span(refresh::DEFAULT_INBOX_REFRESH))]
    pub inbox_refresh: Span,

    /// How often catch-up asks GitHub for the failed deliveries of the inboxes given catch-up
    /// credentials, and for their redelivery (also once at start)
    #[arg(long, value_name = "D", env = "WEBHOOK_INGEST_CATCHUP_EVERY", default_value_t = Span(catchup::DEFAULT_CATCHUP_EVERY))]
    pub catchup_every: Span,

    /// The root of GitHub's REST API that catch-up asks (a GitHub Enterprise Server's is
    /// `https://HOST/api/v3`)
    #[arg(long, value_name = "URL", env = "WEBHOOK_INGEST_GITHUB_API", default_value = catchup::github::GITHUB_API, value_parser = public_url)]
    pub github_api: String,

    /// Time for a request head's arrival; also closes an idle HTTP/1 connection
    #[arg(long, value_name = "D", default_value_t = Span(serve::DEFAULT_HEADER_TIMEOUT))]
    pub header_timeout: Span,

    /// Time a connection may stay open with no request in progress
    #[arg(long, value_name = "D", default_value_t = Span(serve::DEFAULT_IDLE_TIMEOUT))]
    pub idle_timeout: Span,

    /// Time for a request body's arrival, from its head (408 past it)
    #[arg(long, value_name = "D", default_value_t = Span(serve::deadline::DEFAULT_BODY_TIMEOUT))]
    pub body_timeout: Span,

    /// Time for the answer, from the request head (503 and `Retry-After` past it)
    #[arg(long, value_name = "D", default_value_t = Span(serve::deadline::DEFAULT_REQUEST_TIMEOUT))]
    pub request_timeout: Span,

    /// Connections served at once [default: the descriptor limit − 64, at most 10000]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<NonZeroUsize>,

    /// Concurrent HTTP/2 streams per connection
    #[arg(long, value_name = "N", default_value_t = NonZeroU32::new(serve::DEFAULT_H2_MAX_STREAMS).expect("not zero"))]
    pub h2_max_streams: NonZeroU32,

    /// Interval of HTTP/2 keep-alive pings
    #[arg(long, value_name = "D", default_value_t = Span(serve::DEFAULT_H2_PING_INTERVAL))]
    pub h2_ping_interval: Span,

    /// Time for an HTTP/2 ping's acknowledgement before the connection is closed
    #[arg(long, value_name = "D", default_value_t = Span(serve::DEFAULT_H2_PING_TIMEOUT))]
    pub h2_ping_timeout: Span,

    /// Time in-flight requests get to finish after SIGTERM or Ctrl-C
    #[arg(long, value_name = "D", default_value_t = Span(serve::DEFAULT_SHUTDOWN_TIMEOUT))]
    pub shutdown_timeout: Span,

    /// Print the hex HMAC-SHA256 of stdin under the secret in `WEBHOOK_SECRET`, and exit (a
    /// signing helper for machines without openssl)
    #[arg(long)]
    pub sign: bool,
}

impl Cli {
    /// Parses the process's arguments, exiting with a message that names the flag at fault
    /// (or with `--help`'s text).
    pub fn parse_checked() -> Cli {
        Cli::try_parse_args(std::env::args_os()).unwrap_or_else(|error| error.exit())
    }

    /// Parses `args` (the program's name first) with the checks across flags: `--port` and
    /// `--listen` on one command line conflict, while `--port` overrides an address from the
    /// environment, as every flag overrides its variable.
    pub fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let mut command = Cli::command();
        let matches = command.try_get_matches_from_mut(args)?;
        let cli = Cli::from_arg_matches(&matches)?;
        let listen_given = matches.value_source("listen") == Some(ValueSource::CommandLine);
        let conflict = if cli.port.is_some() && listen_given {
            Some("--port and --listen both name the address to serve; give one".to_owned())
        } else {
            cli.check().err()
        };
        match conflict {
            Some(message) => Err(command.error(ErrorKind::ArgumentConflict, message)),
            None => Ok(cli),
        }
    }

    /// What no single flag's parser can see.
    pub fn check(&self) -> Result<(), String> {
        if self.body_timeout.0 >= self.request_timeout.0 {
            // A stalled body would get the generic 503 instead of the 408 that names it.
            return Err("--body-timeout must be shorter than --request-timeout".into());
        }
        if self.body_limit > crate::MAX_BODY_LIMIT {
            // A larger body could not be kept in the spool while the store is down.
            return Err(format!(
                "--body-limit must be at most {} bytes ({} MiB)",
                crate::MAX_BODY_LIMIT,
                crate::MAX_BODY_LIMIT >> 20
            ));
        }
        Ok(())
    }

    /// The address to bind: `--port` on loopback, else `--listen`.
    pub fn listen_addr(&self) -> SocketAddr {
        match self.port {
            Some(port) => SocketAddr::new(DEFAULT_LISTEN.ip(), port),
            None => self.listen,
        }
    }

    /// The connection limits the flags set.
    pub fn limits(&self) -> Limits {
        Limits {
            header_timeout: self.header_timeout.0,
            idle_timeout: self.idle_timeout.0,
            max_connections: self.max_connections.map_or_else(
                serve::connections::default_max_connections,
                NonZeroUsize::get,
            ),
            h2_max_streams: self.h2_max_streams.get(),
            h2_ping_interval: self.h2_ping_interval.0,
            h2_ping_timeout: self.h2_ping_timeout.0,
            shutdown_timeout: self.shutdown_timeout.0,
        }
    }

    /// The spool the flags set.
    pub fn spool_config(&self) -> SpoolConfig {
        SpoolConfig {
            max_bytes: self.spool_max_bytes.get(),
            ..SpoolConfig::new(&self.spool)
        }
    }

    /// The routes' configuration the flags set (without the spool, which is opened apart).
    pub fn config(&self) -> Config {
        Config {
            body_limit: self.body_limit,
            // An empty variable (`WEBHOOK_INGEST_ADMIN_TOKEN=`) means no token, not the empty
            // token.
            admin_token: self.admin_token.clone().filter(|t| !t.is_empty()),
            deadlines: Deadlines {
                body: self.body_timeout.0,
                request: self.request_timeout.0,
            },
            secret_grace: self.secret_grace.0,
            unverified_max_body: self.unverified_max_body,
            inbox_refresh: self.inbox_refresh.0,
            refusals_per_second: self.refusals_per_second,
            public_url: self.public_url.clone(),
            catchup: catchup::CatchUp {
                api: self.github_api.clone(),
                every: self.catchup_every.0,
                ..catchup::CatchUp::default()
            },
            ..Config::default()
        }
    }
}

/// A base URL as `--public-url` takes it: `http://` or `https://`, a host, perhaps a port
/// and a path; no query or fragment, which a callback URL cannot carry after it. A trailing
/// slash is dropped.
fn public_url(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or("must start with `http://` or `https://`")?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() || host.contains('@') {
        return Err("must name a host, and no user".into());
    }
    if rest.contains(['?', '#']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must have no query, fragment or spaces".into());
    }
    Ok(text.trim_end_matches('/').to_owned())
}

/// A positive duration as the flags write it: `250ms`, `5s`, `10m`, `24h`, or plain seconds
/// (`1.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span(pub Duration);

impl FromStr for Span {
    type Err = String;

    fn from_str(text: &str) -> Result<Span, String> {
        let (number, scale) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
            .into_iter()
            .find_map(|(unit, scale)| Some((text.strip_suffix(unit)?, scale)))
            .unwrap_or((text, 1.0));
        number
            .parse::<f64>()
            .ok()
            .and_then(|n| Duration::try_from_secs_f64(n * scale).ok())
            .filter(|d| !d.is_zero())
            .map(Span)
            .ok_or_else(|| "give a positive duration such as 500ms, 5s, 10m or 24h".into())
    }
}

impl fmt::Display for Span {
    /// The largest unit that writes it whole, so `--help` shows `24h` rather than `86400s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.as_millis();
        match millis {
            m if m % 3_600_000 == 0 => write!(f, "{}h", m / 3_600_000),
            m if m % 60_000 == 0 && m >= 60_000 * 10 => write!(f, "{}m", m / 60_000),
            m if m % 1000 == 0 => write!(f, "{}s", m / 1000),
            m => write!(f, "{m}ms"),
        }
    }
}

#[cfg(test)]
mod tests;
