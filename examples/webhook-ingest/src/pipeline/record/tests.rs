use super::*;
use crate::ids::{DeliveryId, InboxId, InstanceId};

#[test]
fn a_delivery_survives_its_encoding_and_a_cut_one_is_refused() {
    let delivery = SpooledDelivery {
        instance: InstanceId::stored("in_1".into()),
        inbox: InboxId::stored("ib_2".into()),
        provider: Provider::Gitlab,
        event: "Push Hook".into(),
        delivery: DeliveryId::parse("d-3").unwrap(),
        proof: Some(Proof::Token { digest: [9; 32] }),
        received: Some(UNIX_EPOCH + Duration::from_millis(1_764_000_000_123)),
        key: None,
        body: br#"{"ref":"refs/heads/main"}"#.to_vec(),
    };
    let bytes = delivery.encode();
    assert_eq!(SpooledDelivery::decode(&bytes), Some(delivery.clone()));
    let verified = SpooledDelivery {
        proof: None,
        key: Some([7; 32]),
        ..delivery
    };
    assert_eq!(SpooledDelivery::decode(&verified.encode()), Some(verified));
    assert_eq!(SpooledDelivery::decode(&bytes[..20]), None);
}

#[test]
fn kept_signature_headers_survive_and_a_version_1_record_is_still_read() {
    use axum::http::{HeaderName, HeaderValue};

    let headers = vec![
        (
            HeaderName::from_static("webhook-id"),
            HeaderValue::from_static("msg_1"),
        ),
        (
            HeaderName::from_static("webhook-signature"),
            HeaderValue::from_static("v1,abc= v1,def="),
        ),
    ];
    let delivery = SpooledDelivery {
        instance: InstanceId::stored("in_1".into()),
        inbox: InboxId::stored("ib_2".into()),
        provider: Provider::Gitlab,
        event: "Push Hook".into(),
        delivery: DeliveryId::parse("d-3").unwrap(),
        proof: Some(Proof::Headers(headers)),
        received: Some(UNIX_EPOCH + Duration::from_millis(7)),
        key: None,
        body: b"{}".to_vec(),
    };
    assert_eq!(SpooledDelivery::decode(&delivery.encode()), Some(delivery));

    // Version 1, as written before: six fields, GitHub's tag bare after its kind byte.
    let tag = [0xab; 32];
    let proof = [&[1u8][..], &tag].concat();
    let mut old = vec![VERSION_1];
    for field in [&b"in_1"[..], b"ib_2", b"github", b"push", b"d-4", &proof] {
        old.extend_from_slice(&(field.len() as u32).to_le_bytes());
        old.extend_from_slice(field);
    }
    old.extend_from_slice(b"{}");
    let read = SpooledDelivery::decode(&old).unwrap();
    assert_eq!((read.received, read.body.as_slice()), (None, &b"{}"[..]));
    let Some(Proof::Headers(kept)) = read.proof else {
        panic!("{:?}", read.proof)
    };
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, "x-hub-signature-256");
    assert_eq!(kept[0].1, format!("sha256={}", "ab".repeat(32)).as_str());
}

#[test]
fn a_version_2_record_is_read_without_a_key() {
    let mut old = vec![VERSION_2];
    let received = 7u64.to_le_bytes();
    for field in [
        &b"in_1"[..],
        b"ib_2",
        b"github",
        b"push",
        b"d-5",
        b"",
        &received,
    ] {
        old.extend_from_slice(&(field.len() as u32).to_le_bytes());
        old.extend_from_slice(field);
    }
    old.extend_from_slice(b"{}");
    let read = SpooledDelivery::decode(&old).unwrap();
    assert_eq!(
        (read.delivery.as_str(), read.key, &read.body[..]),
        ("d-5", None, &b"{}"[..])
    );
    assert_eq!(read.received, Some(UNIX_EPOCH + Duration::from_millis(7)));
}

/// A record is written into one buffer of its exact size (`Vec::with_capacity` gives
/// exactly what it is asked for): a body of many megabytes is never copied into a buffer
/// twice its size as it grows. The body here is larger than every other field together,
/// as a push's is.
#[test]
fn a_record_is_encoded_into_a_buffer_of_its_exact_size() {
    let delivery = SpooledDelivery {
        instance: InstanceId::stored("in_1".into()),
        inbox: InboxId::stored("ib_2".into()),
        provider: Provider::Github,
        event: "push".into(),
        delivery: DeliveryId::parse("d-6").unwrap(),
        proof: None,
        received: Some(UNIX_EPOCH + Duration::from_millis(7)),
        key: Some([3; 32]),
        body: vec![b'x'; 64 * 1024],
    };
    let bytes = delivery.encode();
    assert_eq!(bytes.capacity(), bytes.len());
    assert_eq!(SpooledDelivery::decode(&bytes), Some(delivery));
}
