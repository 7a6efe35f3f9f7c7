use std::time::Duration;

use super::{redacted, OpenOptions, Store, StoreError};

#[test]
fn a_postgres_password_never_survives_redaction() {
    for (url, shown) in [
        (
            "postgres://ingest:s3cr3t@db:5432/hooks",
            "postgres://ingest:***@db:5432/hooks",
        ),
        (
            "postgresql://ingest:p@ss@db/hooks",
            "postgresql://ingest:***@db/hooks",
        ),
        (
            "postgres://db/hooks?user=ingest&password=s3cr3t",
            "postgres://db/hooks?user=ingest&password=***",
        ),
        ("postgres://ingest@db/hooks", "postgres://ingest@db/hooks"),
        ("webhook-ingest.db", "webhook-ingest.db"),
    ] {
        assert_eq!(redacted(url), shown);
    }
}

/// A store opened in the background answers "connecting", is not open and says nothing of
/// its durability until its database is reached; then it is the database's store.
#[tokio::test(flavor = "current_thread")]
async fn a_store_opening_in_the_background_is_the_databases_once_reached() {
    let store = Store::open_in_background(":memory:", OpenOptions::default());
    // The opening task has not run yet: nothing here has yielded to it.
    assert!(!store.is_open());
    assert_eq!(store.not_durable(), None);
    assert!(matches!(store.health().await, Err(StoreError::Connecting)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !store.is_open() {
        assert!(tokio::time::Instant::now() < deadline, "never opened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(store.health().await.is_ok());
    let why = store
        .not_durable()
        .expect("an in-memory store is not durable");
    assert!(why.contains("in memory"), "{why}");
}
