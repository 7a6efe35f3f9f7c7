//! The PostgreSQL schema, one migration per version (`PgStore::migrate` applies those a
//! database has not had yet).

/// The schema, one migration per version, recorded in `schema_migrations`.
pub(super) const MIGRATIONS: [&str; 7] = [
    "
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    key_hash BYTEA NOT NULL,
    created_at TEXT NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')
);
CREATE TABLE digests (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    description TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX digests_by_instance ON digests (instance_id);
CREATE TABLE inboxes (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    digest_id TEXT NOT NULL REFERENCES digests (id),
    vcs TEXT NOT NULL,
    name TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX inboxes_by_instance ON inboxes (instance_id);
-- One row per delivery accepted; the primary key is what makes redelivery idempotent.
CREATE TABLE deliveries (
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    commit_count INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (inbox_id, delivery_id)
);
CREATE INDEX deliveries_by_instance ON deliveries (instance_id);
CREATE TABLE commits (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
CREATE INDEX commits_by_digest ON commits (digest_id, seq);
CREATE INDEX commits_by_instance ON commits (instance_id);
",
    // Secret rotation keeps the replaced secret, and when it was replaced (Unix milliseconds
    // by the database's clock, which every node of a fleet shares).
    "
ALTER TABLE inboxes ADD COLUMN previous_secret TEXT, ADD COLUMN secret_rotated_ms BIGINT;
",
    // The deliveries refused for something the sender must fix, a bounded number per inbox.
    "
CREATE TABLE refusals (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT,
    status INTEGER NOT NULL,
    code TEXT NOT NULL,
    refused_at TEXT NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')
);
CREATE INDEX refusals_by_inbox ON refusals (inbox_id, seq);
",
    // The deliveries remembered against replays, which every node shares (`replays.rs`):
    // a key until its expiry, in Unix milliseconds.
    "
CREATE TABLE replays (
    key BYTEA PRIMARY KEY,
    until_ms BIGINT NOT NULL
);
CREATE INDEX replays_by_until ON replays (until_ms);
",
    // A replay key is reserved while its delivery is in hand, and taken once it is answered
    // 2xx: `until_ms` is the reservation's lease while `taken` is false. The keys
    // remembered before were taken. A key the service's own ingest takes, in the delivery's
    // transaction, names that delivery: its redelivery under the same id is a redelivery,
    // any other copy a replay.
    "
ALTER TABLE replays ADD COLUMN taken BOOLEAN NOT NULL DEFAULT true,
    ADD COLUMN inbox_id TEXT, ADD COLUMN delivery_id TEXT;
",
    // Catch-up's credentials, cursor and lease per inbox (`catchup.rs`).
    super::catchup::CATCHUP,
    EXPIRING_REPLAYS_INDEXED,
];

/// The expiry index holds only the keys that expire: a key the service's own ingest takes
/// with its delivery is kept for good (`until_ms` is `KEPT_WITH_THE_DELIVERY`, `i64::MAX`),
/// which no purge reaches, and its entry was one more index written in every delivery's
/// statement. The purge names the index's condition (`replays::PURGE`): a prepared
/// statement's generic plan cannot prove it from `until_ms <= $1` alone. The rows stay as
/// they were; only the index is made anew, as SQLite's (`sqlite/schema.rs`).
const EXPIRING_REPLAYS_INDEXED: &str = "
DROP INDEX replays_by_until;
CREATE INDEX replays_by_until ON replays (until_ms) WHERE until_ms < 9223372036854775807;
";
