//! Catch-up's rows in PostgreSQL, which every node of a fleet shares (see
//! `store/catchup.rs`): its schema, brought by a migration of `postgres/mod.rs`, and its
//! statements. Every time is the database's clock in Unix milliseconds, so that the nodes'
//! own clocks never decide whose lease has run out.

use async_trait::async_trait;
use tokio_postgres::Row;

use super::PgStore;
use crate::ids::{InboxId, InstanceId};
use crate::store::catchup::{AskState, CatchUpRow, PassEnd, SELECT_CATCHUP};
use crate::store::CatchUps;
use crate::store::StoreError;

/// The catch-up of an inbox, and the deliveries asked for and not stored yet.
pub(super) const CATCHUP: &str = "
CREATE TABLE catchup (
    inbox_id TEXT PRIMARY KEY REFERENCES inboxes (id),
    instance_id TEXT NOT NULL,
    hook_kind TEXT NOT NULL,
    hook_owner TEXT NOT NULL,
    hook_id BIGINT NOT NULL,
    token TEXT,
    app_id BIGINT,
    private_key TEXT,
    cursor_id BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until_ms BIGINT NOT NULL DEFAULT 0,
    failing TEXT,
    last_success_ms BIGINT NOT NULL
);
CREATE TABLE catchup_asks (
    inbox_id TEXT NOT NULL,
    guid TEXT NOT NULL,
    asks BIGINT NOT NULL,
    asked_ms BIGINT NOT NULL,
    PRIMARY KEY (inbox_id, guid)
);
";

/// The database's clock, in Unix milliseconds: the statement's moment, not its
/// transaction's.
macro_rules! now_ms {
    () => {
        "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    };
}

fn catchup_row(row: &Row) -> CatchUpRow {
    CatchUpRow {
        instance: InstanceId::stored(row.get(0)),
        inbox: InboxId::stored(row.get(1)),
        hook_kind: row.get(2),
        hook_owner: row.get(3),
        hook_id: row.get(4),
        token: row.get(5),
        app_id: row.get(6),
        private_key: row.get(7),
        cursor: row.get(8),
        failing: row.get(9),
        last_success_ms: row.get(10),
        pending: row.get(11),
    }
}

impl PgStore {
    /// Runs one statement; how many rows it changed.
    async fn catchup_execute(
        &self,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        let client = self.pool.get().await?;
        let prepared = client.prepare_cached(statement).await?;
        Ok(client.execute(&prepared, params).await?)
    }
}

#[async_trait]
impl CatchUps for PgStore {
    async fn set_catchup(&self, row: CatchUpRow) -> Result<(), StoreError> {
        let upsert = concat!(
            "INSERT INTO catchup (inbox_id, instance_id, hook_kind, hook_owner, hook_id,
                 token, app_id, private_key, last_success_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ",
            now_ms!(),
            ")
             ON CONFLICT (inbox_id) DO UPDATE SET
                 cursor_id = CASE WHEN (catchup.hook_kind, catchup.hook_owner, catchup.hook_id) =
                     (excluded.hook_kind, excluded.hook_owner, excluded.hook_id)
                     THEN catchup.cursor_id ELSE 0 END,
                 hook_kind = excluded.hook_kind, hook_owner = excluded.hook_owner,
                 hook_id = excluded.hook_id, token = excluded.token,
                 app_id = excluded.app_id, private_key = excluded.private_key,
                 failing = NULL"
        );
        self.catchup_execute(
            upsert,
            &[
                &row.inbox.as_str(),
                &row.instance.as_str(),
                &row.hook_kind,
                &row.hook_owner,
                &row.hook_id,
                &row.token,
                &row.app_id,
                &row.private_key,
            ],
        )
        .await
        .map(drop)
    }

    async fn catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<Option<CatchUpRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(&format!(
                "{SELECT_CATCHUP} WHERE inbox_id = $1 AND instance_id = $2"
            ))
            .await?;
        Ok(client
            .query_opt(&select, &[&inbox.as_str(), &instance.as_str()])
            .await?
            .map(|row| catchup_row(&row)))
    }

    async fn delete_catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<bool, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let deleted = tx
            .execute(
                "DELETE FROM catchup WHERE inbox_id = $1 AND instance_id = $2",
                &[&inbox.as_str(), &instance.as_str()],
            )
            .await?
            == 1;
        if deleted {
            tx.execute(
                "DELETE FROM catchup_asks WHERE inbox_id = $1",
                &[&inbox.as_str()],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(deleted)
    }

    async fn catchups(&self, limit: u32) -> Result<Vec<CatchUpRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(&format!(
                "{SELECT_CATCHUP} ORDER BY instance_id, inbox_id LIMIT $1"
            ))
            .await?;
        let rows = client.query(&select, &[&i64::from(limit)]).await?;
        Ok(rows.iter().map(catchup_row).collect())
    }

    async fn take_lease(
        &self,
        inbox: InboxId,
        node: String,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        // One statement: of nodes taking a free lease at once, the row lock lets one in and
        // the others then see it taken; the cursor it returns is the row as the lease found
        // it, after any pass that held the lease before.
        let take = concat!(
            "UPDATE catchup SET lease_owner = $2, lease_until_ms = ",
            now_ms!(),
            " + $3 WHERE inbox_id = $1 AND (lease_owner IS NULL OR lease_owner = $2
                 OR lease_until_ms <= ",
            now_ms!(),
            ") RETURNING cursor_id"
        );
        let client = self.pool.get().await?;
        let prepared = client.prepare_cached(take).await?;
        let taken = client
            .query_opt(&prepared, &[&inbox.as_str(), &node, &ttl_ms])
            .await?;
        Ok(taken.map(|row| row.get(0)))
    }

    async fn advance_cursor(
        &self,
        inbox: InboxId,
        node: String,
        cursor: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let advance = concat!(
            "UPDATE catchup SET cursor_id = greatest(cursor_id, $3), lease_until_ms = ",
            now_ms!(),
            " + $4 WHERE inbox_id = $1 AND lease_owner = $2"
        );
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&inbox.as_str(), &node, &cursor, &ttl_ms];
        Ok(self.catchup_execute(advance, &params).await? == 1)
    }

    async fn end_pass(
        &self,
        inbox: InboxId,
        node: String,
        end: PassEnd,
    ) -> Result<bool, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let newly_refused = match &end {
            PassEnd::Refused(reason) => {
                tx.execute(
                    "UPDATE catchup SET failing = $3
                     WHERE inbox_id = $1 AND lease_owner = $2 AND failing IS NULL",
                    &[&inbox.as_str(), &node, reason],
                )
                .await?
                    == 1
            }
            PassEnd::Succeeded => {
                tx.execute(
                    concat!(
                        "UPDATE catchup SET last_success_ms = ",
                        now_ms!(),
                        " WHERE inbox_id = $1 AND lease_owner = $2"
                    ),
                    &[&inbox.as_str(), &node],
                )
                .await?;
                false
            }
            PassEnd::Interrupted => false,
        };
        tx.execute(
            "UPDATE catchup SET lease_owner = NULL, lease_until_ms = 0
             WHERE inbox_id = $1 AND lease_owner = $2",
            &[&inbox.as_str(), &node],
        )
        .await?;
        tx.commit().await?;
        Ok(newly_refused)
    }

    async fn release_leases(&self, node: String) -> Result<u64, StoreError> {
        let release =
            "UPDATE catchup SET lease_owner = NULL, lease_until_ms = 0 WHERE lease_owner = $1";
        self.catchup_execute(release, &[&node]).await
    }

    async fn ask_state(&self, inbox: InboxId, guid: String) -> Result<AskState, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM deliveries WHERE inbox_id = $1 AND delivery_id = $2),
                        coalesce((SELECT asks FROM catchup_asks
                                  WHERE inbox_id = $1 AND guid = $2), 0)",
            )
            .await?;
        let row = client.query_one(&select, &[&inbox.as_str(), &guid]).await?;
        Ok(AskState {
            stored: row.get(0),
            asks: row.get(1),
        })
    }

    async fn record_ask(&self, inbox: InboxId, guid: String) -> Result<(), StoreError> {
        let insert = concat!(
            "INSERT INTO catchup_asks (inbox_id, guid, asks, asked_ms) VALUES ($1, $2, 1, ",
            now_ms!(),
            ") ON CONFLICT (inbox_id, guid) DO UPDATE SET asks = catchup_asks.asks + 1"
        );
        self.catchup_execute(insert, &[&inbox.as_str(), &guid])
            .await
            .map(drop)
    }

    async fn take_recovered(&self, inbox: InboxId, older_than_ms: i64) -> Result<u64, StoreError> {
        let recovered = self
            .catchup_execute(
                "DELETE FROM catchup_asks WHERE inbox_id = $1 AND EXISTS (
                     SELECT 1 FROM deliveries d
                     WHERE d.inbox_id = $1 AND d.delivery_id = catchup_asks.guid)",
                &[&inbox.as_str()],
            )
            .await?;
        let expire = concat!(
            "DELETE FROM catchup_asks WHERE inbox_id = $1 AND asked_ms < ",
            now_ms!(),
            " - $2"
        );
        self.catchup_execute(expire, &[&inbox.as_str(), &older_than_ms])
            .await?;
        Ok(recovered)
    }
}
