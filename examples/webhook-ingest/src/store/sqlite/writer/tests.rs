use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::*;

type Log = Arc<Mutex<Vec<String>>>;

/// The answer of the job of `key`, logged: stored when its work (`done`) and the commit both
/// went through.
fn logged_reply<T: Send + 'static>(key: i64, done: rusqlite::Result<T>, log: &Log) -> Reply {
    let log = Arc::clone(log);
    Box::new(move |commit| {
        let answer = match (&done, commit) {
            (Ok(_), Ok(())) => "stored",
            _ => "failed",
        };
        log.lock().unwrap().push(format!("answered {key} {answer}"));
    })
}

/// A job inserting `key` into `t` (whose key is unique); it logs when it runs and when it
/// is answered, and panics after its insert when asked to.
fn insert(key: i64, panics: bool, log: &Log) -> Job {
    let log = Arc::clone(log);
    Box::new(move |c| {
        log.lock().unwrap().push(format!("ran {key}"));
        let done = c.execute("INSERT INTO t (k) VALUES (?1)", [key]);
        assert!(!panics, "job {key} panics after its insert");
        (done.is_ok(), logged_reply(key, done, &log))
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
    run(Arc::new(Writer::new(connection, None, None)), queue);
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

/// A job that inserts `key` and then fails, on a second insert of it, or panics: its first
/// insert is in the transaction until something rolls it back.
fn inserts_then_fails(key: i64, panics: bool, log: &Log) -> Job {
    let log = Arc::clone(log);
    Box::new(move |c| {
        log.lock().unwrap().push(format!("ran {key}"));
        c.execute("INSERT INTO t (k) VALUES (?1)", [key]).unwrap();
        assert!(!panics, "job {key} panics after its insert");
        let done = c.execute("INSERT INTO t (k) VALUES (?1)", [key]);
        (done.is_ok(), logged_reply(key, done, &log))
    })
}

/// The first job of a batch runs without a savepoint of its own: when it fails or panics
/// after writing, the whole transaction is rolled back, which holds nothing of another job,
/// and the jobs behind it commit in a fresh one. Alone in its batch (one connection), the
/// same: nothing of it is kept.
#[test]
fn a_first_job_that_fails_after_writing_leaves_nothing() {
    for panics in [false, true] {
        let (path, connection) = table_of_keys(&format!("first-{panics}"));
        let log: Log = Arc::default();
        let (jobs, queue) = mpsc::sync_channel(8);
        jobs.send(inserts_then_fails(7, panics, &log)).unwrap();
        jobs.send(insert(1, false, &log)).unwrap();
        jobs.send(inserts_then_fails(8, false, &log)).unwrap();
        jobs.send(insert(3, false, &log)).unwrap();
        drop(jobs);
        run(Arc::new(Writer::new(connection, None, None)), queue);
        let mut expected = vec!["ran 7", "answered 7 failed"];
        if panics {
            expected.pop();
        }
        expected.extend(["ran 1", "ran 8", "ran 3", "answered 1 stored"]);
        expected.extend(["answered 8 failed", "answered 3 stored"]);
        assert_eq!(*log.lock().unwrap(), expected, "panics: {panics}");
        assert_eq!(keys(&path), [1, 3], "panics: {panics}");
        let _ = std::fs::remove_file(&path);

        let (path, connection) = table_of_keys(&format!("lone-{panics}"));
        let writer = Writer::new(connection, None, None);
        let connection = writer.connection.lock().unwrap();
        let batch = commit_batch(&connection, vec![inserts_then_fails(9, panics, &log)]);
        drop(connection);
        batch.answer(Ok(()));
        assert!(keys(&path).is_empty(), "panics: {panics}");
        let _ = std::fs::remove_file(&path);
    }
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
        (kept, logged_reply(key, done, &log))
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
            std::thread::spawn(move || run(Arc::new(Writer::new(connection, None, None)), queue));
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

/// A WAL of this many frames, in bytes: its header, and each frame's header and page.
fn wal_bytes(frames: c_int) -> u64 {
    const WAL_HEADER: u64 = 32;
    const FRAME: u64 = 24 + 4096;
    WAL_HEADER + frames as u64 * FRAME
}

/// A writer on a WAL database at a file named after `test`, its hook installed as the store
/// installs it, and a checkpointer that never runs: it has fallen behind for good. Returns
/// the file's path, the writer and the checkpointer's requests, left unread.
fn behind_a_stalled_checkpointer(test: &str) -> (std::path::PathBuf, Arc<Writer>, Receiver<()>) {
    let (path, connection) = table_of_keys(test);
    connection
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE blobs (k INTEGER PRIMARY KEY, v BLOB)",
        )
        .unwrap();
    connection.wal_hook(Some(checkpoint_hook));
    let (checkpointer, requests) = Checkpointer::new();
    let writer = Arc::new(Writer::new(connection, None, Some(checkpointer)));
    (path, writer, requests)
}

/// A job adding a row of 20 KB: about seven pages of its own in the WAL.
fn blob(key: c_int) -> Job {
    answered_blob(key, mpsc::channel().0)
}

/// [`blob`], which says on `answered` when it is answered.
fn answered_blob(key: c_int, answered: mpsc::Sender<()>) -> Job {
    Box::new(move |c| {
        let done = c.execute(
            "INSERT INTO blobs (k, v) VALUES (?1, zeroblob(20000))",
            [key],
        );
        (
            done.is_ok(),
            Box::new(move |_| {
                let _ = answered.send(());
            }),
        )
    })
}

/// The WAL's bound holds when the checkpointer cannot keep up: past `WAL_LIMIT_FRAMES` the
/// writer's own commit checkpoints, and the WAL is written again from its start. Three
/// limits' worth of pages are committed; the WAL file, which never shrinks, shows the most
/// it ever held.
#[test]
fn the_wal_stays_within_its_limit_when_the_checkpointer_falls_behind() {
    let (path, writer, requests) = behind_a_stalled_checkpointer("wal-limit");
    let (jobs, queue) = mpsc::sync_channel(1);
    // The writer's connection stays open: the last one to close would remove the WAL.
    let thread = std::thread::spawn({
        let writer = Arc::clone(&writer);
        move || run(writer, queue)
    });
    // One job per batch: each is sent once the one before was answered.
    let (answered, answers) = mpsc::channel();
    for key in 0..3 * WAL_LIMIT_FRAMES / 7 {
        jobs.send(answered_blob(key, answered.clone())).unwrap();
        answers.recv().unwrap();
    }
    drop(jobs);
    thread.join().unwrap();
    assert!(requests.try_recv().is_ok(), "no checkpoint was asked for");
    let wal = std::fs::metadata(format!("{}-wal", path.display()))
        .unwrap()
        .len();
    // One batch past the limit at most: here a job's pages, and the table's b-tree's.
    let bound = wal_bytes(WAL_LIMIT_FRAMES + 10);
    assert!(wal > wal_bytes(WAL_LIMIT_FRAMES / 2), "{wal} bytes of WAL");
    assert!(wal <= bound, "{wal} bytes of WAL, bound {bound}");
    let rows: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM blobs", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, i64::from(3 * WAL_LIMIT_FRAMES / 7));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Commits run in place, one after the other as deliveries that come one at a time, keep
/// the WAL within one checkpoint's worth of frames even when the checkpointer's thread never
/// runs: the commit that is due for a checkpoint runs it, and the next one reuses the WAL.
/// Only that one: below the threshold the rows stay in the WAL, and the checkpointer's
/// thread is never asked for what was done in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_in_place_checkpoint_the_wal_themselves_and_reuse_it() {
    let (path, writer, requests) = behind_a_stalled_checkpointer("in-place-reuse");
    let database = || std::fs::metadata(&path).unwrap().len();
    let before = database();
    let below_threshold = checkpointer::CHECKPOINT_FRAMES / 7 - 5;
    for key in 0..below_threshold {
        assert!(writer.try_in_place(blob(key)).is_ok(), "job {key} queued");
    }
    assert_eq!(database(), before, "a checkpoint ran below the threshold");
    for key in below_threshold..3 * WAL_LIMIT_FRAMES / 7 {
        assert!(writer.try_in_place(blob(key)).is_ok(), "job {key} queued");
    }
    assert!(database() > before, "no checkpoint ran");
    assert!(requests.try_recv().is_err(), "the checkpointer was asked");
    let wal = std::fs::metadata(format!("{}-wal", path.display()))
        .unwrap()
        .len();
    let bound = wal_bytes(checkpointer::CHECKPOINT_FRAMES + 10);
    assert!(wal <= bound, "{wal} bytes of WAL, bound {bound}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Past the limit a commit run in place leaves the checkpoint to the writer thread, whose
/// commit runs it: a tokio worker never blocks for one. A reader holding its snapshot keeps
/// the checkpoints in place from copying anything, so that the WAL reaches the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_a_commit_in_place_leaves_the_checkpoint_to_the_writer_thread() {
    let (path, writer, _requests) = behind_a_stalled_checkpointer("in-place-limit");
    let reader = Connection::open(&path).unwrap();
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM blobs;")
        .unwrap();
    let mut key = 0;
    while writer.try_in_place(blob(key)).is_ok() {
        key += 1;
        assert!(key < WAL_LIMIT_FRAMES, "every commit ran in place");
    }
    assert!(key >= WAL_LIMIT_FRAMES / 8, "in place until {key}");
    reader.execute_batch("COMMIT").unwrap();
    let database = || std::fs::metadata(&path).unwrap().len();
    let before = database();
    let (jobs, queue) = mpsc::sync_channel(1);
    let thread = std::thread::spawn({
        let writer = Arc::clone(&writer);
        move || run(writer, queue)
    });
    jobs.send(blob(key)).unwrap();
    drop(jobs);
    thread.join().unwrap();
    // The rows reached the database file: that commit checkpointed.
    assert!(
        database() > before + u64::try_from(key).unwrap() * 20_000,
        "{} bytes for {key} rows",
        database()
    );
    assert!(writer.try_in_place(blob(key + 1)).is_ok());
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Commits, past the WAL's limit, behind a stalled checkpointer, and fsyncs the WAL itself:
/// single jobs until a commit checkpoints.
fn commit_fsync_and_checkpoint() {
    let (path, writer, _requests) = behind_a_stalled_checkpointer("trace");
    let wal = std::fs::File::open(format!("{}-wal", path.display())).unwrap();
    let (syncer, _committed) = mpsc::channel();
    let writer = Arc::new(Writer {
        durability: Some(Durability { wal, syncer }),
        ..Arc::into_inner(writer).unwrap()
    });
    let (jobs, queue) = mpsc::sync_channel(WAL_LIMIT_FRAMES as usize);
    for key in 0..WAL_LIMIT_FRAMES / 5 {
        jobs.send(blob(key)).unwrap();
    }
    drop(jobs);
    run(Arc::clone(&writer), queue);
    drop(writer);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The trace's own test process: the interest of `tracing`'s callsites is cached process-wide,
/// so a subscriber set while other tests run writes may miss their events. Run by
/// [`the_trace_logs_commits_fsyncs_and_checkpoints_only_when_on`], alone in a process of its
/// own, under the filter in `TRACE_TEST_FILTER`, logging to stderr.
#[test]
#[ignore = "run by the_trace_logs_commits_fsyncs_and_checkpoints_only_when_on"]
fn trace_test_process() {
    let filter = std::env::var("TRACE_TEST_FILTER").unwrap();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    commit_fsync_and_checkpoint();
}

/// The store's trace lines logged by [`trace_test_process`] under the log filter `filter`.
fn traced(filter: &str) -> Vec<String> {
    let ran = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::sqlite::writer::tests::trace_test_process",
        ])
        .args(["--ignored", "--nocapture", "--test-threads", "1"])
        .env("TRACE_TEST_FILTER", filter)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success() && stdout.contains("1 passed"),
        "{stdout}"
    );
    String::from_utf8_lossy(&ran.stderr)
        .lines()
        .filter_map(|line| {
            line.split_once(" store_trace: ")
                .map(|(_, event)| event.to_owned())
        })
        .collect()
}

/// With `store_trace` at TRACE the writer logs its commits (jobs, duration, the WAL's length),
/// its fsyncs and the checkpoint a commit ran; at the service's default level, nothing.
#[test]
fn the_trace_logs_commits_fsyncs_and_checkpoints_only_when_on() {
    let lines = traced("info,store_trace=trace");
    let field = |line: &str, name: &str| -> Option<i64> {
        let start = line.find(&format!(" {name}="))? + name.len() + 2;
        line[start..].split(' ').next()?.parse().ok()
    };
    let commits: Vec<_> = lines.iter().filter(|l| l.starts_with("commit ")).collect();
    assert!(!commits.is_empty(), "{lines:?}");
    let jobs: i64 = commits.iter().filter_map(|l| field(l, "jobs")).sum();
    assert_eq!(jobs, i64::from(WAL_LIMIT_FRAMES / 5), "{commits:?}");
    assert!(commits.iter().all(|l| l.contains(r#"by="writer""#)));
    assert!(commits
        .iter()
        .any(|l| field(l, "wal_frames") >= Some(WAL_LIMIT_FRAMES.into())));
    assert!(commits
        .iter()
        .all(|l| field(l, "at_us") > Some(1_700_000_000_000_000)));
    assert!(commits.iter().all(|l| field(l, "commit_us").is_some()));
    let fsynced: i64 = lines
        .iter()
        .filter(|l| l.starts_with("fsync "))
        .filter_map(|l| field(l, "jobs"))
        .sum();
    assert!(
        fsynced > 0 && fsynced <= jobs,
        "{fsynced} of {jobs} jobs fsynced"
    );
    let checkpoints: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("checkpoint "))
        .collect();
    assert!(!checkpoints.is_empty(), "{lines:?}");
    assert!(checkpoints
        .iter()
        .all(|l| field(l, "frames") >= Some(WAL_LIMIT_FRAMES.into())));
    assert!(checkpoints
        .iter()
        .all(|l| field(l, "checkpoint_us").is_some()));

    assert_eq!(traced("info"), Vec::<String>::new());
}
