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

use std::process::ExitCode;

use webhook_ingest::cli::Cli;

/// mimalloc rather than the system allocator: a delivery makes a couple of hundred small
/// allocations (the push's JSON, the HTTP head, the rows), and glibc's took 15% of the
/// service's CPU under load, against a few per cent here (`BENCHMARKS.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The node the flags describe, as they describe it (`webhook_ingest::node`).
fn main() -> ExitCode {
    webhook_ingest::node::run(Cli::parse_checked(), |_| {})
}
