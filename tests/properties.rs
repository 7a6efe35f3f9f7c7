//! Property tests of the problem bodies `FaultLayer` renders, through the public API only.
//!
//! A handler fails with random statuses, messages of arbitrary unicode (control characters,
//! quotes, backslashes, multi-byte chars, emoji; 0 to ~20,000 bytes, written in random pieces)
//! and random `source()` chains, behind a layer with default or builder-set caps. Every answer
//! must be valid JSON within the body cap; 4xx details must be bounded copies of the message;
//! 5xx details must not show it unless development mode is on.

use std::error::Error as StdError;
use std::fmt;

use axum::body::{to_bytes, Body};
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::routing::{get, MethodRouter};
use axum::Router;
use faultline::limits::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_MESSAGE_BYTES, MIN_BODY_BYTES, MIN_MESSAGE_BYTES,
    TRUNCATION_MARKER,
};
use faultline::service::PROBLEM_JSON;
use faultline::{Error, Fault, FaultLayer};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use tower::ServiceExt;

/// The longest request id the layer takes from a client.
const MAX_REQUEST_ID_BYTES: usize = 128;

/// The word every server-side message and chain link carries, so a leak is easy to spot.
const SECRET: &str = "secret";

/// The most bytes of generated text in a message (a marker word may come on top).
const MAX_GENERATED_MESSAGE_BYTES: usize = 20_000;

/// The longest `source()` chain generated.
const MAX_CHAIN_DEPTH: usize = 50;

thread_local! {
    /// One current-thread runtime per test thread, shared by that thread's cases.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
}

// ---------------------------------------------------------------------------------------------
// The failing handler's errors.

/// One link of a `source()` chain.
#[derive(Debug)]
struct Link {
    message: String,
    next: Option<Box<Link>>,
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for Link {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.next.as_deref().map(|link| link as _)
    }
}

/// A chain whose links say `messages` in order; `None` when there are none.
fn build_chain(messages: &[String]) -> Option<Link> {
    let mut next: Option<Box<Link>> = None;
    for message in messages.iter().rev() {
        next = Some(Box::new(Link {
            message: message.clone(),
            next,
        }));
    }
    next.map(|head| *head)
}

/// A user error type whose `Display` writes its message in several `write_str` calls, each
/// one checked with `?` as a well-behaved `Display` does.
#[derive(Debug)]
struct PropFault {
    status: StatusCode,
    pieces: Vec<String>,
    chain: Option<Link>,
}

impl fmt::Display for PropFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in &self.pieces {
            f.write_str(piece)?;
        }
        Ok(())
    }
}

impl StdError for PropFault {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.chain.as_ref().map(|link| link as _)
    }
}

impl Fault for PropFault {
    fn status(&self) -> StatusCode {
        self.status
    }

    fn code(&self) -> &'static str {
        "prop-fault"
    }
}

faultline::impl_into_response!(PropFault);

/// Which error the handler returns.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `faultline::Error::new(status, "prop-code", message)`, with the chain as its source.
    AdHoc,
    /// [`PropFault`], returned as itself through `impl_into_response!`.
    User,
}

/// Everything one failing request is made of.
#[derive(Debug, Clone)]
struct Case {
    kind: Kind,
    status: StatusCode,
    /// The message, split where the `Display` writes it piece by piece.
    pieces: Vec<String>,
    chain: Vec<String>,
}

impl Case {
    fn message(&self) -> String {
        self.pieces.concat()
    }

    fn code(&self) -> &'static str {
        match self.kind {
            Kind::AdHoc => "prop-code",
            Kind::User => "prop-fault",
        }
    }

    fn route(&self) -> MethodRouter {
        let case = self.clone();
        match self.kind {
            Kind::AdHoc => get(move || {
                let case = case.clone();
                async move {
                    let mut error = Error::new(case.status, "prop-code", case.message());
                    if let Some(chain) = build_chain(&case.chain) {
                        error = error.with_source(chain);
                    }
                    Err::<(), Error>(error)
                }
            }),
            Kind::User => get(move || {
                let case = case.clone();
                async move {
                    Err::<(), PropFault>(PropFault {
                        status: case.status,
                        pieces: case.pieces,
                        chain: build_chain(&case.chain),
                    })
                }
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The layer's caps.

/// The caps a layer is built with; `None` leaves the default.
#[derive(Debug, Clone, Copy)]
struct Caps {
    message: Option<usize>,
    body: Option<usize>,
    links: Option<usize>,
    development: bool,
}

impl Caps {
    fn layer(self) -> FaultLayer {
        let mut layer = FaultLayer::new();
        if let Some(bytes) = self.message {
            layer = layer.max_message_bytes(bytes);
        }
        if let Some(bytes) = self.body {
            layer = layer.max_body_bytes(bytes);
        }
        if let Some(links) = self.links {
            layer = layer.max_chain_links(links);
        }
        if self.development {
            layer = layer.development(true);
        }
        layer
    }

    /// The message cap in force: the builder raises values below the minimum.
    fn message_cap(self) -> usize {
        self.message.map_or(DEFAULT_MAX_MESSAGE_BYTES, |bytes| {
            bytes.max(MIN_MESSAGE_BYTES)
        })
    }

    /// The body cap in force: the builder raises values below the minimum.
    fn body_cap(self) -> usize {
        self.body
            .map_or(DEFAULT_MAX_BODY_BYTES, |bytes| bytes.max(MIN_BODY_BYTES))
    }
}

/// Default caps, or caps set through the builder (values below the minimums included).
///
/// Besides any pair of caps, two regimes get extra weight: a small message cap (escaped, even
/// a message of control characters fits the detail's room in any body) and a message cap at
/// or above the body cap, where the body cap does the cutting.
fn caps() -> impl Strategy<Value = Caps> {
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
fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => text_up_to(64),
        3 => text_up_to(1_200),
        2 => text_up_to(MAX_GENERATED_MESSAGE_BYTES),
    ]
}

/// Text with [`SECRET`] somewhere in it.
fn secret_text() -> impl Strategy<Value = String> {
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

fn client_status() -> impl Strategy<Value = StatusCode> {
    (400_u16..=499).prop_map(|code| StatusCode::from_u16(code).expect("a valid status"))
}

fn server_status() -> impl Strategy<Value = StatusCode> {
    (500_u16..=599).prop_map(|code| StatusCode::from_u16(code).expect("a valid status"))
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::AdHoc), Just(Kind::User)]
}

/// A failure with `status`, a message from `message` and a chain from `chain`.
fn case(
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

fn link_texts() -> impl Strategy<Value = Vec<String>> {
    chain_texts("")
}

fn secret_link_texts() -> impl Strategy<Value = Vec<String>> {
    chain_texts("secret ")
}

/// A request id header value: printable ASCII, up to 1,000 chars.
fn request_id() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => prop::collection::vec(prop::char::range(' ', '~'), 0..64),
        2 => prop::collection::vec(prop::char::range(' ', '~'), 0..=1_000),
    ]
    .prop_map(|chars| chars.into_iter().collect())
}

// ---------------------------------------------------------------------------------------------
// Driving the router and reading the answer.

/// A problem response, read whole.
struct Answer {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    request_id_header: Option<HeaderValue>,
    body: Vec<u8>,
    json: Value,
}

impl Answer {
    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("checked to be UTF-8 when read")
    }

    fn detail(&self) -> &str {
        self.json["detail"]
            .as_str()
            .expect("checked to be a string")
    }

    /// The room the body cap left for the escaped detail: the detail is the last member.
    fn detail_room(&self, body_cap: usize) -> usize {
        const KEY: &str = ",\"detail\":\"";
        let text = self.text();
        // Escaped string values cannot hold an unescaped quote, so the first match is the key.
        let start = text.find(KEY).expect("a detail member") + KEY.len();
        let escaped_detail = text.len() - start - "\"}".len();
        body_cap - text.len() + escaped_detail
    }
}

/// Sends `GET /fail` (with `x-request-id` when given) through `case`'s router behind a layer
/// with `caps`, and checks what every problem answer must be.
fn send(case: &Case, caps: Caps, request_id: Option<&str>) -> Result<Answer, TestCaseError> {
    let app = Router::new()
        .route("/fail", case.route())
        .layer(caps.layer());
    let mut request = Request::get("/fail");
    if let Some(id) = request_id {
        request = request.header("x-request-id", id);
    }
    let request = request.body(Body::empty()).expect("a valid request");
    let (parts, body) = RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let response = app.oneshot(request).await.expect("infallible");
            let (parts, body) = response.into_parts();
            let body = to_bytes(body, usize::MAX).await.expect("a problem body");
            (parts, body)
        })
    });

    let body = body.to_vec();
    let text = std::str::from_utf8(&body);
    prop_assert!(text.is_ok(), "body is not UTF-8: {:?}", text.err());
    let json = serde_json::from_slice::<Value>(&body);
    prop_assert!(
        json.is_ok(),
        "body is not JSON ({:?}): {}",
        json.as_ref().err(),
        String::from_utf8_lossy(&body)
    );
    let json = json.expect("checked above");
    let answer = Answer {
        status: parts.status,
        content_type: parts.headers.get(header::CONTENT_TYPE).cloned(),
        request_id_header: parts.headers.get("x-request-id").cloned(),
        body,
        json,
    };

    prop_assert_eq!(answer.status, case.status);
    prop_assert_eq!(
        answer.content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some(PROBLEM_JSON)
    );
    prop_assert!(
        answer.body.len() <= caps.body_cap(),
        "{} bytes > body cap {}",
        answer.body.len(),
        caps.body_cap()
    );
    prop_assert!(answer.json.is_object());
    prop_assert_eq!(
        answer.json["status"].as_u64(),
        Some(u64::from(case.status.as_u16()))
    );
    prop_assert_eq!(answer.json["code"].as_str(), Some(case.code()));
    let id = answer.json["request_id"].as_str();
    prop_assert!(
        id.is_some_and(|id| !id.is_empty()),
        "request_id: {:?}",
        answer.json["request_id"]
    );
    prop_assert!(answer.json["detail"].is_string());
    prop_assert!(answer.request_id_header.is_some());
    Ok(answer)
}

/// The length of `s` as a JSON string's content, escaped the shortest usual way.
fn escaped_len(s: &str) -> usize {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

/// Checks that `detail` is `message`, or a prefix of it followed by the truncation marker.
fn check_bounded_copy(detail: &str, message: &str) -> Result<(), TestCaseError> {
    if detail == message {
        return Ok(());
    }
    prop_assert!(
        detail.ends_with(TRUNCATION_MARKER),
        "detail is neither the message nor marked as cut: {:?}",
        detail
    );
    let kept = &detail[..detail.len() - TRUNCATION_MARKER.len()];
    prop_assert!(
        message.starts_with(kept),
        "the kept part is not a prefix of the message: {:?}",
        kept
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The properties.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A 4xx detail is the message when it fits, else a marked prefix of it, within the
    /// message cap; development mode changes nothing for client errors.
    #[test]
    fn client_errors_answer_a_bounded_copy_of_the_message(
        case in case(client_status(), nasty_text(), link_texts()),
        caps in caps(),
    ) {
        let answer = send(&case, caps, None)?;
        let message = case.message();
        let detail = answer.detail();
        if message.is_empty() {
            // An empty public message gives way to the status's own text.
            prop_assert!(!detail.is_empty());
            return Ok(());
        }
        prop_assert!(
            detail.len() <= caps.message_cap(),
            "detail of {} bytes > message cap {}",
            detail.len(),
            caps.message_cap()
        );
        check_bounded_copy(detail, &message)?;
        let room = answer.detail_room(caps.body_cap());
        if message.len() <= caps.message_cap() && escaped_len(&message) <= room {
            prop_assert_eq!(detail, message.as_str(), "a message that fits is kept whole");
        }
    }

    /// A 5xx detail shows nothing of the message or the chain outside development mode: it
    /// is the same text whatever the error says.
    #[test]
    fn server_errors_hide_the_message_and_chain(
        case in case(server_status(), secret_text(), secret_link_texts()),
        caps in caps(),
    ) {
        let caps = Caps { development: false, ..caps };
        let answer = send(&case, caps, None)?;
        prop_assert!(!answer.detail().is_empty());
        prop_assert!(
            !answer.text().contains(SECRET),
            "the body leaks the message or chain: {}",
            answer.text()
        );
        let plain = Case {
            kind: Kind::AdHoc,
            status: case.status,
            pieces: vec!["nothing to see".to_owned()],
            chain: Vec::new(),
        };
        let reference = send(&plain, caps, None)?;
        prop_assert_eq!(answer.detail(), reference.detail());
    }

    /// In development mode a 5xx detail starts with a bounded copy of the message (the chain
    /// follows it), and the body stays within its cap.
    #[test]
    fn development_mode_shows_a_bounded_server_message(
        case in case(server_status(), secret_text(), secret_link_texts()),
        caps in caps(),
    ) {
        let caps = Caps { development: true, ..caps };
        let answer = send(&case, caps, None)?;
        let message = case.message();
        let detail = answer.detail();
        let secret_end = message.find(SECRET).expect("generated with the word") + SECRET.len();
        let fits = secret_end + TRUNCATION_MARKER.len() <= caps.message_cap()
            && escaped_len(&message[..secret_end]) + TRUNCATION_MARKER.len()
                <= answer.detail_room(caps.body_cap());
        if fits {
            prop_assert!(
                detail.contains(SECRET),
                "development mode hides the message: {:?}",
                detail
            );
        }
        if !detail.starts_with(&message) {
            let marker = detail.find(TRUNCATION_MARKER);
            prop_assert!(marker.is_some(), "detail neither starts with the message nor is cut");
            let kept = &detail[..marker.expect("checked above")];
            prop_assert!(message.starts_with(kept), "kept part is not a prefix: {:?}", kept);
        }
    }

    /// Any printable request id, up to 1,000 chars, leaves the body within its cap. An id of
    /// at most `MAX_REQUEST_ID_BYTES` comes back whole; a longer one (or an empty one) is
    /// replaced by a generated id, the same in the body and the header.
    #[test]
    fn long_request_ids_keep_the_body_within_the_cap(
        case in prop_oneof![
            case(client_status(), nasty_text(), link_texts()),
            case(server_status(), secret_text(), secret_link_texts()),
        ],
        caps in caps(),
        id in request_id(),
    ) {
        let answer = send(&case, caps, Some(&id))?;
        let member = answer.json["request_id"].as_str().expect("checked in send");
        let header = answer.request_id_header.as_ref().and_then(|v| v.to_str().ok());
        prop_assert_eq!(header, Some(member));
        if id.is_empty() || id.len() > MAX_REQUEST_ID_BYTES {
            prop_assert!(!member.is_empty() && member != id);
            prop_assert!(member.len() <= MAX_REQUEST_ID_BYTES);
        } else {
            prop_assert_eq!(member, id.as_str());
        }
    }

    /// `max_chain_links` bounds the chain development mode shows, and says when it goes on.
    #[test]
    fn development_mode_shows_the_chain_up_to_the_link_cap(
        kind in kind(),
        status in server_status(),
        depth in 0..=MAX_CHAIN_DEPTH,
        links in prop::option::of(1..=MAX_CHAIN_DEPTH + 10),
    ) {
        let case = Case {
            kind,
            status,
            pieces: vec!["boom".to_owned()],
            chain: (1..=depth).map(|n| format!("link {n}")).collect(),
        };
        let caps = Caps { message: None, body: Some(64 * 1024), links, development: true };
        let answer = send(&case, caps, None)?;
        let cap = links.unwrap_or(faultline::limits::DEFAULT_MAX_CHAIN_LINKS);
        let mut expected = String::from("boom");
        for link in case.chain.iter().take(cap) {
            expected.push_str(" <- ");
            expected.push_str(link);
        }
        if depth > cap {
            expected.push_str(" <- …");
        }
        prop_assert_eq!(answer.detail(), expected.as_str());
    }
}

// ---------------------------------------------------------------------------------------------
// Bugs found by the properties above, pinned by examples.

/// Sends one 400 whose message is `message` through a layer with `caps`; returns the detail.
fn client_detail(message: &str, caps: Caps) -> String {
    let case = Case {
        kind: Kind::AdHoc,
        status: StatusCode::BAD_REQUEST,
        pieces: vec![message.to_owned()],
        chain: Vec::new(),
    };
    let answer = send(&case, caps, Some("r")).expect("a well-formed problem answer");
    answer.detail().to_owned()
}

/// A 400 message that fits its cap but whose escape does not fit the room a 1,024-byte body
/// leaves for the detail: the body cap cuts it and appends the marker, which once made the
/// detail up to 13 bytes longer than the message cap (with an 800-byte cap and
/// `x-request-id: r`, 779 `a`s and 21 U+0001 gave an 810-byte detail).
#[test]
fn detail_stays_within_the_message_cap_when_the_body_cap_cuts_it() {
    let mut over = Vec::new();
    for cap in (700..=1_000).step_by(10) {
        let caps = Caps {
            message: Some(cap),
            body: Some(1_024),
            links: None,
            development: false,
        };
        for controls in 1..=30 {
            let message = format!("{}{}", "a".repeat(cap - controls), "\u{1}".repeat(controls));
            let detail = client_detail(&message, caps);
            if detail.len() > cap {
                over.push((cap, controls, detail.len()));
            }
        }
    }
    assert!(
        over.is_empty(),
        "(message cap, trailing U+0001s, detail bytes) over the cap: {over:?}"
    );
}

/// With `max_chain_links(0)`, development mode once showed a doubled separator:
/// `boom <-  <- …`.
#[test]
fn development_mode_with_no_links_says_only_that_the_chain_goes_on() {
    let case = Case {
        kind: Kind::AdHoc,
        status: StatusCode::INTERNAL_SERVER_ERROR,
        pieces: vec!["boom".to_owned()],
        chain: vec!["link 1".to_owned()],
    };
    let caps = Caps {
        message: None,
        body: None,
        links: Some(0),
        development: true,
    };
    let answer = send(&case, caps, None).expect("a well-formed problem answer");
    assert_eq!(answer.detail(), "boom <- …");
}
