use super::*;

/// Each second keeps up to the rate, and a new second starts from none.
#[test]
fn the_rate_keeps_at_most_its_count_in_each_second() {
    let counts = RefusalCounts::new(3);
    let kept = |second| (0..5).filter(|_| counts.rate.take(second)).count();
    assert_eq!(kept(0), 3);
    assert_eq!(kept(1), 3);
    assert_eq!(kept(1), 0);
    assert!(!RefusalCounts::new(0).rate.take(0));
}
