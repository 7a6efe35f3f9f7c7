//! Instances and their digests in PostgreSQL, and an instance's row counts.

use async_trait::async_trait;

use super::PgStore;
use crate::ids::{DigestId, InstanceId};
use crate::store::{InstanceRow, Instances, Stats, StoreError};

#[async_trait]
impl Instances for PgStore {
    async fn create_instance(&self, id: InstanceId, key_hash: Vec<u8>) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let insert = client
            .prepare_cached("INSERT INTO instances (id, key_hash) VALUES ($1, $2)")
            .await?;
        client.execute(&insert, &[&id.as_str(), &key_hash]).await?;
        Ok(())
    }

    async fn instance(&self, id: InstanceId) -> Result<Option<InstanceRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached("SELECT id, key_hash, created_at FROM instances WHERE id = $1")
            .await?;
        Ok(client
            .query_opt(&select, &[&id.as_str()])
            .await?
            .map(|row| InstanceRow {
                id: InstanceId::stored(row.get(0)),
                key_hash: row.get(1),
                created_at: row.get(2),
            }))
    }

    async fn create_digest(
        &self,
        instance: InstanceId,
        id: DigestId,
        description: String,
    ) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let insert = client
            .prepare_cached(
                "INSERT INTO digests (id, instance_id, description) VALUES ($1, $2, $3)",
            )
            .await?;
        client
            .execute(&insert, &[&id.as_str(), &instance.as_str(), &description])
            .await?;
        Ok(())
    }

    async fn digest_exists(&self, instance: InstanceId, id: DigestId) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached("SELECT 1 FROM digests WHERE id = $1 AND instance_id = $2")
            .await?;
        Ok(client
            .query_opt(&select, &[&id.as_str(), &instance.as_str()])
            .await?
            .is_some())
    }

    async fn stats(&self, instance: InstanceId) -> Result<Stats, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT
                    (SELECT count(*) FROM digests WHERE instance_id = $1),
                    (SELECT count(*) FROM inboxes WHERE instance_id = $1),
                    (SELECT count(*) FROM deliveries WHERE instance_id = $1),
                    (SELECT coalesce(sum(redeliveries), 0)::bigint
                     FROM deliveries WHERE instance_id = $1),
                    (SELECT count(*) FROM commits WHERE instance_id = $1)",
            )
            .await?;
        let row = client.query_one(&select, &[&instance.as_str()]).await?;
        Ok(Stats {
            digests: row.get(0),
            inboxes: row.get(1),
            deliveries: row.get(2),
            redeliveries: row.get(3),
            commits: row.get(4),
        })
    }
}
