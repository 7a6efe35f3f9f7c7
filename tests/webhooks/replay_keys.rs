//! The replay key of every sender is made of what the sender signed: a sender's retry has
//! the key of its first try (the same bytes, the same signed id at a new time, the same
//! event id in a body signed at a new time), a replay under a fresh unsigned id has the key
//! of what it replays, and another delivery has a key of its own. The table of
//! `docs/webhooks.md` says the same, sender by sender; a key taken from an unsigned header,
//! planted, fails it.

use std::time::{Duration, SystemTime};

use faultline::webhooks::{
    Delivery, DeliveryId, Keys, Outgoing, ReplayKey, SecretSet, Sender, Signer,
};
use sha2::{Digest, Sha256};

use crate::server::{secret, INBOXES};

/// A body with both senders' signed event ids, so that one body serves every sender.
const BODY: &[u8] = br#"{"id":"evt_1NvP","event_id":"Ev06A2","type":"push"}"#;
const OTHER: &[u8] = br#"{"id":"evt_2QxR","event_id":"Ev07B3","type":"push"}"#;

/// Whether a delivery id is signed, so that a fresh one makes another delivery.
fn id_is_signed(sender: Sender) -> bool {
    matches!(sender, Sender::StandardWebhooks | Sender::GitLabSigned)
}

/// What `key_of` gets wrong, sender by sender: each line a rule it breaks.
fn broken_rules(key_of: fn(&Delivery) -> ReplayKey) -> Vec<String> {
    let now = SystemTime::now();
    let mut broken = Vec::new();
    for (_, sender, text) in INBOXES {
        let keys = Keys::new(sender, SecretSet::new([secret(sender, text)]).unwrap()).unwrap();
        let signer = Signer::for_sender(sender, text).unwrap();
        let key = |id: &str, at: SystemTime, body: &'static [u8]| {
            let id = DeliveryId::parse(id).unwrap();
            let headers = signer.sign(Outgoing::new(body).id(&id), at);
            let delivery = Delivery::verify(&keys, &headers, body.into(), now);
            key_of(&delivery.unwrap_or_else(|refused| panic!("{sender}: {refused}")))
        };
        let first = key("one", now, BODY);
        if key("one", now - Duration::from_secs(30), BODY) != first {
            broken.push(format!("{sender}: its retry is another delivery"));
        }
        let fresh = key("two", now, BODY) == first;
        if fresh == id_is_signed(sender) {
            broken.push(format!("{sender}: a fresh id, same key: {fresh}"));
        }
        if key("three", now, OTHER) == first {
            broken.push(format!("{sender}: another delivery has its key"));
        }
    }
    broken
}

#[test]
fn every_senders_key_is_what_it_signed() {
    assert_eq!(broken_rules(ReplayKey::of), Vec::<String>::new());
}

/// The plant: a key that digests the delivery id whatever signs it.
fn key_with_the_unsigned_id(delivery: &Delivery) -> ReplayKey {
    let mut digest = Sha256::new();
    digest.update(delivery.sender().name());
    digest.update(delivery.id().unwrap_or_default());
    digest.update(delivery.body());
    ReplayKey::from_bytes(digest.finalize().into())
}

#[test]
fn a_key_taken_from_an_unsigned_header_breaks_the_rules() {
    let broken = broken_rules(key_with_the_unsigned_id);
    // Every sender whose id is outside the signature.
    let unsigned = [
        Sender::GitHub,
        Sender::GitLab,
        Sender::Bitbucket,
        Sender::Gitea,
        Sender::Forgejo,
        Sender::Shopify,
    ];
    for sender in unsigned {
        let name = format!("{sender}: ");
        assert!(
            broken.iter().any(|line| line.starts_with(&name)),
            "{broken:#?}"
        );
    }
}
