//! What the PostgreSQL store's unit tests share: the database they run on.

/// The database of `WEBHOOK_INGEST_TEST_POSTGRES`, or `None` (said on stderr) when none was
/// given; a failure instead when `FAULTLINE_REQUIRE_TOOLS` is set, as in CI's test/tools step,
/// where a missing database is a failure, not a skip.
pub(super) fn database_url(test: &str) -> Option<String> {
    let url = std::env::var("WEBHOOK_INGEST_TEST_POSTGRES")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        let required =
            std::env::var("FAULTLINE_REQUIRE_TOOLS").is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(
            !required,
            "{test}: no WEBHOOK_INGEST_TEST_POSTGRES and FAULTLINE_REQUIRE_TOOLS is set"
        );
        eprintln!("{test}: skipped: PostgreSQL not found, no WEBHOOK_INGEST_TEST_POSTGRES");
    }
    url
}
