//! The keys a delivery's rows no longer declare (`schema::CHILDREN_CHECKED_BY_THEIR_WRITER`):
//! held by the writer, and kept by the migration that dropped them.

use faultline::webhooks::ReplayKey;
use rusqlite::{params, Connection};

use super::super::schema::MIGRATIONS;
use super::super::{SqliteStore, SqliteSync};
use super::{instance_with_inboxes, remove_db, temp_db};
use crate::ids::{DeliveryId, DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::{Claim, Commit, Deliveries, InboxRow, Ingested, Instances, StoredCommit};

fn commit(sha: &str) -> Commit {
    Commit {
        sha: sha.into(),
        message: Some(format!("m {sha}")),
        author: None,
        timestamp: None,
        repository: "r".into(),
        branch: "main".into(),
    }
}

fn inbox(n: usize) -> InboxRow {
    InboxRow {
        id: InboxId::stored(format!("ib-{n}")),
        digest_id: DigestId::stored("dg".into()),
        provider: Provider::Github,
        secret: "s".into(),
        previous: None,
    }
}

/// Delivery `delivery` to inbox `n`, signed with the replay key `signed`.
fn keyed(n: usize, delivery: &str, signed: u8) -> Claim {
    let key = ReplayKey::from_bytes([signed; 32]);
    Claim::new(
        DeliveryId::parse(delivery).unwrap(),
        Some(key),
        &inbox(n).id,
    )
}

/// A write that adds a delivery and a commit, then fails: it must leave neither.
async fn failed_write(store: &SqliteStore, n: usize) {
    let failed = store
        .write(move |tx| {
            tx.execute(
                "INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count)
                 VALUES ('ib-0', ?1, 'in', 1)",
                [format!("failed-{n}")],
            )?;
            tx.execute(
                "INSERT INTO commits (instance_id, digest_id, inbox_id, delivery_id, sha,
                                      repository, branch)
                 VALUES ('in', 'dg', 'ib-0', ?1, 'f', 'r', 'main')",
                [format!("failed-{n}")],
            )?;
            Err::<(), _>(rusqlite::Error::InvalidQuery)
        })
        .await;
    assert!(failed.is_err());
}

/// After deliveries, redeliveries, replays and failed writes, sent at once so that the
/// writer batches them, every commit row has its delivery, every delivery its inbox and as
/// many commits as it counts, and the keys still declared hold (`foreign_key_check`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_commit_has_its_delivery_and_every_delivery_its_inbox() {
    let path = temp_db("integrity");
    let store = SqliteStore::open(&path, SqliteSync::Normal).unwrap();
    instance_with_inboxes(&store, "in", "dg", &["ib-0", "ib-1"]).await;
    let mut writes = tokio::task::JoinSet::new();
    for round in 0..3u8 {
        for d in 0..24u8 {
            let (sender, n) = (store.clone(), usize::from(d % 2));
            // Round 0 delivers, round 1 redelivers the same ids, round 2 replays each
            // body under a new id; every fifth write in between fails.
            let id = if round == 2 {
                format!("replay-{d}")
            } else {
                format!("d-{d}")
            };
            let commits = (0..d % 4).map(|i| commit(&format!("{d}.{i}"))).collect();
            writes.spawn(async move {
                let claim = keyed(n, &id, d);
                let done = sender.ingest(InstanceId::stored("in".into()), inbox(n), claim, commits);
                (round, done.await.unwrap())
            });
            if d % 5 == 0 {
                let store = store.clone();
                let n = usize::from(round) * 100 + usize::from(d);
                writes.spawn(async move {
                    failed_write(&store, n).await;
                    (3, Ingested::Replayed)
                });
            }
        }
        // Each round is answered before the next is sent: a redelivery finds its delivery.
        while let Some(done) = writes.join_next().await {
            let (r, ingested) = done.unwrap();
            match r {
                0 => assert!(matches!(ingested, Ingested::Stored(_)), "{ingested:?}"),
                1 => assert_eq!(ingested, Ingested::Duplicate),
                _ => assert_eq!(ingested, Ingested::Replayed),
            }
        }
    }
    drop(store);
    let reader = Connection::open(&path).unwrap();
    let count = |sql: &str| -> i64 { reader.query_row(sql, [], |row| row.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM deliveries"), 24);
    assert_eq!(count("SELECT sum(redeliveries) FROM deliveries"), 24);
    assert_eq!(
        count("SELECT count(*) FROM commits"),
        (0..24i64).map(|d| d % 4).sum::<i64>()
    );
    let orphans = "SELECT count(*) FROM commits c WHERE NOT EXISTS (
                       SELECT 1 FROM deliveries d
                       WHERE d.inbox_id = c.inbox_id AND d.delivery_id = c.delivery_id)";
    assert_eq!(count(orphans), 0);
    let homeless = "SELECT count(*) FROM deliveries d
                    WHERE NOT EXISTS (SELECT 1 FROM inboxes i WHERE i.id = d.inbox_id)";
    assert_eq!(count(homeless), 0);
    let miscounted = "SELECT count(*) FROM deliveries d WHERE commit_count != (
                          SELECT count(*) FROM commits c
                          WHERE c.inbox_id = d.inbox_id AND c.delivery_id = d.delivery_id)";
    assert_eq!(count(miscounted), 0);
    let broken = reader
        .prepare("PRAGMA foreign_key_check")
        .unwrap()
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .count();
    assert_eq!(broken, 0);
    drop(reader);
    remove_db(&path);
}

/// The newest of a digest's commits, `seq` and all, as the read API lists them.
fn listed(commits: Vec<StoredCommit>) -> Vec<(i64, String, String, Option<String>)> {
    let row = |c: StoredCommit| {
        (
            c.seq,
            c.inbox_id.to_string(),
            c.commit.sha,
            c.commit.message,
        )
    };
    commits.into_iter().map(row).collect()
}

/// Every row of `table`, each column's value, in the order of its first two columns.
fn rows(c: &Connection, table: &str) -> Vec<Vec<rusqlite::types::Value>> {
    let mut query = c
        .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
        .unwrap();
    let columns = query.column_count();
    let rows = query.query_map([], |row| (0..columns).map(|i| row.get(i)).collect());
    rows.unwrap().map(Result::unwrap).collect()
}

/// A file of the format before (version 10), rows in it, migrates to the current one: the
/// same commits under the same `seq`s, paged the same, the deliveries with their
/// redeliveries; the next commit takes the next `seq`, and a redelivery of an old delivery
/// is still one.
#[tokio::test]
async fn a_version_10_file_keeps_its_commits_and_seqs() {
    let path = temp_db("version-10");
    let before;
    {
        let old = Connection::open(&path).unwrap();
        old.pragma_update(None, "foreign_keys", "ON").unwrap();
        for migration in &MIGRATIONS[..10] {
            old.execute_batch(migration).unwrap();
        }
        old.pragma_update(None, "user_version", 10).unwrap();
        old.execute_batch(
            "INSERT INTO instances (id, key_hash) VALUES ('in', x'00');
             INSERT INTO digests (id, instance_id, description) VALUES ('dg', 'in', 'd');
             INSERT INTO digests (id, instance_id, description) VALUES ('dh', 'in', 'd');
             INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                 VALUES ('ib-0', 'in', 'dg', 'github', 'n', 's');
             INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count,
                                     redeliveries)
                 VALUES ('ib-0', 'old-1', 'in', 2, 3), ('ib-0', 'old-2', 'in', 2, 0);
             INSERT INTO commits (seq, instance_id, digest_id, inbox_id, delivery_id, sha,
                                  message, author, timestamp, repository, branch)
                 VALUES (5, 'in', 'dg', 'ib-0', 'old-1', 'a', 'm a', 'A', 't a', 'r', 'main'),
                        (9, 'in', 'dg', 'ib-0', 'old-1', 'b', NULL, NULL, 't b', 'q', 'dev'),
                        (12, 'in', 'dh', 'ib-0', 'old-2', 'c', 'm c', 'C', NULL, 'r', 'main'),
                        (20, 'in', 'dg', 'ib-0', 'old-2', 'd', 'm d', 'D', 't d', 'r', 'v1');",
        )
        .unwrap();
        before = [rows(&old, "commits"), rows(&old, "deliveries")];
    }
    let store = SqliteStore::open(&path, SqliteSync::Normal).unwrap();
    // Every column of every row as it was, and the copy's WAL cut back once checkpointed.
    let reader = Connection::open(&path).unwrap();
    assert_eq!(
        [rows(&reader, "commits"), rows(&reader, "deliveries")],
        before
    );
    drop(reader);
    let wal = std::fs::metadata(format!("{path}-wal")).unwrap().len();
    assert_eq!(wal, 0, "the WAL after the migration");
    let commits = |before: Option<i64>, limit| {
        let store = store.clone();
        async move {
            let digest = DigestId::stored("dg".into());
            listed(store.commits(digest, before, limit).await.unwrap())
        }
    };
    let ib = || "ib-0".to_owned();
    let old = [
        (20, ib(), "d".to_owned(), Some("m d".to_owned())),
        (9, ib(), "b".to_owned(), None),
        (5, ib(), "a".to_owned(), Some("m a".to_owned())),
    ];
    assert_eq!(commits(None, 10).await, old);
    assert_eq!(commits(Some(20), 1).await, old[1..2]);
    let other = store.commits(DigestId::stored("dh".into()), None, 10);
    assert_eq!(listed(other.await.unwrap())[0].0, 12);
    let stats = store.stats(InstanceId::stored("in".into())).await.unwrap();
    assert_eq!(
        (stats.deliveries, stats.redeliveries, stats.commits),
        (2, 3, 4)
    );
    let instance = || InstanceId::stored("in".into());
    let again = store.ingest(
        instance(),
        inbox(0),
        keyed(0, "old-1", 1),
        vec![commit("x")],
    );
    assert_eq!(again.await.unwrap(), Ingested::Duplicate);
    let new = store.ingest(instance(), inbox(0), keyed(0, "new", 2), vec![commit("e")]);
    assert_eq!(new.await.unwrap(), Ingested::Stored(1));
    assert_eq!(commits(None, 1).await[0].0, 21);
    drop(store);
    let reader = Connection::open(&path).unwrap();
    let version: i64 = reader
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, MIGRATIONS.len() as i64);
    for table in ["commits", "deliveries"] {
        let keys: i64 = reader
            .query_row(
                "SELECT count(*) FROM pragma_foreign_key_list(?1)",
                params![table],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(keys, 0, "{table}");
    }
    drop(reader);
    remove_db(&path);
}

/// Only an open that migrated checkpoints the WAL away: a node opening a file of the
/// current version, while another connection's frames wait in the WAL, leaves them to the
/// checkpoints that follow writes, and waits for no reader of another node to finish.
#[test]
fn an_open_that_migrates_nothing_leaves_the_wal_as_it_is() {
    let path = temp_db("no-migration");
    drop(SqliteStore::open(&path, SqliteSync::Normal).unwrap());
    let other = Connection::open(&path).unwrap();
    other.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    other
        .execute_batch("INSERT INTO instances (id, key_hash) VALUES ('in', x'00');")
        .unwrap();
    let wal = || std::fs::metadata(format!("{path}-wal")).unwrap().len();
    let written = wal();
    assert!(written > 0, "the other connection's frames are in the WAL");
    drop(SqliteStore::open(&path, SqliteSync::Normal).unwrap());
    assert_eq!(wal(), written);
    drop(other);
    remove_db(&path);
}
