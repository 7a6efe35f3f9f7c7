//! The database password in a `--db` URL reaches no output of the service, even when the
//! database cannot be reached at start-up: the service starts, says why the store is down,
//! and retries in the background.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_webhook-ingest"))
        .args(["--port", "0", "--db", &url, "--spool"])
        .arg(&spool)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .expect(&first)
        .to_owned();
    std::thread::sleep(RETRYING_FOR);
    let health = get(&addr, "/health");
    // SIGTERM: a graceful shutdown, which flushes the log.
    Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&spool);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
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
