use std::time::{Duration, UNIX_EPOCH};

use jsonwebtoken::{decode, Algorithm, DecodingKey, EncodingKey, Validation};

use super::*;

/// A key made for these tests alone (`tests/fixtures/catchup/`), never any App's.
const PRIVATE: &str = include_str!("../../../tests/fixtures/catchup/app-key.pem");
const PUBLIC: &str = include_str!("../../../tests/fixtures/catchup/app-key.pub.pem");

#[derive(serde::Deserialize)]
struct Read {
    iat: u64,
    exp: u64,
    iss: String,
}

#[test]
fn the_token_verifies_with_the_apps_public_key_and_says_what_github_asks() {
    let key = EncodingKey::from_rsa_pem(PRIVATE.as_bytes()).unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let token = app_jwt(42, &key, now).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    let read = decode::<Read>(
        &token,
        &DecodingKey::from_rsa_pem(PUBLIC.as_bytes()).unwrap(),
        &validation,
    )
    .unwrap()
    .claims;
    assert_eq!(read.iss, "42");
    assert_eq!(read.iat, 1_700_000_000 - 60);
    assert_eq!(read.exp, 1_700_000_000 + 9 * 60);
    assert!(
        read.exp - read.iat <= 10 * 60,
        "GitHub refuses a token of more than ten minutes"
    );
}
