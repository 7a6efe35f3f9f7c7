//! The database password in a `--db` URL reaches no output of the service, even when the
//! database cannot be reached at start-up: the service starts, says why the store is down,
//! and retries in the background.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{binary, Running};

/// A password no other text of the output could contain by chance.
const PASSWORD: &str = "pw-d41d8cd98f00b204";
/// Long enough for a few connection attempts, each refused at once.
const RETRYING_FOR: Duration = Duration::from_millis(1500);

#[test]
fn an_unreachable_postgres_is_reported_without_its_password() {
    // A port on which nothing listens: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://ingest:{PASSWORD}@127.0.0.1:{port}/hooks");
    let spool = std::env::temp_dir().join(format!("faultline-secrets-{}", std::process::id()));
    let mut command = binary();
    command
        .args(["--port", "0", "--db", &url, "--spool"])
        .arg(&spool)
        .env("RUST_LOG", "trace");
    let running = Running::start(command);
    let first = running.first_line.clone();
    std::thread::sleep(RETRYING_FOR);
    let health = get(&running.addr(), "/health");
    let stopped = running.terminate();
    let _ = std::fs::remove_dir_all(&spool);
    let (rest, stderr) = (stopped.stdout, stopped.stderr);
    assert!(health.contains(r#""store":"down""#), "{health}");
    assert!(
        stderr.contains(&format!("postgres://ingest:***@127.0.0.1:{port}/hooks")),
        "{stderr}"
    );
    assert!(
        stderr.contains("opening the store failed; retrying"),
        "{stderr}"
    );
    for text in [&stderr[..], &first, &rest, &health] {
        assert!(!text.contains(PASSWORD), "{text}");
    }
}

/// The whole answer to `GET path`, head and body.
fn get(addr: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}
