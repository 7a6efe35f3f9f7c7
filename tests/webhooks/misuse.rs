//! Secrets in the wrong form for their sender, keys of the wrong length, empty secrets and
//! replay windows out of bounds: errors when the keys are made, each naming its fix, never
//! an inbox that refuses every delivery.

use std::time::{Duration, SystemTime};

use faultline::webhooks::{
    Delivery, Keys, Outgoing, Secret, SecretError, SecretSet, Sender, Signer, ToleranceError,
    MAX_TOLERANCE, MIN_TOLERANCE,
};
use faultline::Fault;

const SVIX: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn whsec(bytes: usize) -> String {
    use base64::Engine;
    let key = vec![b'k'; bytes];
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

#[test]
fn a_whsec_text_taken_as_raw_bytes_is_refused_for_the_senders_that_decode_it() {
    for sender in [Sender::StandardWebhooks, Sender::GitLabSigned] {
        let Err(refused) = Keys::new(sender, SecretSet::one(SVIX).unwrap()) else {
            panic!("{sender}: a `whsec_` text taken as raw bytes");
        };
        assert_eq!(refused, SecretError::EncodedKey { sender });
        let message = refused.to_string();
        assert!(message.contains("Secret::for_sender"), "{message}");
        assert!(Keys::new(sender, SecretSet::for_sender(sender, SVIX).unwrap()).is_ok());
    }
}

#[test]
fn a_decoded_key_is_refused_for_the_senders_that_sign_with_the_text() {
    let decoded = Secret::standard_webhooks(SVIX).unwrap();
    for sender in Sender::ALL {
        let keys = Keys::new(sender, SecretSet::new([decoded.clone()]).unwrap());
        match sender {
            Sender::StandardWebhooks | Sender::GitLabSigned => assert!(keys.is_ok()),
            _ => {
                let refused = keys.unwrap_err();
                assert_eq!(refused, SecretError::DecodedKey { sender });
                assert!(refused.to_string().contains("Secret::new"), "{refused}");
            }
        }
    }
    // Stripe's own secrets begin with `whsec_` and are used as they are.
    assert!(Keys::new(Sender::Stripe, SecretSet::one("whsec_stripe").unwrap()).is_ok());
}

#[test]
fn a_standard_webhooks_key_is_24_to_64_bytes_as_its_specification_asks() {
    for (bytes, passes) in [(3, false), (23, false), (24, true), (64, true), (65, false)] {
        let set = SecretSet::for_sender(Sender::StandardWebhooks, &whsec(bytes)).unwrap();
        let keys = Keys::new(Sender::StandardWebhooks, set);
        match passes {
            true => assert!(keys.is_ok(), "{bytes} bytes"),
            false => assert_eq!(
                keys.unwrap_err(),
                SecretError::KeyLength {
                    sender: Sender::StandardWebhooks,
                    bytes
                }
            ),
        }
    }
    // Raw bytes are a key too, held to the same lengths.
    let short = SecretSet::one("abc").unwrap();
    let refused = Keys::new(Sender::GitLabSigned, short).unwrap_err();
    assert!(refused.to_string().contains("24 to 64"), "{refused}");
}

#[test]
fn an_empty_secret_says_empty_in_every_form() {
    let cases = [
        SecretSet::one("").unwrap_err(),
        SecretSet::for_sender(Sender::StandardWebhooks, "").unwrap_err(),
        SecretSet::for_sender(Sender::StandardWebhooks, "whsec_").unwrap_err(),
        SecretSet::for_sender(Sender::Stripe, "").unwrap_err(),
        Signer::for_sender(Sender::GitLabSigned, "").unwrap_err(),
    ];
    for refused in cases {
        assert_eq!(refused, SecretError::Empty);
        assert!(refused.to_string().contains("empty"), "{refused}");
    }
}

#[test]
fn a_gitlab_token_no_header_can_carry_is_refused() {
    let refused = Keys::new(Sender::GitLab, SecretSet::one("token\n").unwrap()).unwrap_err();
    assert_eq!(refused, SecretError::TokenNotText);
    assert!(Keys::new(Sender::GitHub, SecretSet::one("any\nbytes").unwrap()).is_ok());
}

/// A Stripe delivery signed `age` ago, verified by keys with `tolerance` (or the default).
fn stripe_at(age: Duration, tolerance: Option<Duration>) -> Result<Delivery, &'static str> {
    let secrets = SecretSet::one("whsec_stripe").unwrap();
    let mut keys = Keys::new(Sender::Stripe, secrets).unwrap();
    if let Some(tolerance) = tolerance {
        keys = keys.with_tolerance(tolerance).unwrap();
    }
    let now = SystemTime::now();
    let signer = Signer::for_sender(Sender::Stripe, "whsec_stripe").unwrap();
    let headers = signer.sign(Outgoing::new(b"{}"), now - age);
    Delivery::verify(&keys, &headers, "{}".into(), now).map_err(|refusal| refusal.code())
}

#[test]
fn an_inbox_tolerance_narrows_and_widens_the_senders_window() {
    let two_minutes = Duration::from_secs(120);
    let six_minutes = Duration::from_secs(360);
    let minute = Some(Duration::from_secs(60));
    let ten_minutes = Some(Duration::from_secs(600));
    assert!(stripe_at(two_minutes, None).is_ok());
    assert_eq!(
        stripe_at(two_minutes, minute).unwrap_err(),
        "webhook-timestamp-stale"
    );
    assert_eq!(
        stripe_at(six_minutes, None).unwrap_err(),
        "webhook-timestamp-stale"
    );
    assert!(stripe_at(six_minutes, ten_minutes).is_ok());
}

#[test]
fn a_tolerance_is_taken_within_its_bounds_and_only_where_a_timestamp_is_signed() {
    let keys = Keys::new(Sender::Slack, SecretSet::one("slack").unwrap()).unwrap();
    let second = Duration::from_secs(1);
    for (asked, passes) in [
        (MIN_TOLERANCE - second, false),
        (MIN_TOLERANCE, true),
        (MAX_TOLERANCE, true),
        (MAX_TOLERANCE + second, false),
    ] {
        let set = keys.clone().with_tolerance(asked);
        match passes {
            true => assert_eq!(set.unwrap().tolerance(), Some(asked)),
            false => assert_eq!(set.unwrap_err(), ToleranceError::OutOfBounds { asked }),
        }
    }
    let github = Keys::new(Sender::GitHub, SecretSet::one("gh").unwrap()).unwrap();
    let refused = github.with_tolerance(Duration::from_secs(60)).unwrap_err();
    assert_eq!(
        refused,
        ToleranceError::NoTimestamp {
            sender: Sender::GitHub
        }
    );
}
