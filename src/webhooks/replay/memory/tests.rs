//! The replay memory's expiry, capacity, order bound and reservations.

use std::time::Duration;

use super::*;

fn key(n: u8) -> ReplayKey {
    ReplayKey::from_bytes([n; 32])
}

/// Reserves `key` and, when it was free, confirms it at once: a delivery answered 2xx.
fn remember(memory: &ReplayMemory, key: ReplayKey, until: SystemTime, now: SystemTime) -> Seen {
    let seen = memory.reserve_at(key, until, now);
    if seen == Seen::First {
        memory.confirm_at(key, until, now);
    }
    seen
}

#[test]
fn a_key_is_a_repeat_until_its_expiry_then_first_again_and_counted_expired() {
    let memory = ReplayMemory::with_capacity(8);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let until = now + Duration::from_secs(10);
    assert_eq!(remember(&memory, key(1), until, now), Seen::First);
    let before = until - Duration::from_nanos(1);
    assert_eq!(remember(&memory, key(1), until, before), Seen::Repeat);
    let again = until + Duration::from_secs(10);
    assert_eq!(remember(&memory, key(1), again, until), Seen::First);
    assert_eq!(
        (memory.expired(), memory.evicted(), memory.len()),
        (1, 0, 1)
    );
}

#[test]
fn past_the_capacity_the_oldest_is_forgotten_and_counted_evicted() {
    let memory = ReplayMemory::with_capacity(3);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let until = now + Duration::from_secs(10);
    for n in 0..5 {
        assert_eq!(remember(&memory, key(n), until, now), Seen::First);
    }
    assert_eq!((memory.evicted(), memory.len()), (2, 3));
    assert_eq!(remember(&memory, key(4), until, now), Seen::Repeat);
    assert_eq!(remember(&memory, key(2), until, now), Seen::Repeat);
    // The first two were evicted: they pass again, each evicting another.
    assert_eq!(remember(&memory, key(0), until, now), Seen::First);
    assert_eq!(memory.evicted(), 3);
}

#[test]
fn a_key_remembered_again_after_expiry_is_not_forgotten_by_its_old_place() {
    let memory = ReplayMemory::with_capacity(2);
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let short = start + Duration::from_secs(1);
    let long = start + Duration::from_secs(100);
    remember(&memory, key(1), long, start);
    remember(&memory, key(2), short, start);
    // Key 2 expired; remembered again, its old place must not take the new one away.
    assert_eq!(remember(&memory, key(2), long, short), Seen::First);
    assert_eq!(remember(&memory, key(2), long, short), Seen::Repeat);
    assert_eq!(remember(&memory, key(1), long, short), Seen::Repeat);
    assert_eq!(
        (memory.expired(), memory.evicted(), memory.len()),
        (1, 0, 2)
    );
}

#[test]
fn the_old_place_of_a_key_remembered_again_forgets_nothing_when_it_comes_up() {
    let memory = ReplayMemory::with_capacity(8);
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let at = |secs| start + Duration::from_secs(secs);
    remember(&memory, key(2), at(5), start);
    remember(&memory, key(1), at(1), start);
    // Key 1 expired behind key 2, and is remembered again.
    assert_eq!(remember(&memory, key(1), at(100), at(2)), Seen::First);
    // Key 2's expiry brings key 1's old place to the front.
    assert_eq!(remember(&memory, key(1), at(100), at(6)), Seen::Repeat);
    assert_eq!((memory.expired(), memory.evicted()), (2, 0));
}

#[test]
fn keys_remembered_again_and_again_keep_the_order_bounded() {
    let memory = ReplayMemory::with_capacity(4);
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let far = start + Duration::from_secs(1_000_000);
    remember(&memory, key(0), far, start);
    for round in 1..100u64 {
        let now = start + Duration::from_secs(round);
        remember(&memory, key(1), now + Duration::from_millis(500), now);
    }
    let order = memory.inner.table.lock().unwrap().order.len();
    assert!(order <= STALE_FACTOR * memory.capacity(), "{order}");
    assert_eq!(remember(&memory, key(0), far, start), Seen::Repeat);
}

/// The order is swept of stale places only once it reaches [`STALE_FACTOR`] times the
/// capacity, and never holds more: the sweep, a pass over it, stays rare.
#[test]
fn the_order_is_swept_when_it_reaches_its_bound_and_not_before() {
    let memory = ReplayMemory::with_capacity(4);
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let far = start + Duration::from_secs(1_000_000);
    remember(&memory, key(0), far, start);
    let mut longest = 0;
    for round in 1..20u64 {
        let now = start + Duration::from_secs(round);
        remember(&memory, key(1), now + Duration::from_millis(500), now);
        longest = longest.max(memory.inner.table.lock().unwrap().order.len());
    }
    assert_eq!(longest, STALE_FACTOR * memory.capacity());
}

/// A key is forgotten at the moment it was given, by whichever key comes then: the same
/// moment at which its own repeat is first again.
#[test]
fn a_key_is_forgotten_at_its_expiry_by_another_key() {
    let memory = ReplayMemory::with_capacity(8);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let until = now + Duration::from_secs(10);
    assert_eq!(remember(&memory, key(1), until, now), Seen::First);
    assert_eq!(remember(&memory, key(2), until, now), Seen::First);
    assert_eq!(memory.reserve_at(key(3), until, until), Seen::First);
    assert_eq!((memory.expired(), memory.len()), (2, 1));
}

#[test]
fn is_empty_until_a_key_is_reserved_and_again_once_it_is_released() {
    let memory = ReplayMemory::with_capacity(8);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let lease = now + Duration::from_secs(10);
    assert!(memory.is_empty());
    memory.reserve_at(key(1), lease, now);
    assert!(!memory.is_empty());
    memory.release_at(key(1), lease);
    assert!(memory.is_empty());
}

#[test]
fn debug_shows_the_capacity_and_the_counts() {
    let memory = ReplayMemory::with_capacity(1);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let until = now + Duration::from_secs(10);
    remember(&memory, key(1), until, now);
    remember(&memory, key(2), until, now);
    let text = format!("{memory:?}");
    assert_eq!(
        text,
        "ReplayMemory { capacity: 1, evicted: 1, expired: 0, .. }"
    );
}

#[test]
fn a_reserved_key_is_held_until_its_lease_ends_then_first_again() {
    let memory = ReplayMemory::with_capacity(8);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let lease = now + Duration::from_secs(10);
    assert_eq!(memory.reserve_at(key(1), lease, now), Seen::First);
    let before = lease - Duration::from_nanos(1);
    assert_eq!(memory.reserve_at(key(1), lease, before), Seen::Held);
    let later = lease + Duration::from_secs(10);
    assert_eq!(memory.reserve_at(key(1), later, lease), Seen::First);
    assert_eq!((memory.expired(), memory.len()), (1, 1));
}

#[test]
fn a_release_frees_only_the_reservation_of_its_own_lease() {
    let memory = ReplayMemory::with_capacity(8);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let (first, second) = (now + Duration::from_secs(10), now + Duration::from_secs(30));
    assert_eq!(memory.reserve_at(key(1), first, now), Seen::First);
    memory.release_at(key(1), first);
    assert_eq!(memory.reserve_at(key(1), second, now), Seen::First);
    // A late release of the first lease leaves the second reservation held.
    memory.release_at(key(1), first);
    assert_eq!(memory.reserve_at(key(1), second, now), Seen::Held);
    // And a release never frees a key taken.
    memory.confirm_at(key(1), second, now);
    memory.release_at(key(1), second);
    assert_eq!(memory.reserve_at(key(1), second, now), Seen::Repeat);
}

#[test]
fn a_confirm_takes_the_key_whatever_it_holds() {
    let memory = ReplayMemory::with_capacity(8);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let until = now + Duration::from_secs(100);
    // Its reservation gone (the lease ended, the memory forgot it): taken all the same.
    memory.confirm_at(key(2), until, now);
    assert_eq!(memory.reserve_at(key(2), until, now), Seen::Repeat);
    assert_eq!(memory.reserve_at(key(2), until, until), Seen::First);
}
