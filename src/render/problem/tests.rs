//! The problem body's rendering: its members, their escapes and their bounds.

use http::HeaderValue;

use super::*;
use crate::summary::Public;

fn escaped(s: &str, cap: usize) -> String {
    let mut out = BytesMut::new();
    push_escaped(&mut out, s, cap);
    String::from_utf8(out.to_vec()).expect("escaped text is UTF-8")
}

#[test]
fn plain_text_that_fits_is_copied_as_is() {
    assert_eq!(
        escaped("event `issues` is not handled", 64),
        "event `issues` is not handled"
    );
}

#[test]
fn quotes_backslashes_and_controls_are_escaped_between_whole_runs() {
    assert_eq!(escaped("a\"b\\c\nd\u{1}é", 64), "a\\\"b\\\\c\\nd\\u0001é");
    assert_eq!(escaped("\u{1f}", 6), "\\u001f");
}

#[test]
fn the_kept_head_is_the_head_of_the_failure_at_hand() {
    let config = Config::default();
    let not_found = Summary::from_rejection(StatusCode::NOT_FOUND, b"", &config);
    let conflict = Summary::from_rejection(StatusCode::CONFLICT, b"", &config);
    // The same status under another code, as a handler's fault would have it.
    let mut taken = Summary::from_rejection(StatusCode::CONFLICT, b"", &config);
    taken.code = "taken";
    // And the same code (one `&'static str`, one address) under another status.
    let mut gone = Summary::from_rejection(StatusCode::GONE, b"", &config);
    gone.code = taken.code;
    let failures = [
        &not_found, &conflict, &not_found, &taken, &taken, &gone, &taken, &conflict,
    ];
    for summary in failures {
        let (mut kept, mut fresh) = (BytesMut::new(), BytesMut::new());
        push_usual_head(&mut kept, summary);
        push_head(&mut fresh, summary, None);
        assert_eq!(kept, fresh);
        let code = format!("\"code\":\"{}\"", summary.code);
        assert!(String::from_utf8(kept.to_vec()).unwrap().contains(&code));
    }
}

#[test]
fn the_body_says_where_its_request_id_is_with_a_type_base_or_without() {
    let plain = Config::default();
    let based = Config {
        type_base: Some("https://errors.example.com/".into()),
        ..Config::default()
    };
    let summary = Summary::from_rejection(StatusCode::NOT_FOUND, b"", &plain);
    let made = RequestId::Made(*b"0a1b2c3d-000000000001");
    let sent = RequestId::Sent(HeaderValue::from_static("say \"hi\""));
    for config in [&plain, &based] {
        for id in [&made, &sent] {
            let (body, at) = problem_body(&summary, id, "/hooks/7", config);
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(json["request_id"], id.text());
            // Where it says: the escaped text, which is the id itself when nothing in it
            // needs escaping.
            let escaped = serde_json::to_string(id.text()).unwrap();
            assert_eq!(body[at].as_ref(), &escaped.as_bytes()[1..escaped.len() - 1]);
        }
    }
}

#[test]
fn a_status_detail_is_copied_as_it_is_only_where_nothing_needs_escaping_and_it_fits() {
    for status in 400..600 {
        let status = StatusCode::from_u16(status).unwrap();
        assert!(
            !any_needs_escape(status_detail(status).as_bytes()),
            "{status}"
        );
    }
    // A cap too small for the detail still cuts it, marker and all.
    let summary = Summary::from_rejection(StatusCode::NOT_FOUND, b"", &Config::default());
    let id = RequestId::Made(*b"0a1b2c3d-000000000001");
    let whole = problem_body(&summary, &id, "/", &Config::default()).0;
    let config = Config {
        max_body_bytes: whole.len() - 5,
        ..Config::default()
    };
    let (body, _) = problem_body(&summary, &id, "/", &config);
    assert!(body.len() <= config.max_body_bytes, "{}", body.len());
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(json["detail"]
        .as_str()
        .unwrap()
        .ends_with(TRUNCATION_MARKER));
}

#[test]
fn the_detail_is_a_public_text_but_a_server_errors_only_in_development() {
    let detail = |status: u16, public: &str, development: bool| {
        let config = Config {
            development,
            ..Config::default()
        };
        let status = StatusCode::from_u16(status).unwrap();
        let mut summary = Summary::from_rejection(status, b"", &config);
        summary.public = Public::Text(public.to_owned());
        let id = RequestId::Made(*b"0a1b2c3d-000000000001");
        let (body, _) = problem_body(&summary, &id, "/", &config);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        json["detail"].as_str().unwrap().to_owned()
    };
    assert_eq!(detail(409, "name taken", false), "name taken");
    assert_eq!(detail(409, "", false), status_detail(StatusCode::CONFLICT));
    assert_eq!(detail(502, "db at 10.0.0.7", false), GENERIC_SERVER_DETAIL);
    assert_eq!(detail(502, "db at 10.0.0.7", true), "db at 10.0.0.7");
    assert_eq!(detail(502, "", true), GENERIC_SERVER_DETAIL);
}

#[test]
fn every_byte_that_needs_escaping_is_found_at_any_place_in_a_word() {
    for byte in 0..=255u8 {
        for at in 0..19 {
            let mut bytes = [b'a'; 19];
            bytes[at] = byte;
            assert_eq!(
                any_needs_escape(&bytes),
                needs_escape(byte),
                "{byte} at {at}"
            );
        }
    }
    assert!(!any_needs_escape("é\u{7f}\u{ffff} ~".as_bytes()));
}

#[test]
fn a_cut_keeps_whole_escapes_and_the_marker_within_the_cap() {
    let text = "\"".repeat(40);
    let out = escaped(&text, 30);
    assert!(out.len() <= 30, "{out}");
    assert!(out.ends_with(TRUNCATION_MARKER));
    let kept = &out[..out.len() - TRUNCATION_MARKER.len()];
    assert_eq!(kept, "\\\"".repeat(kept.len() / 2));
}

/// What `push_escaped` promises, written the slow way: every char escaped whole when all of
/// them fit; else the longest run of whole escaped chars after which the marker still fits
/// the cap and the kept text with the marker reads no longer than the text itself, then the
/// marker, when the cap has room for it at all.
fn escaped_as_promised(s: &str, cap: usize) -> String {
    let pieces: Vec<(String, usize)> = s
        .chars()
        .map(|c| (escape(c, &mut [0u8; 6]).to_owned(), c.len_utf8()))
        .collect();
    let whole: String = pieces.iter().map(|(piece, _)| piece.as_str()).collect();
    if whole.len() <= cap {
        return whole;
    }
    let marker = TRUNCATION_MARKER.len();
    let (mut out, mut kept) = (String::new(), 0);
    for (piece, bytes) in &pieces {
        if out.len() + piece.len() + marker > cap || kept + bytes + marker > s.len() {
            break;
        }
        out.push_str(piece);
        kept += bytes;
    }
    if marker <= cap {
        out.push_str(TRUNCATION_MARKER);
    }
    out
}

#[test]
fn every_cap_keeps_what_the_escape_promises_and_no_more() {
    let texts = [
        "plain text, nothing to escape in it at all",
        "\"quoted\" and \\back\\slashed\\",
        "tab\there\nnew line\r\u{1}\u{1f}",
        "é, ü and 漢字 between \"quotes\"",
        "\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"",
        "\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}",
        "short",
        "",
    ];
    for text in texts {
        for cap in 0..text.len() * 6 + 2 {
            let out = escaped(text, cap);
            assert_eq!(out, escaped_as_promised(text, cap), "{text:?} at {cap}");
            assert!(out.len() <= cap, "{text:?} at {cap}: {out:?}");
            // After the members before it, as in a body: the cap is the text's own.
            let mut body = BytesMut::from(&b"{\"detail\":\""[..]);
            let before = body.len();
            push_escaped(&mut body, text, cap);
            assert_eq!(&body[before..], out.as_bytes(), "{text:?} at {cap}");
        }
    }
}

/// A sent id as long as the longest taken, every byte of it escaped to two, is in the body
/// whole, where its range says: the id's cap is the escaped length of the longest id.
#[test]
fn the_longest_sent_id_is_kept_whole_however_it_escapes() {
    let config = Config::default();
    let summary = Summary::from_rejection(StatusCode::NOT_FOUND, b"", &config);
    for byte in ["a", "\"", "\\"] {
        let text = byte.repeat(MAX_REQUEST_ID_BYTES);
        let id = RequestId::Sent(HeaderValue::from_str(&text).unwrap());
        let (body, at) = problem_body(&summary, &id, "/", &config);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["request_id"], text);
        let escaped = serde_json::to_string(&text).unwrap();
        assert_eq!(body[at].as_ref(), &escaped.as_bytes()[1..escaped.len() - 1]);
    }
}

/// The detail a client reads for an error status that came without a message of its own:
/// the statuses a client can act on each say what went wrong, a 5xx says only that the
/// server failed, and every other status that it was rejected.
#[test]
fn a_status_without_a_message_gets_the_detail_of_that_status() {
    let details = [
        (400, "The request was rejected."),
        (404, "No route matches this path."),
        (405, "This route does not accept this method."),
        (406, "None of the accepted media types can be produced."),
        (408, "The request took too long to arrive."),
        (409, "The request was rejected."),
        (413, "The request body is larger than this route accepts."),
        (415, "This route does not accept this content type."),
        (429, "Too many requests; slow down."),
        (500, GENERIC_SERVER_DETAIL),
        (502, GENERIC_SERVER_DETAIL),
        (
            503,
            "The service is overloaded or unavailable; retry later.",
        ),
        (504, "The request took too long to handle."),
        (599, GENERIC_SERVER_DETAIL),
    ];
    let config = Config::default();
    let id = RequestId::Made(*b"0a1b2c3d-000000000001");
    for (status, detail) in details {
        let summary = Summary::from_rejection(StatusCode::from_u16(status).unwrap(), b"", &config);
        let (body, _) = problem_body(&summary, &id, "/", &config);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["detail"], detail, "{status}");
    }
}
