//! The database password in a `--db` URL reaches no output of the service, even when the
//! database cannot be reached at start-up and the service says why it stops.

use std::process::Command;

/// A password no other text of the output could contain by chance.
const PASSWORD: &str = "pw-d41d8cd98f00b204";

#[test]
fn an_unreachable_postgres_is_reported_without_its_password() {
    // A port on which nothing listens: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://ingest:{PASSWORD}@127.0.0.1:{port}/hooks");
    let output = Command::new(env!("CARGO_BIN_EXE_webhook-ingest"))
        .args(["--port", "0", "--db", &url])
        .env("RUST_LOG", "trace")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("postgres://ingest:***@127.0.0.1:{port}/hooks")),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    assert!(!stdout.contains(PASSWORD), "{stdout}");
}
