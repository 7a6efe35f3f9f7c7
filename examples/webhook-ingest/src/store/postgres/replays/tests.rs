//! The purge on a real PostgreSQL, when `WEBHOOK_INGEST_TEST_POSTGRES` names a database: in a
//! schema of its own, where no other test's write purges these rows and no purge here deletes
//! another test's (every write purges whatever rows its moment finds expired).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use faultline::webhooks::{ReplayKey, Seen};

use crate::store::postgres::tests::database_url;
use crate::store::postgres::PgStore;
use crate::store::Replays;

/// `url` with its connections' `search_path` set to `schema`: the store's migrations make
/// its tables there.
fn in_schema(url: &str, schema: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

fn key(n: u8) -> ReplayKey {
    ReplayKey::from_bytes([n; 32])
}

/// As `expired_rows_are_deleted_a_few_per_write` of `tests/replays.rs` on SQLite: each write
/// deletes `PURGED_PER_REMEMBER` expired rows at most, and every one in the end.
#[tokio::test]
async fn expired_rows_are_deleted_a_few_per_write() {
    let Some(url) = database_url("expired_rows_are_deleted_a_few_per_write") else {
        return;
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let schema = format!("purge_{}_{nanos}", std::process::id());
    let admin = PgStore::open(&url, None).await.unwrap();
    let client = admin.pool.get().await.unwrap();
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let store = PgStore::open(&in_schema(&url, &schema), None)
        .await
        .unwrap();
    let count = format!("SELECT count(*) FROM {schema}.replays");
    let rows = || async {
        let row = client.query_one(&count, &[]).await.unwrap();
        usize::try_from(row.get::<_, i64>(0)).unwrap()
    };
    let purged = usize::try_from(super::PURGED_PER_REMEMBER).unwrap();

    let start = UNIX_EPOCH + Duration::from_secs(1_000_000);
    let (soon, later) = (
        start + Duration::from_secs(1),
        start + Duration::from_secs(60),
    );
    let expiring = 2 * purged + 4;
    for n in 0..expiring {
        let n = u8::try_from(n).unwrap();
        assert_eq!(
            store.reserve_at(key(n), soon, start).await.unwrap(),
            Seen::First
        );
    }
    assert_eq!(rows().await, expiring);
    // Past their expiry, each write adds its key and deletes at most a few expired ones.
    let after = soon + Duration::from_secs(1);
    let mut expected = expiring;
    for n in 200..203 {
        store.reserve_at(key(n), later, after).await.unwrap();
        let expired = expected - usize::from(n - 200);
        expected = expected + 1 - expired.min(purged);
        assert_eq!(rows().await, expected);
    }
    // Every expired row is gone; the live ones stay.
    assert_eq!(expected, 3);
    assert_eq!(
        store.reserve_at(key(201), later, after).await.unwrap(),
        Seen::Held
    );
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
