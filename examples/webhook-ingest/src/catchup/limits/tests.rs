use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        headers.insert(*name, value.parse().unwrap());
    }
    headers
}

const NOW: u64 = 1_700_000_000;

fn classify_at(status: u16, pairs: &[(&'static str, &str)]) -> Verdict {
    let now = UNIX_EPOCH + Duration::from_secs(NOW);
    classify(StatusCode::from_u16(status).unwrap(), &headers(pairs), now)
}

#[test]
fn a_secondary_limit_waits_as_long_as_retry_after_says() {
    assert_eq!(
        classify_at(403, &[("retry-after", "7")]),
        Verdict::Wait(Duration::from_secs(7))
    );
    assert_eq!(
        classify_at(429, &[("retry-after", "30")]),
        Verdict::Wait(Duration::from_secs(30))
    );
    assert_eq!(classify_at(429, &[]), Verdict::Wait(SECONDARY_LIMIT_WAIT));
    assert_eq!(
        classify_at(429, &[("retry-after", "99999")]),
        Verdict::Wait(Duration::from_secs(3600)),
        "a header is believed up to an hour"
    );
    assert_eq!(
        classify_at(429, &[("retry-after", "3599")]),
        Verdict::Wait(Duration::from_secs(3599))
    );
}

#[test]
fn the_primary_limit_waits_for_the_reset() {
    let reset = (NOW + 120).to_string();
    let pairs = [
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", reset.as_str()),
    ];
    assert_eq!(
        classify_at(403, &pairs),
        Verdict::Wait(Duration::from_secs(120))
    );
    let past = (NOW - 5).to_string();
    let pairs = [
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", past.as_str()),
    ];
    assert_eq!(
        classify_at(403, &pairs),
        Verdict::Wait(Duration::from_secs(1))
    );
    let now = UNIX_EPOCH + Duration::from_secs(NOW);
    assert_eq!(
        exhausted(&headers(&[("x-ratelimit-remaining", "1")]), now),
        None
    );
    let reset = (NOW + 30).to_string();
    let last = headers(&[
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", reset.as_str()),
    ]);
    assert_eq!(exhausted(&last, now), Some(Duration::from_secs(30)));
}

#[test]
fn refused_credentials_are_lasting_and_github_trouble_is_retried() {
    for status in [401, 404, 422] {
        assert!(
            matches!(classify_at(status, &[]), Verdict::Refused(_)),
            "{status}"
        );
    }
    let forbidden = classify_at(403, &[("x-ratelimit-remaining", "4999")]);
    assert!(
        matches!(forbidden, Verdict::Refused(_)),
        "a 403 with requests left is a permission"
    );
    for status in [500, 502, 503] {
        assert_eq!(classify_at(status, &[]), Verdict::Retry, "{status}");
    }
}
