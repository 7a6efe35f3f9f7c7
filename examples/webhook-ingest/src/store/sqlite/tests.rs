//! The SQLite store against databases of its earlier versions.

use super::instances::STATS;
use super::schema::SCHEMA_V1;
use super::*;
use crate::ids::{DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::{Commit, Deliveries, InboxRow, Inboxes, Ingested, Instances, NewInbox, Stats};

/// A database made before migrations were versioned keeps its rows, and takes commits
/// without the optional fields afterwards.
#[tokio::test]
async fn a_database_from_before_versions_migrates_and_keeps_its_commits() {
    let path = std::env::temp_dir().join(format!(
        "faultline-migrate-{}-{:?}.db",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let path = path.to_str().unwrap().to_owned();
    {
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_V1).unwrap();
        old.execute_batch(
            "INSERT INTO instances (id, key_hash) VALUES ('in', x'00');
             INSERT INTO digests (id, instance_id, description) VALUES ('dg', 'in', 'd');
             INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                 VALUES ('ib', 'in', 'dg', 'github', 'n', 's');
             INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count)
                 VALUES ('ib', 'old', 'in', 1);
             INSERT INTO commits (instance_id, digest_id, inbox_id, delivery_id, sha,
                 message, author, timestamp, repository, branch)
                 VALUES ('in', 'dg', 'ib', 'old', 'a1', 'm', 'Ada', 't', 'r', 'main');",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, SqliteSync::Full).unwrap();
    let inbox = || InboxRow {
        id: InboxId::stored("ib".into()),
        digest_id: DigestId::stored("dg".into()),
        provider: Provider::Github,
        secret: "s".into(),
        previous: None,
    };
    let bare = Commit {
        sha: "b2".into(),
        message: None,
        author: None,
        timestamp: None,
        repository: "r".into(),
        branch: "main".into(),
    };
    let stored = store
        .ingest(
            InstanceId::stored("in".into()),
            inbox(),
            unkeyed("new"),
            vec![bare.clone()],
        )
        .await
        .unwrap();
    assert_eq!(stored, Ingested::Stored(1));
    let commits = store
        .commits(DigestId::stored("dg".into()), None, 10)
        .await
        .unwrap();
    let listed: Vec<_> = commits.into_iter().map(|c| (c.seq, c.commit)).collect();
    assert_eq!(listed[0], (2, bare));
    assert_eq!(listed[1].0, 1);
    assert_eq!(listed[1].1.author.as_deref(), Some("Ada"));
    drop(store);
    // Opened again, nothing runs twice.
    SqliteStore::open(&path, SqliteSync::Full).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
}

/// Nodes started together on one new file, as a fleet on one SQLite file is: each opens it
/// and migrates it, and none runs a migration another already ran.
#[test]
fn nodes_opening_one_new_file_at_once_migrate_it_once() {
    const NODES: usize = 4;
    const ROUNDS: usize = 5;
    for round in 0..ROUNDS {
        let path = temp_db(&format!("migrate-at-once-{round}"));
        let barrier = std::sync::Barrier::new(NODES);
        let opened: Vec<Result<(), String>> = std::thread::scope(|scope| {
            let nodes: Vec<_> = (0..NODES)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        SqliteStore::open(&path, SqliteSync::Full)
                            .map(drop)
                            .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))
                    })
                })
                .collect();
            nodes.into_iter().map(|n| n.join().unwrap()).collect()
        });
        assert!(
            opened.iter().all(Result::is_ok),
            "round {round}: {opened:?}"
        );
        let connection = Connection::open(&path).unwrap();
        let version: i64 = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, super::schema::MIGRATIONS.len() as i64);
        drop(connection);
        remove_db(&path);
    }
}

fn temp_db(name: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "faultline-{name}-{}-{:?}.db",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    path.to_str().unwrap().to_owned()
}

fn remove_db(path: &str) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
}

/// An instance, a digest of it, and `inboxes` of that digest, each of GitHub.
async fn instance_with_inboxes(
    store: &SqliteStore,
    instance: &str,
    digest: &str,
    inboxes: &[&str],
) {
    let instance = InstanceId::stored(instance.into());
    let digest = DigestId::stored(digest.into());
    store
        .create_instance(instance.clone(), vec![0])
        .await
        .unwrap();
    store
        .create_digest(instance.clone(), digest.clone(), "d".into())
        .await
        .unwrap();
    for inbox in inboxes {
        store
            .create_inbox(NewInbox {
                instance: instance.clone(),
                digest: digest.clone(),
                id: InboxId::stored((*inbox).into()),
                provider: Provider::Github,
                name: "n".into(),
                secret: "s".into(),
            })
            .await
            .unwrap();
    }
}

/// The name of the thread a write runs on.
async fn writing_thread(store: &SqliteStore) -> String {
    store
        .write(|_| Ok(std::thread::current().name().unwrap_or("").to_owned()))
        .await
        .unwrap()
}

/// A write to an idle store runs on the task's own thread; one that finds another write not
/// yet answered goes to the writer thread and its group commit; on a single-threaded runtime
/// every write does, so that the one thread never waits for the disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_runs_in_place_only_when_the_store_is_idle() {
    let path = temp_db("in-place");
    let store = SqliteStore::open(&path, SqliteSync::Full).unwrap();
    let idle = writing_thread(&store).await;
    assert_ne!(idle, "store-writer");
    let busy = store.shared.writer.enter();
    assert_eq!(writing_thread(&store).await, "store-writer");
    drop(busy);
    assert_ne!(writing_thread(&store).await, "store-writer");
    let single = std::thread::spawn({
        let store = store.clone();
        move || {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(async { writing_thread(&store).await })
        }
    });
    assert_eq!(single.join().unwrap(), "store-writer");
    drop(store);
    remove_db(&path);
}

/// The counts of an instance hold its own rows only, redeliveries included, and are read
/// through indexes rather than a scan of the deliveries or the commits.
#[tokio::test]
async fn an_instances_counts_hold_its_own_rows_and_scan_no_table() {
    let path = temp_db("stats");
    let store = SqliteStore::open(&path, SqliteSync::Normal).unwrap();
    for n in ["a", "b"] {
        let inbox = format!("ib-{n}");
        instance_with_inboxes(&store, &format!("in-{n}"), &format!("dg-{n}"), &[&inbox]).await;
    }
    let inbox = |n: &str| InboxRow {
        id: InboxId::stored(format!("ib-{n}")),
        digest_id: DigestId::stored(format!("dg-{n}")),
        provider: Provider::Github,
        secret: "s".into(),
        previous: None,
    };
    let commit = |sha: &str| Commit {
        sha: sha.into(),
        message: None,
        author: None,
        timestamp: None,
        repository: "r".into(),
        branch: "main".into(),
    };
    let deliveries = [("a", "1", 2), ("a", "2", 1), ("a", "1", 2), ("b", "1", 3)];
    for (n, delivery, commits) in deliveries {
        let commits = (0..commits).map(|i| commit(&format!("{n}{i}"))).collect();
        let instance = InstanceId::stored(format!("in-{n}"));
        store
            .ingest(instance, inbox(n), unkeyed(delivery), commits)
            .await
            .unwrap();
    }
    let a = store
        .stats(InstanceId::stored("in-a".into()))
        .await
        .unwrap();
    let b = store
        .stats(InstanceId::stored("in-b".into()))
        .await
        .unwrap();
    let counts = |s: &Stats| {
        (
            s.digests,
            s.inboxes,
            s.deliveries,
            s.redeliveries,
            s.commits,
        )
    };
    assert_eq!(counts(&a), (1, 1, 2, 1, 3));
    assert_eq!(counts(&b), (1, 1, 1, 0, 3));
    let reader = Connection::open(&path).unwrap();
    let plan: Vec<String> = reader
        .prepare(&format!("EXPLAIN QUERY PLAN {STATS}"))
        .unwrap()
        .query_map(["in-a"], |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for table in ["deliveries", "commits"] {
        let scan = format!("SCAN {table}");
        assert!(!plan.iter().any(|step| step.starts_with(&scan)), "{plan:?}");
    }
    drop(store);
    remove_db(&path);
}

/// The purge of expired replay keys reads the expiry index, which holds the keys that
/// expire and not those taken with their delivery for good: a delivery's commit writes no
/// entry of it.
#[tokio::test]
async fn the_expiry_index_holds_only_keys_that_expire_and_the_purge_reads_it() {
    use crate::store::replays::KEPT_WITH_THE_DELIVERY;
    use crate::store::Replays;
    use rusqlite::params;
    let path = temp_db("expiry-index");
    let store = SqliteStore::open(&path, SqliteSync::Normal).unwrap();
    let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
    let expiring = faultline::webhooks::ReplayKey::from_bytes([1; 32]);
    let lease = at + std::time::Duration::from_secs(60);
    store.reserve_at(expiring, lease, at).await.unwrap();
    store
        .write(|tx| {
            let inbox = InboxId::stored("ib".into());
            let delivery = crate::ids::DeliveryId::parse("d-1").unwrap();
            super::replays::take_for_delivery(tx, &[2; 32], &inbox, &delivery)
        })
        .await
        .unwrap();
    let reader = Connection::open(&path).unwrap();
    let indexed = |sql: &str| -> i64 {
        reader
            .query_row(sql, [KEPT_WITH_THE_DELIVERY], |row| row.get(0))
            .unwrap()
    };
    // Both rows are there; the index's own leaves hold one entry.
    assert_eq!(indexed("SELECT count(*) FROM replays WHERE ?1 = ?1"), 2);
    let entries = "SELECT sum(ncell) FROM dbstat
                   WHERE name = 'replays_by_until' AND pagetype = 'leaf' AND ?1 = ?1";
    assert_eq!(indexed(entries), 1);
    let plan: Vec<String> = reader
        .prepare(&format!("EXPLAIN QUERY PLAN {}", super::replays::PURGE))
        .unwrap()
        .query_map(params![0, 8], |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter()
            .any(|step| step.contains("INDEX replays_by_until")),
        "{plan:?}"
    );
    drop(store);
    remove_db(&path);
}

/// A commit never waits for a checkpoint below the WAL's limit: the checkpointer copies the
/// WAL into the database file on its own connection while the writes go on running in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpointer_copies_the_wal_while_writes_run_in_place() {
    let path = temp_db("checkpoint");
    let store = SqliteStore::open(&path, SqliteSync::Normal).unwrap();
    store
        .write(|c| c.execute_batch("CREATE TABLE t (v TEXT)"))
        .await
        .unwrap();
    // Each write adds a page of its own to the WAL: twice the checkpointer's threshold, well
    // below the limit at which a commit checkpoints itself.
    let rows = 2 * checkpointer::CHECKPOINT_FRAMES;
    assert!(2 * rows < checkpointer::WAL_LIMIT_FRAMES);
    for _ in 0..rows {
        let thread = store
            .write(|c| {
                c.execute("INSERT INTO t (v) VALUES (?1)", ["x".repeat(3000)])?;
                Ok(std::thread::current().name().unwrap_or("").to_owned())
            })
            .await
            .unwrap();
        assert_ne!(thread, "store-writer");
    }
    // The checkpointer's copy reaches the database file, the threshold's rows at least.
    let copied = u64::try_from(checkpointer::CHECKPOINT_FRAMES).unwrap() * 3_000;
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&path).unwrap().len() < copied {
        assert!(Instant::now() < deadline, "no checkpoint reached the file");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(store);
    remove_db(&path);
}

/// Under load the first write of a round finds the store idle only because the last group
/// commit was just answered. Once a group commit held more than one write, the next write to
/// an idle store joins the writer's group commit too; after a commit of one write alone,
/// writes run in place again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_group_commit_an_idle_store_takes_the_next_write_on_the_writer_thread() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let path = temp_db("alone");
    let store = SqliteStore::open(&path, SqliteSync::Full).unwrap();
    assert_ne!(writing_thread(&store).await, "store-writer");
    let busy = store.shared.writer.enter();
    // The first write holds the writer thread until released, so that the next two wait in
    // its queue and go into one batch.
    let (started, running) = tokio::sync::oneshot::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let first = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .write(move |_| {
                    let _ = started.send(());
                    let _ = released.recv();
                    Ok(())
                })
                .await
        }
    });
    running.await.unwrap();
    let mut queued = Vec::new();
    for _ in 0..2 {
        let mut write = Box::pin(writing_thread(&store));
        let polled = write.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert!(matches!(polled, Poll::Pending), "the write was not queued");
        queued.push(write);
    }
    release.send(()).unwrap();
    first.await.unwrap().unwrap();
    for write in queued {
        assert_eq!(write.await, "store-writer");
    }
    drop(busy);
    assert_eq!(writing_thread(&store).await, "store-writer");
    assert_ne!(writing_thread(&store).await, "store-writer");
    drop(store);
    remove_db(&path);
}

/// The claim of a delivery recognised by its id alone.
fn unkeyed(delivery: &str) -> crate::store::Claim {
    let delivery = crate::ids::DeliveryId::parse(delivery).unwrap();
    crate::store::Claim::new(delivery, None, &InboxId::stored(String::new()))
}

mod integrity;
