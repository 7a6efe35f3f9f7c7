//! Outside programs a test runs (promtool, …): found on `PATH`, or the check that needs one
//! is skipped with a line on stderr, so that `cargo test --workspace` passes on a machine with
//! only Rust. CI sets [`REQUIRE_TOOLS_ENV`], and there a missing program fails the test
//! instead, so nothing is skipped unseen.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Set (to anything but empty or `0`) by `.ci/run`: a missing program is then a failure.
pub const REQUIRE_TOOLS_ENV: &str = "FAULTLINE_REQUIRE_TOOLS";

/// Whether [`REQUIRE_TOOLS_ENV`] asks for every outside program.
pub fn tools_required() -> bool {
    std::env::var(REQUIRE_TOOLS_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The executable `name` on `PATH`; `None`, said on stderr as `skipped: NAME not found`, when
/// there is none; a panic naming `package` when there is none and [`tools_required`].
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    });
    if found.is_none() {
        assert!(
            !tools_required(),
            "{name} not found on PATH and {REQUIRE_TOOLS_ENV} is set: install {package} \
             (.ci/setup does)"
        );
        // Written to stderr itself rather than through `eprintln!`, which the test harness
        // captures and shows only for a failed test: a skip must be seen in a passing run.
        // One write, so that lines of tests running beside it do not cut into it.
        let line = format!(
            "skipped: {name} not found (install {package}; {REQUIRE_TOOLS_ENV}=1 makes this a failure)\n"
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    found
}

#[cfg(unix)]
fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &std::path::Path) -> bool {
    path.is_file()
}

/// Fails unless `promtool check metrics` accepts `exposition` as Prometheus text; skipped
/// without promtool unless CI asks for it ([`tool`]).
pub fn promtool_check_metrics(exposition: &str) {
    let Some(promtool) = tool("promtool", "Debian package `prometheus`") else {
        return;
    };
    let mut promtool = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{exposition}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}
