//! The SQLite schema and its migrations, one per version, recorded in `PRAGMA user_version`.

use rusqlite::{Connection, TransactionBehavior};

/// The schema, one migration per version; `PRAGMA user_version` records how many ran. The
/// first uses `IF NOT EXISTS` throughout, so a database made before versions were recorded
/// takes it as a no-op.
pub(super) const MIGRATIONS: [&str; 11] = [
    SCHEMA_V1,
    OPTIONAL_COMMIT_FIELDS,
    PREVIOUS_SECRET,
    REFUSALS,
    NO_INSTANCE_INDEXES,
    REPLAYS,
    FEWER_PAGES_PER_DELIVERY,
    REPLAYS_RESERVED,
    super::catchup::CATCHUP,
    EXPIRING_REPLAYS_INDEXED,
    CHILDREN_CHECKED_BY_THEIR_WRITER,
];

pub(super) const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY,
    key_hash BLOB NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS digests (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    description TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS digests_by_instance ON digests (instance_id);
CREATE TABLE IF NOT EXISTS inboxes (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    digest_id TEXT NOT NULL REFERENCES digests (id),
    vcs TEXT NOT NULL,
    name TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS inboxes_by_instance ON inboxes (instance_id);
-- One row per delivery accepted; the primary key is what makes redelivery idempotent.
CREATE TABLE IF NOT EXISTS deliveries (
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    commit_count INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (inbox_id, delivery_id)
);
CREATE INDEX IF NOT EXISTS deliveries_by_instance ON deliveries (instance_id);
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    digest_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    message TEXT NOT NULL,
    author TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL,
    FOREIGN KEY (inbox_id, delivery_id) REFERENCES deliveries (inbox_id, delivery_id)
);
CREATE INDEX IF NOT EXISTS commits_by_digest ON commits (digest_id, seq);
CREATE INDEX IF NOT EXISTS commits_by_instance ON commits (instance_id);
";

/// A commit's message, author and date may be absent from a real payload: SQLite cannot drop
/// a NOT NULL in place, so the table is rebuilt with its rows and `seq`s.
const OPTIONAL_COMMIT_FIELDS: &str = "
CREATE TABLE commits_v2 (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    digest_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    message TEXT,
    author TEXT,
    timestamp TEXT,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL,
    FOREIGN KEY (inbox_id, delivery_id) REFERENCES deliveries (inbox_id, delivery_id)
);
INSERT INTO commits_v2 SELECT * FROM commits;
DROP TABLE commits;
ALTER TABLE commits_v2 RENAME TO commits;
CREATE INDEX commits_by_digest ON commits (digest_id, seq);
CREATE INDEX commits_by_instance ON commits (instance_id);
";

/// Secret rotation keeps the replaced secret, and when it was replaced (Unix milliseconds),
/// so that deliveries signed with it pass for a grace period.
const PREVIOUS_SECRET: &str = "
ALTER TABLE inboxes ADD COLUMN previous_secret TEXT;
ALTER TABLE inboxes ADD COLUMN secret_rotated_ms INTEGER;
";

/// The deliveries refused for something the sender must fix, a bounded number per inbox, so
/// an operator can tell which to redeliver.
const REFUSALS: &str = "
CREATE TABLE refusals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT,
    status INTEGER NOT NULL,
    code TEXT NOT NULL,
    refused_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX refusals_by_inbox ON refusals (inbox_id, seq);
";

/// Every delivery wrote two index entries per row that only an instance's row counts read:
/// those counts now go through the inbox and the digest, whose keys the tables are already
/// indexed by, and each delivery's commit writes two pages fewer (a lone delivery's writes
/// took about a fifth less time in a side-by-side run).
const NO_INSTANCE_INDEXES: &str = "
DROP INDEX IF EXISTS deliveries_by_instance;
DROP INDEX IF EXISTS commits_by_instance;
";

/// The deliveries remembered against replays (`store/replays.rs`): a key until its expiry,
/// in Unix milliseconds. Without a rowid, the key is the table's own order, and a lookup by
/// it reads one b-tree.
const REPLAYS: &str = "
CREATE TABLE replays (
    key BLOB PRIMARY KEY,
    until_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX replays_by_until ON replays (until_ms);
";

/// A replay key is reserved while its delivery is in hand, and taken once it is answered
/// 2xx (`store/replays.rs`): `until_ms` is the reservation's lease while `taken` is 0. The
/// keys remembered before were taken. A key the service's own ingest takes, in the
/// delivery's transaction, names that delivery (`inbox_id`, `delivery_id`): its
/// redelivery under the same id is a redelivery, any other copy a replay.
const REPLAYS_RESERVED: &str = "
ALTER TABLE replays ADD COLUMN taken INTEGER NOT NULL DEFAULT 1;
ALTER TABLE replays ADD COLUMN inbox_id TEXT;
ALTER TABLE replays ADD COLUMN delivery_id TEXT;
";

/// Two pages fewer in every delivery's commit, each a WAL frame written and fsynced before
/// the delivery is answered (6.2 frames per delivery of 1 to 5 commits before, 4.5 after,
/// counted in the WAL; `BENCHMARKS.md`):
/// - `deliveries` keeps its rows in its primary key's b-tree (`WITHOUT ROWID`), where a rowid
///   table wrote its rows to one b-tree and the key to another;
/// - `commits.seq` loses `AUTOINCREMENT`, whose counter row in `sqlite_sequence` was
///   rewritten by every insert. Commits are never deleted, so a new rowid (one past the
///   largest) is as monotonic as the counter was, and the cursor of `commits` (`seq < ?`)
///   pages the same.
///
/// SQLite changes neither in place: both tables are rebuilt with their rows and `seq`s. The
/// new `commits` refers to the new `deliveries` from the start, so that the old parent drops
/// with no child left (foreign keys stay on); the renames carry the reference along.
const FEWER_PAGES_PER_DELIVERY: &str = "
CREATE TABLE deliveries_v2 (
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    commit_count INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (inbox_id, delivery_id)
) WITHOUT ROWID;
INSERT INTO deliveries_v2 (inbox_id, delivery_id, instance_id, commit_count, redeliveries,
                           received_at)
    SELECT inbox_id, delivery_id, instance_id, commit_count, redeliveries, received_at
    FROM deliveries;
CREATE TABLE commits_v3 (
    seq INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL,
    digest_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    message TEXT,
    author TEXT,
    timestamp TEXT,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL,
    FOREIGN KEY (inbox_id, delivery_id) REFERENCES deliveries_v2 (inbox_id, delivery_id)
);
INSERT INTO commits_v3 (seq, instance_id, digest_id, inbox_id, delivery_id, sha, message,
                        author, timestamp, repository, branch)
    SELECT seq, instance_id, digest_id, inbox_id, delivery_id, sha, message, author,
           timestamp, repository, branch
    FROM commits;
DROP TABLE commits;
DROP TABLE deliveries;
ALTER TABLE deliveries_v2 RENAME TO deliveries;
ALTER TABLE commits_v3 RENAME TO commits;
CREATE INDEX commits_by_digest ON commits (digest_id, seq);
";

/// The expiry index holds only the keys that expire: a key the service's own ingest takes
/// with its delivery is kept for good (`until_ms` is `KEPT_WITH_THE_DELIVERY`, `i64::MAX`),
/// which no purge reaches, and its entry was one more b-tree written at a random place in
/// every delivery's commit (a WAL frame, its checksum and its checkpoint). The purge names
/// the index's condition (`replays::PURGE`), which is what lets SQLite use a partial index.
/// The rows stay as they were; only the index is made anew.
const EXPIRING_REPLAYS_INDEXED: &str = "
DROP INDEX replays_by_until;
CREATE INDEX replays_by_until ON replays (until_ms) WHERE until_ms < 9223372036854775807;
";

/// No foreign key checked on a delivery's rows: each commit row's key to its delivery
/// (`inbox_id`, `delivery_id`) and each delivery's to its inbox were looked up by SQLite on
/// every insert, four seeks in b-trees keyed by text for a push of three commits, 11,100
/// instructions of a delivery's 240,000 (`BENCHMARKS.md`). Neither can be broken by the
/// writer that inserts them (`deliveries.rs`): a delivery's commits are inserted in the
/// transaction that inserts the delivery, right after it and only when it was inserted, and
/// roll back with it; its inbox is a row read from `inboxes`, and no inbox is ever deleted.
/// `tests::integrity::every_commit_has_its_delivery_and_every_delivery_its_inbox` checks it
/// after deliveries, redeliveries, replays and failed writes. The other tables keep their
/// keys, checked (`foreign_keys` stays on).
///
/// SQLite drops no constraint in place: both tables are rebuilt with their rows and `seq`s,
/// the child dropped before its parent, as `FEWER_PAGES_PER_DELIVERY` did.
const CHILDREN_CHECKED_BY_THEIR_WRITER: &str = "
CREATE TABLE deliveries_v3 (
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    commit_count INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (inbox_id, delivery_id)
) WITHOUT ROWID;
INSERT INTO deliveries_v3 (inbox_id, delivery_id, instance_id, commit_count, redeliveries,
                           received_at)
    SELECT inbox_id, delivery_id, instance_id, commit_count, redeliveries, received_at
    FROM deliveries;
CREATE TABLE commits_v4 (
    seq INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL,
    digest_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    message TEXT,
    author TEXT,
    timestamp TEXT,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL
);
INSERT INTO commits_v4 (seq, instance_id, digest_id, inbox_id, delivery_id, sha, message,
                        author, timestamp, repository, branch)
    SELECT seq, instance_id, digest_id, inbox_id, delivery_id, sha, message, author,
           timestamp, repository, branch
    FROM commits;
DROP TABLE commits;
DROP TABLE deliveries;
ALTER TABLE deliveries_v3 RENAME TO deliveries;
ALTER TABLE commits_v4 RENAME TO commits;
CREATE INDEX commits_by_digest ON commits (digest_id, seq);
";

/// Runs the migrations this database has not had yet, each in its own transaction with the
/// version it brings. The version is read again inside each transaction, which holds the
/// write lock: two nodes opening one file at the same moment take turns, and the second
/// finds what the first did instead of running it twice.
pub(super) fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    let version = |c: &Connection| {
        let version: i64 = c.pragma_query_value(None, "user_version", |row| row.get(0))?;
        Ok::<_, rusqlite::Error>(usize::try_from(version).unwrap_or(0))
    };
    let mut done = version(connection)?;
    let found = done;
    while done < MIGRATIONS.len() {
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        done = version(&tx)?;
        if let Some(migration) = MIGRATIONS.get(done) {
            tx.execute_batch(migration)?;
            done += 1;
            tx.pragma_update(None, "user_version", done as i64)?;
        }
        tx.commit()?;
    }
    if done > found {
        // A migration that rebuilds a table leaves a copy of it in the WAL, which keeps its
        // length once checkpointed: cut it back to nothing while no delivery waits. Busy (a
        // reader of another process holds an old snapshot) is left to the checkpoints after.
        connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    Ok(())
}
