//! `promtool check metrics`, found on `PATH` as the test database is found in the
//! environment: skipped with a line on stderr without it, a failure without it when
//! [`REQUIRE_TOOLS_ENV`] is set.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::REQUIRE_TOOLS_ENV;

/// The `promtool` on `PATH`, or `None`, said on stderr as `skipped: …`, when there is none;
/// a panic instead when [`REQUIRE_TOOLS_ENV`] is set.
pub fn promtool(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("promtool"))
            .find(|candidate| is_executable(candidate))
    });
    if found.is_none() {
        let required = std::env::var(REQUIRE_TOOLS_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(
            !required,
            "{test}: promtool not found on PATH and {REQUIRE_TOOLS_ENV} is set: install the \
             Debian package `prometheus` (.ci/setup does)"
        );
        // Written to stderr itself rather than through `eprintln!`, which the test harness
        // captures and shows only for a failed test: a skip must be seen in a passing run.
        let line = format!("{test}: skipped: promtool not found (Debian package `prometheus`)\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    found
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Fails unless `promtool check metrics` accepts `exposition` as Prometheus text; skipped
/// without promtool as [`promtool`] says.
pub fn promtool_check_metrics(test: &str, exposition: &str) {
    let Some(promtool) = promtool(test) else {
        return;
    };
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(exposition.as_bytes()).unwrap();
    drop(stdin);
    let checked = child.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "{test}: promtool check metrics: {}{}\n{exposition}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}
