//! Instances and their digests in SQLite, and an instance's row counts.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::ids::{DigestId, InstanceId};
use crate::store::{InstanceRow, Instances, Stats, StoreError};

/// An instance's row counts. Deliveries and commits are counted through the inbox and the
/// digest they belong to, whose ids lead those tables' indexes.
pub(super) const STATS: &str = "SELECT
    (SELECT count(*) FROM digests WHERE instance_id = ?1),
    (SELECT count(*) FROM inboxes WHERE instance_id = ?1),
    (SELECT count(*) FROM deliveries WHERE inbox_id IN
        (SELECT id FROM inboxes WHERE instance_id = ?1)),
    (SELECT coalesce(sum(redeliveries), 0) FROM deliveries WHERE inbox_id IN
        (SELECT id FROM inboxes WHERE instance_id = ?1)),
    (SELECT count(*) FROM commits WHERE digest_id IN
        (SELECT id FROM digests WHERE instance_id = ?1))";

#[async_trait]
impl Instances for SqliteStore {
    async fn create_instance(&self, id: InstanceId, key_hash: Vec<u8>) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO instances (id, key_hash) VALUES (?1, ?2)",
                params![id, key_hash],
            )
            .map(drop)
        })
        .await
    }

    async fn instance(&self, id: InstanceId) -> Result<Option<InstanceRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached("SELECT id, key_hash, created_at FROM instances WHERE id = ?1")?
                .query_row([id], |row| {
                    Ok(InstanceRow {
                        id: row.get(0)?,
                        key_hash: row.get(1)?,
                        created_at: row.get(2)?,
                    })
                })
                .optional()
        })
        .await
    }

    async fn create_digest(
        &self,
        instance: InstanceId,
        id: DigestId,
        description: String,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO digests (id, instance_id, description) VALUES (?1, ?2, ?3)",
                params![id, instance, description],
            )
            .map(drop)
        })
        .await
    }

    async fn digest_exists(&self, instance: InstanceId, id: DigestId) -> Result<bool, StoreError> {
        self.read(move |c| {
            c.prepare_cached("SELECT 1 FROM digests WHERE id = ?1 AND instance_id = ?2")?
                .exists(params![id, instance])
        })
        .await
    }

    async fn stats(&self, instance: InstanceId) -> Result<Stats, StoreError> {
        self.read(move |c| {
            c.prepare_cached(STATS)?.query_row([instance], |row| {
                Ok(Stats {
                    digests: row.get(0)?,
                    inboxes: row.get(1)?,
                    deliveries: row.get(2)?,
                    redeliveries: row.get(3)?,
                    commits: row.get(4)?,
                })
            })
        })
        .await
    }
}
