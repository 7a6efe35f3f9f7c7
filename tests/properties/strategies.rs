//! The generators: caps, texts that JSON escaping and UTF-8 cutting have to care about,
//! chains, statuses and request ids.

use axum::http::StatusCode;
use faultline::limits::MIN_BODY_BYTES;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::case::{Caps, Case, Kind};

/// The word every server-side message and chain link carries, so a leak is easy to spot.
pub(crate) const SECRET: &str = "secret";

/// The most bytes of generated text in a message (a marker word may come on top).
const MAX_GENERATED_MESSAGE_BYTES: usize = 20_000;

/// The longest `source()` chain generated.
pub(crate) const MAX_CHAIN_DEPTH: usize = 50;

/// Default caps, or caps set through the builder (values below the minimums included).
///
/// Besides any pair of caps, two regimes get extra weight: a small message cap (escaped, even
/// a message of control characters fits the detail's room in any body) and a message cap at
/// or above the body cap, where the body cap does the cutting.
pub(crate) fn caps() -> impl Strategy<Value = Caps> {
    let links = prop::option::of(0..=MAX_CHAIN_DEPTH + 10);
    let small_message = (0..=100_usize, prop::option::of(0..=16_384_usize))
        .prop_map(|(message, body)| (Some(message), body));
    let large_message = (0..=4_096_usize, 1..=4_usize).prop_map(|(body, times)| {
        let body_cap = body.max(MIN_BODY_BYTES);
        (Some(body_cap * times), Some(body))
    });
    let any_sizes = (
        prop::option::of(0..=20_000_usize),
        prop::option::of(0..=16_384_usize),
    );
    let sizes = prop_oneof![
        1 => Just((None, None)),
        2 => small_message,
        2 => large_message,
        2 => any_sizes,
    ];
    (sizes, links, any::<bool>()).prop_map(|((message, body), links, development)| Caps {
        message,
        body,
        links,
        development,
    })
}

// ---------------------------------------------------------------------------------------------
// Input strategies.

/// Any char, weighted towards the ones JSON escaping and UTF-8 cutting have to care about.
fn nasty_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        2 => prop::char::range('\0', '\u{1f}'),
        2 => prop::sample::select(vec![
            '"', '\\', '/', '\'', '\u{7f}', '\u{85}', '\u{2028}', '\u{2029}', '\u{feff}', '…',
        ]),
        2 => prop::char::range('\u{1f300}', '\u{1faff}'),
        2 => prop::sample::select(vec!['é', '€', '中', 'ß', '\u{10ffff}', '\u{301}']),
        3 => prop::char::range(' ', '~'),
    ]
}

/// `bytes` bytes at most of chars drawn from `alphabet` by a generator seeded with `seed`.
///
/// Generating every char of a 20,000-byte text through its own strategy takes seconds in a
/// debug build; drawing from a generated alphabet keeps the variety and costs microseconds.
fn expand(alphabet: &[char], seed: u64, bytes: usize) -> String {
    let mut rng = SplitMix64(seed);
    let mut text = String::with_capacity(bytes);
    while let Some(&c) = alphabet.get(rng.below(alphabet.len())) {
        if text.len() + c.len_utf8() > bytes {
            break;
        }
        text.push(c);
    }
    text
}

/// A small, fast generator; the seed comes from proptest, so failures replay.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n`, or `n` itself when `n` is 0 (so `alphabet.get` ends the text).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }
}

/// Text of `nasty_char`s, at most `max_bytes` bytes.
fn text_up_to(max_bytes: usize) -> impl Strategy<Value = String> {
    (
        prop::collection::vec(nasty_char(), 1..40),
        any::<u64>(),
        0..=max_bytes,
    )
        .prop_map(|(alphabet, seed, bytes)| expand(&alphabet, seed, bytes))
}

/// Text of `nasty_char`s: mostly short or around the caps, sometimes up to 20,000 bytes.
pub(crate) fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => text_up_to(64),
        3 => text_up_to(1_200),
        2 => text_up_to(MAX_GENERATED_MESSAGE_BYTES),
    ]
}

/// Text with [`SECRET`] somewhere in it.
pub(crate) fn secret_text() -> impl Strategy<Value = String> {
    (text_up_to(120), nasty_text()).prop_map(|(before, after)| format!("{before}{SECRET}{after}"))
}

/// `text` split at char boundaries near the given places.
fn split(text: &str, at: &[Index]) -> Vec<String> {
    let mut cuts: Vec<usize> = at
        .iter()
        .map(|index| {
            let mut cut = index.index(text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        })
        .collect();
    cuts.push(0);
    cuts.push(text.len());
    cuts.sort_unstable();
    cuts.windows(2)
        .map(|pair| text[pair[0]..pair[1]].to_owned())
        .collect()
}

pub(crate) fn client_status() -> impl Strategy<Value = StatusCode> {
    (400_u16..=499).prop_map(|code| StatusCode::from_u16(code).expect("a valid status"))
}

pub(crate) fn server_status() -> impl Strategy<Value = StatusCode> {
    (500_u16..=599).prop_map(|code| StatusCode::from_u16(code).expect("a valid status"))
}

pub(crate) fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::AdHoc), Just(Kind::User)]
}

/// A failure with `status`, a message from `message` and a chain from `chain`.
pub(crate) fn case(
    status: impl Strategy<Value = StatusCode>,
    message: impl Strategy<Value = String>,
    chain: impl Strategy<Value = Vec<String>>,
) -> impl Strategy<Value = Case> {
    (
        kind(),
        status,
        message,
        prop::collection::vec(any::<Index>(), 0..8),
        chain,
    )
        .prop_map(|(kind, status, message, cuts, chain)| Case {
            kind,
            status,
            pieces: split(&message, &cuts),
            chain,
        })
}

/// The messages of a chain 0 to 50 links deep, each up to 80 bytes, each starting with
/// `prefix`.
fn chain_texts(prefix: &'static str) -> impl Strategy<Value = Vec<String>> {
    (
        0..=MAX_CHAIN_DEPTH,
        prop::collection::vec(nasty_char(), 1..16),
        any::<u64>(),
    )
        .prop_map(move |(depth, alphabet, seed)| {
            let mut lengths = SplitMix64(seed);
            (0..depth)
                .map(|n| {
                    let bytes = lengths.below(81);
                    format!("{prefix}{}", expand(&alphabet, seed ^ n as u64, bytes))
                })
                .collect()
        })
}

pub(crate) fn link_texts() -> impl Strategy<Value = Vec<String>> {
    chain_texts("")
}

pub(crate) fn secret_link_texts() -> impl Strategy<Value = Vec<String>> {
    chain_texts("secret ")
}

/// A request id header value: printable ASCII, up to 1,000 chars.
pub(crate) fn request_id() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => prop::collection::vec(prop::char::range(' ', '~'), 0..64),
        2 => prop::collection::vec(prop::char::range(' ', '~'), 0..=1_000),
    ]
    .prop_map(|chars| chars.into_iter().collect())
}
