//! What the service's integration tests share: a service on a real TCP port ([`server`]),
//! its setup and the pushes each provider sends ([`fixtures`]), deliveries signed as each
//! provider signs them ([`requests`]), the refusals they must get ([`refusals`]), a spooled
//! service watched through `/health` ([`spooled`]), the service's binary started for its
//! first line ([`binary`]), what a test's thread logs ([`logs`]), catch-up's planted bugs
//! ([`plants`]), and `promtool check metrics` ([`promtool`]).
#![allow(dead_code, unused_imports)] // each test crate uses its own part

mod binary;
pub mod catchup;
mod fixtures;
mod github;
mod gitlab;
mod logs;
mod outage;
pub mod plants;
mod refusals;
mod requests;
mod server;
mod spooled;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

pub use binary::*;
pub use fixtures::*;
pub use github::*;
pub use gitlab::*;
pub use logs::*;
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
/// `.ci/run test` and `load-scripts/fleet/pg-fleet.sh` start a throwaway server and set it.
pub const TEST_POSTGRES_ENV: &str = "WEBHOOK_INGEST_TEST_POSTGRES";

/// The library's tests' outside programs, found on `PATH` or skipped, shared rather than
/// written again: `promtool_check_metrics`, and `REQUIRE_TOOLS_ENV` (set by `.ci/run`: a
/// test whose outside service or program is missing then fails instead of being skipped).
#[path = "../../../../tests/common/tools.rs"]
mod tools;

pub use tools::{promtool_check_metrics, tools_required, REQUIRE_TOOLS_ENV};

/// The PostgreSQL URL the tests may use, or `None`, said on stderr as `skipped: …`, when none
/// was given; a panic instead when [`REQUIRE_TOOLS_ENV`] is set.
pub fn test_postgres(test: &str) -> Option<String> {
    let url = std::env::var(TEST_POSTGRES_ENV)
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        assert!(
            !tools_required(),
            "{test}: {TEST_POSTGRES_ENV} not set and {REQUIRE_TOOLS_ENV} is set: \
             start a PostgreSQL (.ci/run test does) and name its database there"
        );
        // Written to stderr itself rather than through `eprintln!`, which the test harness
        // captures and shows only for a failed test: a skip must be seen in a passing run.
        // One write, so that lines of tests running beside it do not cut into it.
        let line = format!(
            "{test}: skipped: PostgreSQL not found, no {TEST_POSTGRES_ENV} \
             (.ci/run test and load-scripts/fleet/pg-fleet.sh set it)\n"
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
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
