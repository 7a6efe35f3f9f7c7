use super::*;

#[test]
fn a_quota_gives_per_window_events_then_refuses_until_the_next_window() {
    let quota = Quota::default();
    assert!((0..3).all(|_| quota.take(7, 3)));
    assert!(!quota.take(7, 3));
    assert!(quota.take(8, 3));
    // A thread that read the clock late does not move the quota back to window 7.
    assert!(quota.take(7, 3) && quota.take(7, 3));
    assert!(!quota.take(7, 3) && !quota.take(8, 3));
    assert!(!Quota::default().take(1, 0));
    // Far into the run, and across the wrap of the window numbers.
    let late = Quota::starting(u64::MAX >> WRITTEN_BITS);
    assert!(late.take(u64::MAX >> WRITTEN_BITS, 1));
    assert!(!late.take(u64::MAX >> WRITTEN_BITS, 1));
    assert!(late.take(0, 1) && !late.take(0, 1));
}

#[test]
fn threads_share_one_quota_and_hand_over_what_they_held_back() {
    let shared = Mutex::new(Quotas::new(16));
    let written = std::sync::atomic::AtomicU64::new(0);
    let told = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                let mut cache = CachedQuotas::default();
                for _ in 0..1000 {
                    if let Verdict::Write { suppressed_since } = cache.judge(42, 1, 5, &shared) {
                        written.fetch_add(1, Ordering::Relaxed);
                        told.fetch_add(suppressed_since, Ordering::Relaxed);
                    }
                }
                cache.hand_over_all();
            });
        }
    });
    assert_eq!(written.into_inner(), 5);
    let quotas = shared.lock().unwrap();
    let held = quotas.table[&42].0.held.load(Ordering::Relaxed);
    // Every suppressed failure is told by an event or still held for the next one.
    assert_eq!(told.into_inner() + held, 8000 - 5);
}

#[test]
fn the_table_stays_bounded_and_marks_what_it_evicts() {
    let mut quotas = Quotas::new(4);
    let first = quotas.get(0, 0);
    for fingerprint in 1..100 {
        quotas.get(fingerprint, 0);
        // Filled to the bound, then held there: a new quota evicts exactly one.
        assert_eq!(quotas.len(), (fingerprint as usize + 1).min(4));
    }
    assert!(first.evicted.load(Ordering::Relaxed));
}

#[test]
fn the_table_evicts_the_quota_met_least_recently() {
    const MAX: u64 = 8;
    let mut quotas = Quotas::new(MAX as usize);
    let met: Vec<_> = (0..MAX)
        .map(|fingerprint| quotas.get(fingerprint, 0))
        .collect();
    // Every quota but the last met again: the last is now the least recently met.
    for fingerprint in 0..MAX - 1 {
        quotas.get(fingerprint, 0);
    }
    quotas.get(MAX, 0);
    let evicted: Vec<bool> = met
        .iter()
        .map(|quota| quota.evicted.load(Ordering::Relaxed))
        .collect();
    let mut expected = vec![false; MAX as usize];
    expected[MAX as usize - 1] = true;
    assert_eq!(evicted, expected);
}

/// The window numbers' range: what wraps, and where "later" ends.
const WINDOWS: u64 = 1 << (u64::BITS - WRITTEN_BITS);

#[test]
fn a_later_window_is_any_less_than_half_the_range_ahead() {
    // Windows well apart, one of them a multiple of the written count's room away, are
    // still different windows with a quota each.
    for ahead in [2, 100, 1 << 15, 1 << 16, 1 << 32, WINDOWS / 2 - 1] {
        let quota = Quota::starting(1);
        assert!(quota.take(1, 1) && !quota.take(1, 1), "{ahead}");
        assert!(
            quota.take(1 + ahead, 1),
            "{ahead} windows on is a new window"
        );
        assert!(!quota.take(1 + ahead, 1), "{ahead}");
        // Back at the first window: stale, so it counts against the later one.
        assert!(!quota.take(1, 1), "{ahead}");
    }
}

#[test]
fn a_window_half_the_range_ahead_or_more_is_an_earlier_one() {
    for ahead in [WINDOWS / 2, WINDOWS / 2 + 1, WINDOWS - 1] {
        let quota = Quota::starting(3);
        assert!(quota.take(3, 1) && !quota.take(3, 1), "{ahead}");
        // The window number wraps: 3 + ahead is behind window 3, whose quota is spent.
        assert!(
            !quota.take((3 + ahead) % WINDOWS, 1),
            "{ahead} windows on is stale"
        );
    }
}

/// Judges `n` failures of `fingerprint` in `window` by `cache`; the events written and the
/// suppressed failures they told.
fn judge_n(
    cache: &mut CachedQuotas,
    shared: &Mutex<Quotas>,
    fingerprint: u64,
    window: u64,
    n: u64,
) -> (u64, u64) {
    let (mut written, mut told) = (0, 0);
    for _ in 0..n {
        if let Verdict::Write { suppressed_since } = cache.judge(fingerprint, window, 1, shared) {
            written += 1;
            told += suppressed_since;
        }
    }
    (written, told)
}

#[test]
fn a_written_event_tells_its_own_threads_suppressed_failures_and_those_handed_over() {
    let shared = Mutex::new(Quotas::new(16));
    let (mut mine, mut other) = (CachedQuotas::default(), CachedQuotas::default());
    assert_eq!(judge_n(&mut mine, &shared, 42, 1, 4), (1, 0));
    // The other thread suppresses enough to hand its count over.
    assert_eq!(judge_n(&mut other, &shared, 42, 1, HAND_OVER_EVERY), (0, 0));
    assert_eq!(
        judge_n(&mut mine, &shared, 42, 2, 1),
        (1, 3 + HAND_OVER_EVERY)
    );
}

#[test]
fn a_thread_hands_its_suppressed_count_over_once_per_hand_over_interval() {
    let shared = Mutex::new(Quotas::new(16));
    let (mut mine, mut other) = (CachedQuotas::default(), CachedQuotas::default());
    assert_eq!(judge_n(&mut mine, &shared, 42, 1, 1), (1, 0));
    // Below the interval, the other thread keeps its count to itself: no shared write.
    assert_eq!(
        judge_n(&mut other, &shared, 42, 1, HAND_OVER_EVERY - 1),
        (0, 0)
    );
    assert_eq!(judge_n(&mut mine, &shared, 42, 2, 1), (1, 0));
    // The next one makes the interval: the whole count is handed over at once.
    assert_eq!(judge_n(&mut other, &shared, 42, 2, 1), (0, 0));
    assert_eq!(judge_n(&mut mine, &shared, 42, 3, 1), (1, HAND_OVER_EVERY));
}

#[test]
fn a_threads_cache_keeps_its_fingerprints_up_to_its_bound_then_starts_again() {
    let shared = Mutex::new(Quotas::new(4 * CACHED_PER_THREAD));
    let (mut mine, mut other) = (CachedQuotas::default(), CachedQuotas::default());
    // Fingerprint 0 is written, then suppressed twice: held by this thread alone.
    assert_eq!(judge_n(&mut mine, &shared, 0, 1, 3), (1, 0));
    for fingerprint in 1..CACHED_PER_THREAD as u64 {
        judge_n(&mut mine, &shared, fingerprint, 1, 1);
        assert_eq!(mine.entries.len(), fingerprint as usize + 1);
    }
    // Meeting new fingerprints below the bound handed nothing over.
    assert_eq!(judge_n(&mut other, &shared, 0, 2, 1), (1, 0));
    // One more than the bound: the cache is emptied, handing its counts over, and refilled.
    judge_n(&mut mine, &shared, CACHED_PER_THREAD as u64, 1, 1);
    assert_eq!(mine.entries.len(), 1);
    assert_eq!(judge_n(&mut other, &shared, 0, 3, 1), (1, 2));
}
