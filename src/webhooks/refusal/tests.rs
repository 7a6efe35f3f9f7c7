//! Refusal's catalog against its variants.

use super::*;

/// How many variants [`variant`] numbers: a new variant takes the next number and this
/// grows with it.
const VARIANTS: usize = 15;

/// The variant a refusal is, by its place in the declaration. The match has no catch-all:
/// a new variant does not compile until it is numbered here, and the test below then
/// fails until the catalog has a row for it.
fn variant(refusal: &Refusal) -> usize {
    match refusal {
        Refusal::SignatureMissing { .. } => 0,
        Refusal::SignatureMismatch { .. } => 1,
        Refusal::TimestampStale { .. } => 2,
        Refusal::TimestampFuture { .. } => 3,
        Refusal::HeaderMissing { .. } => 4,
        Refusal::HeaderMalformed { .. } => 5,
        Refusal::BodyTooLarge { .. } => 6,
        Refusal::BodyUnreadable => 7,
        Refusal::BodyInvalid { .. } => 8,
        Refusal::UnknownInbox => 9,
        Refusal::SecretsUnavailable(_) => 10,
        Refusal::Replayed => 11,
        Refusal::ReplaysUnavailable(_) => 12,
        Refusal::InProgress => 13,
        Refusal::ReplaysWithoutLayer => 14,
    }
}

#[test]
fn the_catalog_has_one_row_per_variant() {
    let mut seen: Vec<usize> = samples()
        .iter()
        .map(|(refusal, _)| variant(refusal))
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..VARIANTS).collect::<Vec<_>>(),
        "a variant without a row, or twice"
    );
    let mut codes: Vec<&str> = samples()
        .iter()
        .map(|(refusal, _)| refusal.code())
        .collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), samples().len(), "two variants share a code");
}
