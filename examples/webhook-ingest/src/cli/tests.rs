use super::*;

#[test]
fn durations_read_as_the_flags_write_them_and_print_back() {
    for (text, duration, shown) in [
        ("500ms", Duration::from_millis(500), "500ms"),
        ("5s", Duration::from_secs(5), "5s"),
        ("1.5", Duration::from_millis(1500), "1500ms"),
        ("60", Duration::from_secs(60), "60s"),
        ("10m", Duration::from_secs(600), "10m"),
        ("24h", Duration::from_secs(86_400), "24h"),
    ] {
        let span: Span = text.parse().unwrap();
        assert_eq!(span.0, duration, "{text}");
        assert_eq!(span.to_string(), shown, "{text}");
    }
    for bad in ["", "0", "0s", "-1s", "soon", "5 s", "NaNs"] {
        assert!(bad.parse::<Span>().is_err(), "{bad:?}");
    }
}

#[test]
fn a_bad_flag_is_named_in_its_error() {
    for (args, flag) in [
        (&["--port", "http"][..], "--port"),
        (&["--listen", "localhost"][..], "--listen"),
        (&["--max-connections", "0"][..], "--max-connections"),
        (&["--h2-ping-timeout", "5x"][..], "--h2-ping-timeout"),
        (&["--port", "1", "--listen", "0.0.0.0:1"][..], "--listen"),
        (&["--frobnicate"][..], "--frobnicate"),
    ] {
        let argv = std::iter::once("webhook-ingest").chain(args.iter().copied());
        let error = Cli::try_parse_args(argv).err().unwrap().to_string();
        assert!(error.contains(flag), "{args:?}: {error}");
    }
    let error = Cli::try_parse_args(["webhook-ingest", "--body-timeout", "9s"]).err();
    assert!(error.unwrap().to_string().contains("--body-timeout"));
}

#[test]
fn the_body_limit_stops_where_the_spool_can_still_keep_a_body() {
    let limit =
        |bytes: usize| Cli::try_parse_args(["webhook-ingest", "--body-limit", &bytes.to_string()]);
    assert_eq!(
        limit(crate::MAX_BODY_LIMIT).unwrap().config().body_limit,
        crate::MAX_BODY_LIMIT
    );
    let error = limit(crate::MAX_BODY_LIMIT + 1).err().unwrap().to_string();
    assert!(
        error.contains("--body-limit must be at most 33554432 bytes"),
        "{error}"
    );
}

#[test]
fn port_is_loopback_and_listen_is_taken_as_given() {
    let cli = Cli::try_parse_from(["webhook-ingest", "--port", "0"]).unwrap();
    assert_eq!(cli.listen_addr(), "127.0.0.1:0".parse().unwrap());
    let cli = Cli::try_parse_from(["webhook-ingest", "--listen", "0.0.0.0:8080"]).unwrap();
    assert_eq!(cli.listen_addr(), "0.0.0.0:8080".parse().unwrap());
}
