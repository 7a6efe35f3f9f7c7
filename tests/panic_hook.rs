//! The panic hook, seen from outside the process: with `RUST_BACKTRACE=1`, a burst of panics
//! caught by the layer writes nothing to stderr and each is reported once with its location,
//! while a panic elsewhere still reaches the previous hook.

mod common;

use std::process::Command;

use common::Lab;

const CHILD_ENV: &str = "FAULTLINE_PANIC_HOOK_CHILD";
const PANICS: usize = 200;
const OUTSIDE: &str = "a panic outside the layer";

#[test]
fn caught_panics_stay_off_stderr_and_others_reach_the_previous_hook() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");

    // The only thing on stderr is the panic outside the layer, passed to std's hook.
    assert_eq!(stderr.matches(OUTSIDE).count(), 1, "stderr:\n{stderr}");
    assert!(
        !stderr.contains("secret"),
        "a caught panic reached stderr:\n{stderr}"
    );
    let before_outside = &stderr[..stderr.find("thread '").unwrap_or(0)];
    assert_eq!(
        before_outside.trim(),
        "",
        "stderr before the outside panic:\n{stderr}"
    );

    // Each caught panic is accounted for once: written in full with the handler's file and
    // line, or held back by flood control and counted.
    let reports: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains("fault.outcome=\"panicked\""))
        .collect();
    assert_eq!(
        reports.len() as u32,
        faultline::limits::DEFAULT_REPORTS_PER_WINDOW,
        "stdout:\n{stdout}"
    );
    assert!(reports
        .iter()
        .all(|line| line.contains("failure-lab/src/lib.rs") && line.contains("code.lineno=")));
    let expected = format!(
        "accounted reported={} suppressed={}",
        faultline::limits::DEFAULT_REPORTS_PER_WINDOW,
        PANICS as u32 - faultline::limits::DEFAULT_REPORTS_PER_WINDOW
    );
    assert!(stdout.contains(&expected), "stdout:\n{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run in a child process by caught_panics_stay_off_stderr_and_others_reach_the_previous_hook"]
async fn child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stdout)
        .with_ansi(false)
        .init();
    let lab = Lab::start().await;
    let client = reqwest::Client::new();
    let burst = (0..PANICS).map(|_| {
        let (client, url) = (client.clone(), lab.url("/panic"));
        tokio::spawn(async move { client.get(url).send().await.unwrap().status() })
    });
    for status in futures::future::join_all(burst).await {
        assert_eq!(status.unwrap(), 500);
    }
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.panicked, PANICS as u64);
    println!(
        "accounted reported={} suppressed={}",
        snapshot.reported, snapshot.suppressed
    );
    let outside = std::thread::spawn(|| panic!("{OUTSIDE}")).join();
    assert!(outside.is_err());
}
