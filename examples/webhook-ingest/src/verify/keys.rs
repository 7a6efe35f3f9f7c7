//! Every signature check of the service, through `faultline::webhooks`: an inbox's secrets
//! as the library's [`Keys`] (the current secret, and the one its last rotation replaced
//! until the grace ends), checked at receive time on the request's headers and at drain time
//! on the proof the spool kept, by the same verifier.

use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::HeaderMap;
use faultline::webhooks::{Delivery, Keys, Refusal, ReplayKey, Secret, SecretSet, Sender};

use super::webhook::{display_name, Proof};
use super::VerifyError;
use crate::provider::Provider;
use crate::store::InboxRow;

/// The keys a delivery to `row` is verified with as `sender` would sign it, judged at `at`.
/// The previous secret expires when the grace left to it now (`row` measured its age just
/// now, by the store's clock) has run from `at`: at receive time, `at` is now; for a spooled
/// delivery judged at its arrival, the grace is still the one left at drain time, as for any
/// delivery checked then. A secret that is not in `sender`'s form (an inbox secret made
/// before GitLab inboxes had `whsec_` signing tokens, for a delivery signed with Standard
/// Webhooks) is taken as its bytes, which such a delivery does not match. Only an inbox
/// without a secret at all, which the service never makes, has no keys.
pub fn inbox_keys(
    row: &InboxRow,
    sender: Sender,
    grace: Duration,
    at: SystemTime,
) -> Result<Keys, VerifyError> {
    let secret = |text: &str| {
        Secret::for_sender(sender, text)
            .or_else(|_| Secret::new(text))
            .ok()
    };
    let current = secret(&row.secret);
    let previous = row.previous.as_ref().and_then(|previous| {
        let ends = at.checked_add(grace.checked_sub(previous.age)?)?;
        Some(secret(&previous.secret)?.expires_at(ends))
    });
    let secrets = SecretSet::new(current.into_iter().chain(previous)).map_err(|_| {
        VerifyError::BadSignature {
            header: "webhook-signature",
            problem: "cannot be checked: the inbox has no secret",
        }
    })?;
    // A secret in the wrong form for the sender (a pre-`whsec_` GitLab secret for a signed
    // delivery) signs nothing such a delivery carries: refused as a signature that fails.
    Keys::new(sender, secrets).map_err(|_| VerifyError::BadSignature {
        header: "webhook-signature",
        problem: "does not match: the inbox's secret is not in its sender's form",
    })
}

/// Whether the delivery in `headers` and `body` is signed with a secret of `row`, judged at
/// `now`: its replay key when it is.
pub fn verify(
    row: &InboxRow,
    provider: Provider,
    headers: &HeaderMap,
    body: &Bytes,
    grace: Duration,
    now: SystemTime,
) -> Result<ReplayKey, VerifyError> {
    let keys = inbox_keys(row, provider.sender(headers), grace, now)?;
    verify_with(&keys, headers, body, now)
}

/// Whether the delivery in `headers` and `body` is signed with one of `keys`, judged at
/// `now`: the webhook route's check, with keys from the inboxes' `Secrets`. Its replay key
/// when it is: what its sender signed, the same under any unsigned id.
pub fn verify_with(
    keys: &Keys,
    headers: &HeaderMap,
    body: &Bytes,
    now: SystemTime,
) -> Result<ReplayKey, VerifyError> {
    Delivery::verify(keys, headers, body.clone(), now)
        .map(|delivery| ReplayKey::of(&delivery))
        .map_err(refused)
}

/// Refuses now what no secret can make right, for a delivery spooled before its secret is
/// known: only a delivery that can still pass is kept.
pub fn check_headers(
    provider: Provider,
    headers: &HeaderMap,
    now: SystemTime,
) -> Result<(), VerifyError> {
    Delivery::check_headers(provider.sender(headers), headers, now).map_err(refused)
}

/// Whether a spooled delivery's `proof` shows its sender holds a secret of `row`, judged at
/// `received`, the moment it arrived (a signed timestamp was in its window then), with the
/// previous secret passing only while its grace lasts now, as at the webhook route. Its
/// replay key when the proof is a signature; a token's digest makes none.
pub fn check_spooled(
    proof: &Proof,
    row: &InboxRow,
    provider: Provider,
    body: &[u8],
    grace: Duration,
    received: SystemTime,
) -> Result<Option<ReplayKey>, VerifyError> {
    match proof {
        Proof::Token { digest } => {
            let keys = inbox_keys(row, Sender::GitLab, grace, received)?;
            if keys.secrets().matches_token_digest(digest, received) {
                Ok(None)
            } else {
                Err(refused(Refusal::SignatureMismatch {
                    header: "x-gitlab-token",
                }))
            }
        }
        Proof::Headers(kept) => {
            let headers = Proof::header_map(kept);
            let keys = inbox_keys(row, provider.sender(&headers), grace, received)?;
            let body = Bytes::copy_from_slice(body);
            Delivery::verify(&keys, &headers, body, received)
                .map(|delivery| Some(ReplayKey::of(&delivery)))
                .map_err(refused)
        }
    }
}

/// The service's answer to a refusal of the verifier: `bad-signature` (401) for whatever is
/// wrong with the proof, as before the verifier was shared, and `bad-delivery-id` (400) for
/// a delivery id no store could key on.
fn refused(refusal: Refusal) -> VerifyError {
    let signature = |header, problem| VerifyError::BadSignature {
        header: display_name(header),
        problem,
    };
    match refusal {
        Refusal::SignatureMissing { header } | Refusal::HeaderMissing { header } => {
            signature(header, "is missing")
        }
        Refusal::SignatureMismatch {
            header: "x-gitlab-token",
        } => signature("x-gitlab-token", "does not match the inbox secret"),
        Refusal::SignatureMismatch { header } => signature(header, "does not match the body"),
        Refusal::TimestampStale { header, .. } => {
            signature(header, "is older than the sender's tolerance")
        }
        Refusal::TimestampFuture { header, .. } => {
            signature(header, "is further ahead than the sender's tolerance")
        }
        Refusal::HeaderMalformed { header, problem } if is_delivery_id(header) => {
            VerifyError::BadDeliveryId {
                header: display_name(header),
                problem,
            }
        }
        Refusal::HeaderMalformed { header, problem } => signature(header, problem),
        // The lookup and the body are the service's own; the verifier is given neither.
        _ => signature("x-hub-signature-256", "cannot be checked"),
    }
}

fn is_delivery_id(header: &str) -> bool {
    Provider::ALL
        .into_iter()
        .any(|provider| provider.delivery_headers().contains(&header))
        || header == "webhook-id"
}
