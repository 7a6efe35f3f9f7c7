//! What the service's integration tests share: a service on a real TCP port ([`server`]),
//! its setup and the pushes each provider sends ([`fixtures`]), deliveries signed as each
//! provider signs them ([`requests`]), the refusals they must get ([`refusals`]), a spooled
//! service watched through `/health` ([`spooled`]), and the service's binary started for its
//! first line ([`binary`]).
#![allow(dead_code, unused_imports)] // each test crate uses its own part

mod binary;
mod fixtures;
mod outage;
mod refusals;
mod requests;
mod server;
mod spooled;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

pub use binary::*;
pub use fixtures::*;
pub use outage::*;
pub use refusals::*;
pub use requests::*;
pub use server::*;
pub use spooled::*;

/// The webhook body limit the test service runs with, small so a 413 costs nothing.
pub const TEST_BODY_LIMIT: usize = 16 * 1024;
/// The bearer token `/errors` asks for in the tests.
pub const ADMIN_TOKEN: &str = "admin-token-for-tests";
/// Copies of one delivery sent at the same moment.
pub const CONCURRENT_COPIES: usize = 20;

/// The environment variable that names a PostgreSQL database for the tests that need one:
/// `load-scripts/fleet/pg-fleet.sh` starts a throwaway server and runs them with it set.
pub const TEST_POSTGRES_ENV: &str = "WEBHOOK_INGEST_TEST_POSTGRES";

/// The PostgreSQL URL the tests may use, or `None`, said on stderr, when none was given.
pub fn test_postgres(test: &str) -> Option<String> {
    let url = std::env::var(TEST_POSTGRES_ENV)
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        eprintln!(
            "{test}: not run, no {TEST_POSTGRES_ENV} (load-scripts/fleet/pg-fleet.sh runs it)"
        );
    }
    url
}

/// A fresh path in the temporary directory, unique to this process and moment.
pub fn temp_path(name: &str, extension: &str) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!(
        "faultline-test-{name}-{}-{nanos}.{extension}",
        std::process::id()
    ))
}
