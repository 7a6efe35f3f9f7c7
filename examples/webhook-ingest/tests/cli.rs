//! The binary's command line as an operator meets it: settings from the environment, a bad
//! flag named in its error, and `--help` showing the defaults.

mod common;

use common::{binary, Running};

#[test]
fn the_listen_address_comes_from_the_environment_and_is_the_first_line() {
    let mut command = binary();
    command
        .args(["--db", ":memory:"])
        .env("WEBHOOK_INGEST_LISTEN", "127.0.0.1:0");
    let addr: std::net::SocketAddr = Running::start(command).addr().parse().unwrap();
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_ne!(addr.port(), 0);
}

/// A flag wins over its variable: `--port` serves loopback even when the environment names
/// another address.
#[test]
fn port_on_the_command_line_wins_over_the_environments_address() {
    let mut command = binary();
    command
        .args(["--port", "0", "--db", ":memory:"])
        .env("WEBHOOK_INGEST_LISTEN", "0.0.0.0:1");
    let first = Running::start(command).first_line.clone();
    assert!(first.starts_with("listening on 127.0.0.1:"), "{first}");
}

#[test]
fn a_bad_flag_stops_the_service_with_the_flag_named() {
    for (args, flag) in [
        (&["--idle-timeout", "forever"][..], "--idle-timeout"),
        (&["--listen", "3000"][..], "--listen"),
        (
            &["--port", "0", "--request-timeout", "1s"][..],
            "--body-timeout",
        ),
    ] {
        let output = binary().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

#[test]
fn help_shows_every_default_and_hides_secret_values() {
    let output = binary()
        .arg("--help")
        .env("WEBHOOK_INGEST_ADMIN_TOKEN", "token-never-shown")
        .env("WEBHOOK_INGEST_DB", "postgres://u:pw-never-shown@db/hooks")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for shown in [
        "[default: 127.0.0.1:3000]",
        "[default: webhook-ingest.db]",
        "[default: 26214400]",
        "[default: 60s]",
        "[default: 8s]",
        "[default: 100]",
        "[default: 24h]",
        // Catch-up's period: a push lost in an outage back within five minutes.
        "[default: 300s]",
        "WEBHOOK_INGEST_SECRET_GRACE",
        "WEBHOOK_INGEST_DB_CA",
        "WEBHOOK_INGEST_LISTEN",
        "WEBHOOK_INGEST_DB",
        "WEBHOOK_INGEST_ADMIN_TOKEN",
    ] {
        assert!(help.contains(shown), "{shown} not in {help}");
    }
    assert!(!help.contains("never-shown"), "{help}");
}

/// `--sign` prints the hex HMAC-SHA256 of stdin under `WEBHOOK_SECRET` (RFC 4231's second
/// test case: key "Jefe"), and without the variable fails, naming it, with nothing printed.
#[test]
fn sign_prints_the_hmac_of_stdin_under_the_secret_from_the_environment() {
    use std::io::Write;
    use std::process::Stdio;
    let sign = |secret: Option<&str>| {
        let mut command = binary();
        command
            .arg("--sign")
            .env_remove("WEBHOOK_SECRET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(secret) = secret {
            command.env("WEBHOOK_SECRET", secret);
        }
        let mut child = command.spawn().unwrap();
        // Refused, the binary may exit before it reads stdin: the write's broken pipe is its
        // answer, not the test's failure; what it printed and its status are.
        let mut stdin = child.stdin.take().unwrap();
        let written = stdin.write_all(b"what do ya want for nothing?");
        drop(stdin);
        if secret.is_some() {
            written.unwrap();
        }
        child.wait_with_output().unwrap()
    };
    let signed = sign(Some("Jefe"));
    assert!(signed.status.success(), "{signed:?}");
    assert_eq!(
        String::from_utf8_lossy(&signed.stdout),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843\n"
    );
    let refused = sign(None);
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("WEBHOOK_SECRET"),
        "{refused:?}"
    );
}
