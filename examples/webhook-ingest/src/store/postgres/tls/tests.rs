use super::*;

#[test]
fn sslmode_is_read_from_the_url_and_left_out_of_what_tokio_postgres_reads() {
    for (url, mode, rest) in [
        (
            "postgres://u:p@h/db",
            SslMode::Prefer,
            "postgres://u:p@h/db",
        ),
        (
            "postgres://u:p@h/db?sslmode=disable",
            SslMode::Disable,
            "postgres://u:p@h/db",
        ),
        (
            "postgres://u:p@h/db?application_name=a&sslmode=verify-full",
            SslMode::VerifyFull,
            "postgres://u:p@h/db?application_name=a",
        ),
        (
            "postgres://h/db?sslmode=require&user=u",
            SslMode::Require,
            "postgres://h/db?user=u",
        ),
    ] {
        let (read, left) = SslMode::from_url(url).unwrap();
        assert_eq!((read, left.as_str()), (mode, rest), "{url}");
    }
    for refused in ["verify-ca", "allow", "on"] {
        let url = format!("postgres://u:secret@h/db?sslmode={refused}");
        let error = SslMode::from_url(&url).unwrap_err().to_string();
        assert!(
            error.contains(refused) && !error.contains("secret"),
            "{error}"
        );
    }
}

#[test]
fn a_ca_file_without_a_certificate_is_refused_by_name() {
    let path = std::env::temp_dir().join(format!("faultline-no-ca-{}.pem", std::process::id()));
    std::fs::write(&path, "not a certificate\n").unwrap();
    let error = connector(SslMode::VerifyFull, Some(&path))
        .err()
        .unwrap()
        .to_string();
    let _ = std::fs::remove_file(&path);
    assert!(error.contains("faultline-no-ca-"), "{error}");
    let missing = connector(SslMode::VerifyFull, Some(Path::new("/nonexistent/ca.pem")));
    assert!(missing
        .err()
        .unwrap()
        .to_string()
        .contains("/nonexistent/ca.pem"));
}
