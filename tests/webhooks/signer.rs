//! The library's `Signer` against the tests' own signer (`sign.rs`, written from the
//! senders' documents), and the header names and id checks a service reads from `Sender`
//! and `DeliveryId`.

use std::time::SystemTime;

use axum::http::HeaderMap;
use faultline::webhooks::{
    Delivery, DeliveryId, IdError, Keys, Outgoing, Refusal, SecretSet, Sender, Signer,
    MAX_DELIVERY_ID_BYTES,
};
use faultline::Fault;

use crate::server::INBOXES;
use crate::sign::{proof_header, signed, value};

const BODY: &[u8] = br#"{"type":"invoice.paid","data":{"amount":4200}}"#;

/// The id the tests' signer gives each sender's deliveries.
fn id_of(sender: Sender, headers: &[(&'static str, String)]) -> DeliveryId {
    let name = match sender {
        Sender::GitLabSigned | Sender::StandardWebhooks => "webhook-id",
        _ => sender.id_headers().first().copied().unwrap_or("x-none"),
    };
    let id = headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
    DeliveryId::parse(id.map_or("unsent", String::as_str)).unwrap()
}

#[test]
fn the_library_signs_every_proof_header_as_the_senders_documents_do() {
    let at = SystemTime::now();
    for (_, sender, secret) in INBOXES {
        let expected = signed(sender, secret, BODY, at);
        let ours = Signer::for_sender(sender, secret)
            .unwrap()
            .sign(Outgoing::new(BODY).id(&id_of(sender, &expected)), at);
        for &header in sender.proof_headers() {
            assert_eq!(ours[header], value(&expected, header), "{sender} {header}");
        }
        assert_eq!(sender.signature_header(), proof_header(sender), "{sender}");
    }
}

#[test]
fn a_delivery_kept_with_its_proof_headers_only_still_verifies() {
    let at = SystemTime::now();
    let id = DeliveryId::parse("a1b2c3").unwrap();
    for (_, sender, secret) in INBOXES {
        let keys = Keys::new(sender, SecretSet::for_sender(sender, secret).unwrap()).unwrap();
        let sent = Signer::for_sender(sender, secret)
            .unwrap()
            .sign(Outgoing::new(BODY).id(&id), at);
        let mut kept = HeaderMap::new();
        for &name in sender.proof_headers() {
            kept.insert(name, sent[name].clone());
        }
        let checked = Delivery::verify(&keys, &kept, BODY.into(), at);
        assert!(checked.is_ok(), "{sender}: {:?}", checked.unwrap_err());
    }
}

#[test]
fn a_missing_proof_is_refused_naming_the_senders_signature_header() {
    for sender in Sender::ALL {
        let refused = Delivery::check_headers(sender, &HeaderMap::new(), SystemTime::now());
        match refused.unwrap_err() {
            Refusal::SignatureMissing { header } => {
                assert_eq!(header, sender.signature_header(), "{sender}")
            }
            other => panic!("{sender}: {other}"),
        }
    }
}

#[test]
fn the_verifier_and_delivery_id_parse_refuse_the_same_ids() {
    let long = "a".repeat(MAX_DELIVERY_ID_BYTES + 1);
    let longest = "a".repeat(MAX_DELIVERY_ID_BYTES);
    assert_eq!(DeliveryId::parse(&long), Err(IdError::TooLong));
    assert!(DeliveryId::parse(&longest).is_ok());
    let keys = Keys::new(Sender::Gitea, SecretSet::one("gitea").unwrap()).unwrap();
    let signer = Signer::for_sender(Sender::Gitea, "gitea").unwrap();
    let fine = DeliveryId::parse("fine").unwrap();
    for id in ["", "tab\tand space", "é", &long, &longest] {
        let mut headers = signer.sign(Outgoing::new(BODY).id(&fine), SystemTime::now());
        headers.insert("x-gitea-delivery", id.parse().unwrap());
        let verified = Delivery::verify(&keys, &headers, BODY.into(), SystemTime::now());
        match (DeliveryId::parse(id), verified) {
            (Ok(parsed), Ok(delivery)) => assert_eq!(delivery.id(), Some(parsed.as_str())),
            (Err(error), Err(refusal)) => {
                assert_eq!(refusal.code(), "webhook-header-malformed");
                assert!(refusal.to_string().ends_with(error.problem()), "{refusal}");
            }
            (parsed, verified) => panic!("{id:?}: {parsed:?} against {verified:?}"),
        }
    }
}

/// The README counts senders as `Sender::ALL` does once GitLab's two ways are one sender,
/// and says why the two counts differ.
#[test]
fn the_readme_counts_the_senders_as_sender_all_does() {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let mut senders: Vec<&str> = Sender::ALL
        .iter()
        .map(|sender| sender.name().trim_end_matches("-signed"))
        .collect();
    senders.dedup();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let senders = format!("one extractor for {} senders", WORDS[senders.len()]);
    let entries = format!("({} `Sender`s", WORDS[Sender::ALL.len()]);
    assert!(readme.contains(&senders), "the README lacks {senders:?}");
    assert!(readme.contains(&entries), "the README lacks {entries:?}");
}
