//! A group's count, first and last seen, and latest summary, through runs of one failure
//! and its neighbours.

use super::*;

#[test]
fn groups_keep_count_first_and_last_seen_and_the_latest_summary() {
    let ledger = Ledger::new();
    for n in 0..5 {
        fail(&ledger, &summary("often", &format!("attempt {n}"), None));
    }
    fail(&ledger, &summary("rare", "once", Some(7)));
    let groups = ledger.groups();
    assert_eq!(groups.len(), 2);
    assert_eq!((groups[0].code.as_str(), groups[0].count), ("often", 5));
    assert_eq!(groups[0].message, "attempt 4");
    assert!(groups[0].first_seen_ms <= groups[0].last_seen_ms);
    assert_eq!(groups[0].route, crate::outcome::UNMATCHED_ROUTE);
    assert_eq!(groups[1].location.as_deref(), Some("src/hook.rs:7"));
    assert_ne!(groups[0].fingerprint, groups[1].fingerprint);
    // A read hands over and zeroes what threads held: counts are not taken twice.
    assert_eq!(ledger.groups()[0].count, 5);
}

/// A group's latest message and chain are its latest failure's, through runs of the same
/// text (which are not copied again) and changes of either, read between failures or not.
#[test]
fn a_groups_latest_message_and_chain_follow_every_change() {
    let ledger = Ledger::new();
    let steps = [
        ("same length", "cause a"),
        ("same length", "cause a"),
        ("same lengtH", "cause a"),
        ("same lengtH", "cause b"),
        ("shorter", ""),
        ("shorter", ""),
        ("", "cause c"),
    ];
    for (n, (message, chain)) in steps.into_iter().enumerate() {
        let mut failure = summary("runs", message, None);
        failure.chain = chain.to_owned();
        fail(&ledger, &failure);
        if n % 2 == 0 {
            let groups = ledger.groups();
            assert_eq!(
                (groups[0].message.as_str(), groups[0].chain.as_str()),
                (message, chain)
            );
        }
    }
    let groups = ledger.groups();
    assert_eq!(
        (groups[0].message.as_str(), groups[0].chain.as_str()),
        ("", "cause c")
    );
    assert_eq!(groups[0].count, 7);
}

/// Runs of one failure and failures that differ from the one before in one label each (the
/// route, the code, the status, the outcome, the panic site), before and after the thread's
/// series table is emptied, count each under its own series and its own group: what the
/// thread keeps of its last failure is used only for the same failure.
#[test]
fn runs_of_the_same_failure_and_their_neighbours_count_under_their_own_series_and_groups() {
    use std::collections::HashMap;

    let ledger = Ledger::new();
    let (a, b) = ("/a", "/b");
    let handled = Outcome::Handled;
    let rejected = Outcome::Rejected;
    // Each differs from the one before in one label at most.
    let pattern = [
        (a, "one", 422, handled, None),
        (a, "one", 422, handled, None),
        (b, "one", 422, handled, None),
        (b, "one", 422, handled, None),
        (b, "two", 422, handled, None),
        (b, "one", 422, handled, None),
        (b, "one", 409, handled, None),
        (b, "one", 422, handled, None),
        (b, "one", 422, rejected, None),
        (b, "one", 422, handled, None),
        (b, "one", 422, handled, Some(7)),
        (b, "one", 422, handled, Some(7)),
        (b, "one", 422, handled, None),
    ];
    let mut series = HashMap::new();
    let mut groups = HashMap::new();
    for pass in 0..3 {
        for &(route, code, status, outcome, line) in &pattern {
            let mut meta = meta();
            meta.refine_route(crate::request::InternedRoute {
                text: route,
                index: u16::from(route == b),
            });
            let mut summary = summary(code, "m", line);
            summary.status = StatusCode::from_u16(status).unwrap();
            summary.outcome = outcome;
            ledger.start();
            let _ = ledger.fail(&summary, &meta);
            ledger.finish_answered(outcome, summary.status, RouteKey::Unmatched);
            *series.entry((route, code, status)).or_insert(0) += 1;
            *groups.entry((route, code, outcome, line)).or_insert(0) += 1;
        }
        // The thread's table emptied: past its size, it hands over and starts again.
        for n in 0..SERIES_PER_THREAD + pass {
            let mut failures = lock(&ledger.stripe().0.failures);
            let route = format!("/fill{n}");
            failures
                .series
                .record_local(&route, "fill", 400, &ledger.inner.series);
        }
    }
    let counted: HashMap<_, _> = ledger
        .snapshot()
        .series
        .into_iter()
        .filter(|s| s.code != "fill")
        .map(|s| ((s.route, s.code, s.status), s.count))
        .collect();
    let expected: HashMap<_, _> = series
        .into_iter()
        .map(|((route, code, status), n)| ((route.to_owned(), code.to_owned(), status), n))
        .collect();
    assert_eq!(counted, expected);
    let counted: HashMap<_, _> = ledger
        .groups()
        .into_iter()
        .map(|g| ((g.route, g.code, g.outcome, g.location), g.count))
        .collect();
    let expected: HashMap<_, _> = groups
        .into_iter()
        .map(|((route, code, outcome, line), n)| {
            let location = line.map(|line| format!("src/hook.rs:{line}"));
            ((route.to_owned(), code.to_owned(), outcome, location), n)
        })
        .collect();
    assert_eq!(counted, expected);
}

/// A group's trend counts each of its failures once: a run a thread tallies between two
/// hand-overs, and the failures after a read, when the thread's entry serves again.
#[test]
fn a_groups_trend_counts_each_failure_once() {
    let ledger = Ledger::new();
    let count_and_trend = |ledger: &Ledger| {
        let groups = ledger.groups();
        let trend: u64 = groups[0].per_minute.iter().map(|&n| u64::from(n)).sum();
        (groups[0].count, trend)
    };
    for _ in 0..3 {
        fail(&ledger, &summary("trend", "again", None));
    }
    assert_eq!(count_and_trend(&ledger), (3, 3));
    for _ in 0..2 {
        fail(&ledger, &summary("trend", "again", None));
    }
    assert_eq!(count_and_trend(&ledger), (5, 5));
}
