use super::redacted;

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
