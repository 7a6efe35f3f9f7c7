use std::time::Duration;

use super::*;
use crate::ids::DigestId;
use crate::provider::Provider;
use crate::store::PreviousSecret;

fn instance(n: u32) -> InstanceId {
    InstanceId::stored(format!("in-{n}"))
}

fn row(n: u32, secret: &str) -> InboxRow {
    InboxRow {
        id: InboxId::stored(format!("ib-{n}")),
        digest_id: DigestId::stored("dg".into()),
        provider: Provider::Github,
        secret: secret.into(),
        previous: None,
    }
}

fn rotated(n: u32, age: Duration) -> InboxRow {
    let previous = Some(PreviousSecret {
        secret: "old".into(),
        age,
    });
    InboxRow {
        previous,
        ..row(n, "new")
    }
}

fn secret(cache: &SecretCache, instance: &InstanceId, n: u32) -> Option<String> {
    let inbox = cache.get(instance, &InboxId::stored(format!("ib-{n}")))?;
    Some(inbox.secret)
}

/// An inbox is new to the cache once, per instance; the row remembered is the last one the
/// store answered, whether it changed or not.
#[test]
fn an_inbox_is_new_once_and_its_last_row_is_remembered() {
    let cache = SecretCache::default();
    assert!(cache.is_empty());
    assert!(cache.remember(&instance(1), &row(1, "a")));
    assert!(!cache.remember(&instance(1), &row(1, "a")));
    assert!(!cache.remember(&instance(1), &row(1, "b")));
    assert_eq!(secret(&cache, &instance(1), 1).as_deref(), Some("b"));
    // The same inbox id under another instance is another entry; neither sees the other's.
    assert!(cache.remember(&instance(2), &row(1, "c")));
    assert_eq!(secret(&cache, &instance(1), 1).as_deref(), Some("b"));
    assert_eq!(secret(&cache, &instance(2), 1).as_deref(), Some("c"));
    assert_eq!(secret(&cache, &instance(3), 1), None);
    assert_eq!(secret(&cache, &instance(1), 2), None);
    assert_eq!(cache.len(), 2);
    assert!(!cache.is_empty());
    assert_eq!(format!("{cache:?}"), "SecretCache { inboxes: 2 }");
    // A rotation read since replaces the row remembered, previous secret and all.
    assert!(!cache.remember(&instance(1), &rotated(1, Duration::from_secs(10))));
    let previous = cache.get(&instance(1), &row(1, "").id).unwrap().previous;
    assert_eq!(previous.map(|p| p.secret).as_deref(), Some("old"));
}

/// A previous secret's age grows from when the row was read, in `get` and in `known`; a
/// row read again is seen anew.
#[test]
fn a_previous_secrets_age_grows_from_its_read() {
    let cache = SecretCache::default();
    let age = Duration::from_secs(10);
    cache.remember(&instance(1), &rotated(1, age));
    std::thread::sleep(Duration::from_millis(20));
    let aged = |row: InboxRow| row.previous.unwrap().age;
    let got = aged(cache.get(&instance(1), &row(1, "").id).unwrap());
    assert!(got >= age + Duration::from_millis(20), "{got:?}");
    assert!(got < age + Duration::from_secs(60), "{got:?}");
    let known = cache.known();
    assert_eq!(known.len(), 1);
    assert!(aged(known[0].inbox.clone()) >= age + Duration::from_millis(20));
    // The same row read again: its age counts from now.
    cache.remember(&instance(1), &rotated(1, age));
    let got = aged(cache.get(&instance(1), &row(1, "").id).unwrap());
    assert!(got < age + Duration::from_millis(20), "{got:?}");
}

/// `known` lists every inbox of every instance, in order of instance and inbox.
#[test]
fn known_lists_every_inbox_in_order() {
    let cache = SecretCache::default();
    for (i, n) in [(2, 1), (1, 3), (1, 2), (2, 0)] {
        cache.remember(&instance(i), &row(n, "s"));
    }
    let listed: Vec<(String, String)> = cache
        .known()
        .into_iter()
        .map(|k| (k.instance.to_string(), k.inbox.id.to_string()))
        .collect();
    let expected = [
        ("in-1", "ib-2"),
        ("in-1", "ib-3"),
        ("in-2", "ib-0"),
        ("in-2", "ib-1"),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(i, n)| (i.to_string(), n.to_string()))
        .collect();
    assert_eq!(listed, expected);
}

/// Full, the cache takes no new inbox, and still takes what the store answers for one it
/// holds; `replace` keeps the first [`MAX_CACHED_INBOXES`] it is given.
#[test]
fn a_full_cache_takes_no_new_inbox_but_refreshes_those_it_holds() {
    let cache = SecretCache::default();
    let full: Vec<KnownInbox> = (0..=MAX_CACHED_INBOXES as u32)
        .map(|n| KnownInbox {
            instance: instance(n % 3),
            inbox: row(n, "s"),
        })
        .collect();
    cache.replace(&full);
    assert_eq!(cache.len(), MAX_CACHED_INBOXES);
    let last = MAX_CACHED_INBOXES as u32;
    assert_eq!(secret(&cache, &instance(last % 3), last), None);
    assert!(!cache.remember(&instance(last % 3), &row(last, "s")));
    assert_eq!(secret(&cache, &instance(last % 3), last), None);
    assert!(!cache.remember(&instance(0), &row(0, "t")));
    assert_eq!(secret(&cache, &instance(0), 0).as_deref(), Some("t"));
    assert_eq!(cache.len(), MAX_CACHED_INBOXES);
    // One fewer, and a new inbox is taken.
    cache.replace(&full[..MAX_CACHED_INBOXES - 1]);
    assert!(cache.remember(&instance(9), &row(last, "s")));
    assert_eq!(cache.len(), MAX_CACHED_INBOXES);
}

/// The count the cap is checked against is of distinct inboxes: an inbox listed twice by a
/// refresh is one, and each inbox a look-up adds after it is one more.
#[test]
fn the_count_is_of_distinct_inboxes_across_refreshes_and_look_ups() {
    let cache = SecretCache::default();
    let listed: Vec<KnownInbox> = [(1, 1), (1, 1), (2, 1), (1, 2)]
        .into_iter()
        .map(|(i, n)| KnownInbox {
            instance: instance(i),
            inbox: row(n, "s"),
        })
        .collect();
    cache.replace(&listed);
    assert_eq!(cache.len(), 3);
    assert!(cache.remember(&instance(2), &row(2, "s")));
    assert!(!cache.remember(&instance(2), &row(2, "t")));
    assert_eq!(cache.len(), 4);
    assert_eq!(cache.len(), cache.known().len());
    cache.replace(&[]);
    assert!(cache.is_empty());
}
