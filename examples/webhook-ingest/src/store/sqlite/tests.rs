//! The SQLite store against databases of its earlier versions.

use super::schema::SCHEMA_V1;
use super::*;
use crate::verify::webhook::Vcs;

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
        id: "ib".into(),
        digest_id: "dg".into(),
        vcs: Vcs::Github,
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
        .ingest("in".into(), inbox(), "new".into(), vec![bare.clone()])
        .await
        .unwrap();
    assert_eq!(stored, Ingested::Stored(1));
    let commits = store.commits("dg".into(), None, 10).await.unwrap();
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
