//! [`ReplayKey`]: what a verified delivery is remembered by.

use sha2::{Digest, Sha256};

use crate::webhooks::body::signed_event_id;
use crate::webhooks::delivery::Delivery;
use crate::webhooks::sender::Sender;

/// Bytes of a replay key: a SHA-256 digest.
const KEY_BYTES: usize = 32;

/// What a verified delivery is remembered by: a digest of its sender and of what its sender
/// signed, never of a header outside the signature.
///
/// | sender | signed | not signed | key |
/// |---|---|---|---|
/// | `StandardWebhooks`, `GitLabSigned` | id, timestamp, body | the event header | `webhook-id` |
/// | `Stripe` | timestamp, body (the event id is in it) | – | the event `id` in the body |
/// | `Slack` | timestamp, body | `X-Slack-Retry-Num` | the `event_id` in the body (Events API); else the signature under the first live secret |
/// | `GitHub`, `Bitbucket`, `Gitea`, `Forgejo`, `Shopify` | body | id, event | the signature under the first live secret |
/// | `GitLab` (token) | nothing: the token is the secret itself | id, event, body | SHA-256 of the body |
///
/// The signature is the one this receiver computes under the first live secret of the set,
/// not the text of the header: a header may list several (a rotation), and a replay that
/// drops or adds one still has the same key. A sender's own redelivery of the same bytes
/// (GitHub's "Redeliver", Bitbucket's and Gitea's retries) has the same key too, and so do
/// Stripe's and Slack's retries, which sign a new timestamp over the same event id. A Stripe
/// body without an `id`, or a Slack one without an `event_id` (a slash command, an
/// interaction), is keyed by its signature. An event id is the sender's, not the
/// endpoint's: two endpoints of one account that receive the same event (Stripe Connect)
/// keep their keys in stores of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplayKey([u8; KEY_BYTES]);

impl ReplayKey {
    /// The key of a verified delivery: for a service that verifies outside the extractor
    /// (a spool's drainer) and remembers in the same store.
    pub fn of(delivery: &Delivery) -> ReplayKey {
        let sender = delivery.sender();
        let mut digest = Sha256::new();
        digest.update(sender.name());
        digest.update([0]);
        let event = signed_event_id(sender, delivery.body());
        match (sender, delivery.signed_tag(), event) {
            (Sender::StandardWebhooks | Sender::GitLabSigned, _, _) => {
                digest.update(b"id\0");
                digest.update(delivery.id().unwrap_or_default());
            }
            // Signed with the body, and the same on the retries that sign a new timestamp.
            (_, Some(_), Some(event)) => {
                digest.update(b"event\0");
                digest.update(event);
            }
            (_, Some(tag), None) => {
                digest.update(b"signature\0");
                digest.update(tag);
            }
            // The token proves nothing about the body: the same bytes are all that can be
            // recognised.
            (_, None, _) => {
                digest.update(b"body\0");
                digest.update(Sha256::digest(delivery.body()));
            }
        }
        ReplayKey(digest.finalize().into())
    }

    /// The key's bytes, to store.
    pub fn as_bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }

    /// The key of bytes read back from a store.
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> ReplayKey {
        ReplayKey(bytes)
    }
}
