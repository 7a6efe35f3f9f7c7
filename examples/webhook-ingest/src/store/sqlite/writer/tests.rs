use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::*;

type Log = Arc<Mutex<Vec<String>>>;

/// A job inserting `key` into `t` (whose key is unique); it logs when it runs and when it
/// is answered, and panics after its insert when asked to.
fn insert(key: i64, panics: bool, log: &Log) -> Job {
    let log = Arc::clone(log);
    Box::new(move |c| {
        log.lock().unwrap().push(format!("ran {key}"));
        let done = c.execute("INSERT INTO t (k) VALUES (?1)", [key]);
        assert!(!panics, "job {key} panics after its insert");
        let kept = done.is_ok();
        let reply: Reply = Box::new(move |commit| {
            let answer = match (&done, commit) {
                (Ok(_), Ok(())) => "stored",
                _ => "failed",
            };
            log.lock().unwrap().push(format!("answered {key} {answer}"));
        });
        (kept, reply)
    })
}

/// Four jobs waiting together are one transaction: each runs before any is answered; the
/// one that breaks the unique key and the one that panics roll back alone (the panicking
/// one gets no answer: its request is told the store failed), and the others' rows are
/// committed.
#[test]
fn a_batch_commits_once_and_a_failing_job_rolls_back_alone() {
    let (path, connection) = table_of_keys("batch");
    let log: Log = Arc::default();
    let (jobs, queue) = mpsc::sync_channel(8);
    for (key, panics) in [(1, false), (1, false), (2, true), (3, false)] {
        jobs.send(insert(key, panics, &log)).unwrap();
    }
    drop(jobs);
    run(Arc::new(Writer::new(connection, None)), queue);
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "ran 1",
            "ran 1",
            "ran 2",
            "ran 3",
            "answered 1 stored",
            "answered 1 failed",
            "answered 3 stored",
        ]
    );
    assert_eq!(keys(&path), [1, 3]);
    let _ = std::fs::remove_file(&path);
}

/// A job that ends the writer's savepoint itself after its insert, so that the writer's
/// own end of it (`RELEASE job`, or `ROLLBACK TO job; RELEASE job` when `kept` is false)
/// fails with "no such savepoint".
fn ends_its_savepoint(key: i64, kept: bool, log: &Log) -> Job {
    let log = Arc::clone(log);
    Box::new(move |c| {
        log.lock().unwrap().push(format!("ran {key}"));
        let done = c
            .execute("INSERT INTO t (k) VALUES (?1)", [key])
            .and_then(|_| c.execute_batch("RELEASE job"));
        let reply: Reply = Box::new(move |commit| {
            let answer = match (&done, commit) {
                (Ok(()), Ok(())) => "stored",
                _ => "failed",
            };
            log.lock().unwrap().push(format!("answered {key} {answer}"));
        });
        (kept, reply)
    })
}

/// A fresh database file named after `test`, holding the table of keys the jobs insert.
fn table_of_keys(test: &str) -> (std::path::PathBuf, Connection) {
    let path = std::env::temp_dir().join(format!(
        "faultline-{test}-{}-{:?}.db",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let connection = Connection::open(&path).unwrap();
    connection
        .execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        .unwrap();
    (path, connection)
}

/// The keys committed to the table at `path`, in order.
fn keys(path: &std::path::Path) -> Vec<i64> {
    Connection::open(path)
        .unwrap()
        .prepare("SELECT k FROM t ORDER BY k")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A savepoint the writer cannot end takes its whole transaction with it: every job of
/// the batch up to it is answered "failed" and none of their rows is committed, whether
/// the job asked to be kept (`RELEASE job` fails) or rolled back (`ROLLBACK TO job`
/// fails). The jobs queued behind it in the same round go into a fresh transaction, and a
/// batch sent once the broken one was answered commits as usual.
#[test]
fn a_savepoint_that_cannot_be_ended_fails_its_whole_batch() {
    for kept in [true, false] {
        let (path, connection) = table_of_keys(&format!("savepoint-{kept}"));
        let log: Log = Arc::default();
        let (jobs, queue) = mpsc::sync_channel(8);
        jobs.send(insert(1, false, &log)).unwrap();
        jobs.send(insert(2, false, &log)).unwrap();
        jobs.send(ends_its_savepoint(3, kept, &log)).unwrap();
        jobs.send(insert(4, false, &log)).unwrap();
        let writer =
            std::thread::spawn(move || run(Arc::new(Writer::new(connection, None)), queue));
        let answered = |n: usize| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while log.lock().unwrap().len() < n {
                assert!(std::time::Instant::now() < deadline, "no answers: {log:?}");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        answered(8);
        jobs.send(insert(5, false, &log)).unwrap();
        drop(jobs);
        writer.join().unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                "ran 1",
                "ran 2",
                "ran 3",
                "answered 1 failed",
                "answered 2 failed",
                "answered 3 failed",
                "ran 4",
                "answered 4 stored",
                "ran 5",
                "answered 5 stored",
            ],
            "kept: {kept}"
        );
        assert_eq!(keys(&path), [4, 5], "kept: {kept}");
        let _ = std::fs::remove_file(&path);
    }
}
