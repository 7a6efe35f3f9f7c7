use super::*;

/// Each second keeps up to the rate, and a new second starts from none.
#[test]
fn the_rate_keeps_at_most_its_count_in_each_second() {
    let counts = Refusals::new(3);
    let kept = |second| (0..5).filter(|_| counts.rate.take(second)).count();
    assert_eq!(kept(0), 3);
    assert_eq!(kept(1), 3);
    assert_eq!(kept(1), 0);
    assert!(!Refusals::new(0).rate.take(0));
}

/// What `/metrics` shows of `refusals`, with every one of its counts registered.
fn exposition(refusals: &Refusals) -> String {
    let mut registry = Registry::default();
    refusals.register(&mut registry);
    refusals.register_at_drain(&mut registry);
    refusals.register_unverified(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
    text
}

/// Each way of being refused moves its own count and no other, read back as counted and
/// under its own name in `/metrics`; the unverified spool's two reasons are shown before the
/// first.
#[test]
fn each_refusal_moves_its_own_count_under_its_own_name() {
    let refusals = Refusals::new(1);
    let before = exposition(&refusals);
    for zero in [
        "webhook_ingest_spool_refused_total 0",
        "webhook_ingest_unverified_refused_total{reason=\"full\"} 0",
        "webhook_ingest_unverified_refused_total{reason=\"too_large\"} 0",
    ] {
        assert!(before.contains(zero), "{zero} missing from:\n{before}");
    }
    (0..2).for_each(|_| refusals.refused_at_drain());
    // What `record_refusal` moves, beside a store: each a count of its own.
    (0..4).for_each(|_| {
        refusals.recorded.inc();
    });
    (0..2).for_each(|_| {
        refusals.unrecorded.inc();
    });
    (0..3).for_each(|_| {
        refusals.skipped.inc();
    });
    (0..2).for_each(|_| refusals.refused_unverified_full());
    (0..3).for_each(|_| refusals.refused_unverified_too_large());
    assert_eq!(refusals.at_drain(), 2);
    assert_eq!(refusals.unverified(), (2, 3));
    let after = exposition(&refusals);
    for line in [
        "webhook_ingest_spool_refused_total 2",
        "webhook_ingest_unverified_refused_total{reason=\"full\"} 2",
        "webhook_ingest_unverified_refused_total{reason=\"too_large\"} 3",
        "webhook_ingest_refusals_recorded_total 4",
        "webhook_ingest_refusals_unrecorded_total 2",
        "webhook_ingest_refusals_skipped_total 3",
    ] {
        assert!(after.contains(line), "{line} missing from:\n{after}");
    }
    assert_eq!(
        (
            refusals.recorded(),
            refusals.unrecorded(),
            refusals.skipped()
        ),
        (4, 2, 3)
    );
}
