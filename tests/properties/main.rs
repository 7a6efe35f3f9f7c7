//! Property tests of the problem bodies `FaultLayer` renders, through the public API only.
//!
//! A handler fails with random statuses, messages of arbitrary unicode (control characters,
//! quotes, backslashes, multi-byte chars, emoji; 0 to ~20,000 bytes, written in random pieces)
//! and random `source()` chains, behind a layer with default or builder-set caps. Every answer
//! must be valid JSON within the body cap; 4xx details must be bounded copies of the message;
//! 5xx details must not show it unless development mode is on.

mod case;
mod oracle;
mod strategies;

use axum::http::StatusCode;
use faultline::limits::MAX_REQUEST_ID_BYTES;
use faultline::limits::TRUNCATION_MARKER;
use proptest::prelude::*;

use case::{Caps, Case, Kind};
use oracle::{check_bounded_copy, escaped_len, send};
use strategies::{
    caps, case, client_status, kind, link_texts, nasty_text, request_id, secret_link_texts,
    secret_text, server_status, MAX_CHAIN_DEPTH, SECRET,
};

// ---------------------------------------------------------------------------------------------
// The properties.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A 4xx detail is the message when it fits, else a prefix of it ending in the truncation
    /// marker, within the message cap; development mode changes nothing for client errors.
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
