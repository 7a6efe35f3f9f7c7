//! Catch-up's rows in SQLite (see `store/catchup.rs`): its schema, brought by a migration of
//! `schema.rs`, and its statements. Every time is the database's clock in Unix milliseconds.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
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
    hook_id INTEGER NOT NULL,
    token TEXT,
    app_id INTEGER,
    private_key TEXT,
    cursor_id INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until_ms INTEGER NOT NULL DEFAULT 0,
    failing TEXT,
    last_success_ms INTEGER NOT NULL
);
CREATE TABLE catchup_asks (
    inbox_id TEXT NOT NULL,
    guid TEXT NOT NULL,
    asks INTEGER NOT NULL,
    asked_ms INTEGER NOT NULL,
    PRIMARY KEY (inbox_id, guid)
) WITHOUT ROWID;
";

/// The database's clock, in Unix milliseconds.
macro_rules! now_ms {
    () => {
        "CAST(unixepoch('subsec') * 1000 AS INTEGER)"
    };
}

fn catchup_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<CatchUpRow> {
    Ok(CatchUpRow {
        instance: row.get(0)?,
        inbox: row.get(1)?,
        hook_kind: row.get(2)?,
        hook_owner: row.get(3)?,
        hook_id: row.get(4)?,
        token: row.get(5)?,
        app_id: row.get(6)?,
        private_key: row.get(7)?,
        cursor: row.get(8)?,
        failing: row.get(9)?,
        last_success_ms: row.get(10)?,
        pending: row.get(11)?,
    })
}

#[async_trait]
impl CatchUps for SqliteStore {
    async fn set_catchup(&self, row: CatchUpRow) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.prepare_cached(concat!(
                "INSERT INTO catchup (inbox_id, instance_id, hook_kind, hook_owner, hook_id,
                     token, app_id, private_key, last_success_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ",
                now_ms!(),
                ")
                 ON CONFLICT (inbox_id) DO UPDATE SET
                     cursor_id = CASE WHEN (hook_kind, hook_owner, hook_id) =
                         (excluded.hook_kind, excluded.hook_owner, excluded.hook_id)
                         THEN cursor_id ELSE 0 END,
                     hook_kind = excluded.hook_kind, hook_owner = excluded.hook_owner,
                     hook_id = excluded.hook_id, token = excluded.token,
                     app_id = excluded.app_id, private_key = excluded.private_key,
                     failing = NULL"
            ))?
            .execute(params![
                row.inbox,
                row.instance,
                row.hook_kind,
                row.hook_owner,
                row.hook_id,
                row.token,
                row.app_id,
                row.private_key
            ])
            .map(drop)
        })
        .await
    }

    async fn catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<Option<CatchUpRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(&format!(
                "{SELECT_CATCHUP} WHERE inbox_id = ?1 AND instance_id = ?2"
            ))?
            .query_row(params![inbox, instance], catchup_row)
            .optional()
        })
        .await
    }

    async fn delete_catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM catchup WHERE inbox_id = ?1 AND instance_id = ?2")?
                .execute(params![inbox, instance])?
                == 1;
            if deleted {
                tx.prepare_cached("DELETE FROM catchup_asks WHERE inbox_id = ?1")?
                    .execute([&inbox])?;
            }
            Ok(deleted)
        })
        .await
    }

    async fn catchups(&self, limit: u32) -> Result<Vec<CatchUpRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(&format!(
                "{SELECT_CATCHUP} ORDER BY instance_id, inbox_id LIMIT ?1"
            ))?
            .query_map([limit], catchup_row)?
            .collect()
        })
        .await
    }

    async fn take_lease(
        &self,
        inbox: InboxId,
        node: String,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.write(move |tx| {
            tx.prepare_cached(concat!(
                "UPDATE catchup SET lease_owner = ?2, lease_until_ms = ",
                now_ms!(),
                " + ?3 WHERE inbox_id = ?1 AND (lease_owner IS NULL OR lease_owner = ?2
                     OR lease_until_ms <= ",
                now_ms!(),
                ") RETURNING cursor_id"
            ))?
            .query_row(params![inbox, node, ttl_ms], |row| row.get(0))
            .optional()
        })
        .await
    }

    async fn advance_cursor(
        &self,
        inbox: InboxId,
        node: String,
        cursor: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| {
            Ok(tx
                .prepare_cached(concat!(
                    "UPDATE catchup SET cursor_id = max(cursor_id, ?3), lease_until_ms = ",
                    now_ms!(),
                    " + ?4 WHERE inbox_id = ?1 AND lease_owner = ?2"
                ))?
                .execute(params![inbox, node, cursor, ttl_ms])?
                == 1)
        })
        .await
    }

    async fn end_pass(
        &self,
        inbox: InboxId,
        node: String,
        end: PassEnd,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| {
            let newly_refused = match &end {
                PassEnd::Refused(reason) => {
                    tx.prepare_cached(
                        "UPDATE catchup SET failing = ?3
                         WHERE inbox_id = ?1 AND lease_owner = ?2 AND failing IS NULL",
                    )?
                    .execute(params![inbox, node, reason])?
                        == 1
                }
                PassEnd::Succeeded => {
                    tx.prepare_cached(concat!(
                        "UPDATE catchup SET last_success_ms = ",
                        now_ms!(),
                        " WHERE inbox_id = ?1 AND lease_owner = ?2"
                    ))?
                    .execute(params![inbox, node])?;
                    false
                }
                PassEnd::Interrupted => false,
            };
            tx.prepare_cached(
                "UPDATE catchup SET lease_owner = NULL, lease_until_ms = 0
                 WHERE inbox_id = ?1 AND lease_owner = ?2",
            )?
            .execute(params![inbox, node])?;
            Ok(newly_refused)
        })
        .await
    }

    async fn release_leases(&self, node: String) -> Result<u64, StoreError> {
        self.write(move |tx| {
            tx.prepare_cached(
                "UPDATE catchup SET lease_owner = NULL, lease_until_ms = 0 WHERE lease_owner = ?1",
            )?
            .execute([node])
            .map(|released| released as u64)
        })
        .await
    }

    async fn ask_state(&self, inbox: InboxId, guid: String) -> Result<AskState, StoreError> {
        self.read(move |c| {
            c.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM deliveries WHERE inbox_id = ?1 AND delivery_id = ?2),
                        coalesce((SELECT asks FROM catchup_asks
                                  WHERE inbox_id = ?1 AND guid = ?2), 0)",
            )?
            .query_row(params![inbox, guid], |row| {
                Ok(AskState {
                    stored: row.get(0)?,
                    asks: row.get(1)?,
                })
            })
        })
        .await
    }

    async fn record_ask(&self, inbox: InboxId, guid: String) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.prepare_cached(concat!(
                "INSERT INTO catchup_asks (inbox_id, guid, asks, asked_ms) VALUES (?1, ?2, 1, ",
                now_ms!(),
                ") ON CONFLICT (inbox_id, guid) DO UPDATE SET asks = asks + 1"
            ))?
            .execute(params![inbox, guid])
            .map(drop)
        })
        .await
    }

    async fn take_recovered(&self, inbox: InboxId, older_than_ms: i64) -> Result<u64, StoreError> {
        self.write(move |tx| {
            let recovered = tx
                .prepare_cached(
                    "DELETE FROM catchup_asks WHERE inbox_id = ?1 AND EXISTS (
                         SELECT 1 FROM deliveries d
                         WHERE d.inbox_id = ?1 AND d.delivery_id = catchup_asks.guid)",
                )?
                .execute([&inbox])?;
            tx.prepare_cached(concat!(
                "DELETE FROM catchup_asks WHERE inbox_id = ?1 AND asked_ms < ",
                now_ms!(),
                " - ?2"
            ))?
            .execute(params![inbox, older_than_ms])?;
            Ok(recovered as u64)
        })
        .await
    }
}
