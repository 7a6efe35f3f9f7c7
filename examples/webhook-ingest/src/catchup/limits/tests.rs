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
    classify(
        StatusCode::from_u16(status).unwrap(),
        &headers(pairs),
        now,
        &GITHUB,
    )
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
        exhausted(&headers(&[("x-ratelimit-remaining", "1")]), now, &GITHUB),
        None
    );
    let reset = (NOW + 30).to_string();
    let last = headers(&[
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", reset.as_str()),
    ]);
    assert_eq!(
        exhausted(&last, now, &GITHUB),
        Some(Duration::from_secs(30))
    );
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

fn gitlab_at(status: u16, pairs: &[(&'static str, &str)]) -> Verdict {
    let now = UNIX_EPOCH + Duration::from_secs(NOW);
    classify(
        StatusCode::from_u16(status).unwrap(),
        &headers(pairs),
        now,
        &GITLAB,
    )
}

#[test]
fn gitlab_limits_are_read_from_its_own_headers_and_its_403_is_a_permission() {
    let reset = (NOW + 45).to_string();
    let limited = [
        ("ratelimit-remaining", "0"),
        ("ratelimit-reset", reset.as_str()),
    ];
    assert_eq!(
        gitlab_at(429, &limited),
        Verdict::Wait(Duration::from_secs(45))
    );
    assert_eq!(
        gitlab_at(429, &[("retry-after", "12"), ("ratelimit-remaining", "0")]),
        Verdict::Wait(Duration::from_secs(12)),
        "Retry-After first"
    );
    assert_eq!(
        gitlab_at(
            429,
            &[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", reset.as_str())
            ]
        ),
        Verdict::Wait(SECONDARY_LIMIT_WAIT),
        "GitHub's headers mean nothing from GitLab"
    );
    for pairs in [&limited[..], &[("retry-after", "7")]] {
        let Verdict::Refused(reason) = gitlab_at(403, pairs) else {
            panic!("GitLab's 403 is never a limit");
        };
        assert!(reason.starts_with("GitLab answered 403"), "{reason}");
    }
    let Verdict::Refused(reason) = gitlab_at(401, &[]) else {
        panic!("401 is refused");
    };
    assert!(reason.starts_with("GitLab answered 401"), "{reason}");
    assert_eq!(gitlab_at(502, &[]), Verdict::Retry);
    let now = UNIX_EPOCH + Duration::from_secs(NOW);
    assert_eq!(
        exhausted(&headers(&limited), now, &GITLAB),
        Some(Duration::from_secs(45))
    );
    assert_eq!(
        exhausted(&headers(&[("ratelimit-remaining", "3")]), now, &GITLAB),
        None
    );
}
