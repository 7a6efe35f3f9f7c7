//! A GitHub App's JSON Web Token, which authenticates the App itself (its hook's deliveries
//! are the App's, not an installation's): RS256 over `iat`, `exp` and `iss`, as GitHub's
//! "Generating a JSON Web Token (JWT) for a GitHub App" describes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// How far back `iat` is set: GitHub's advice, against a clock a little ahead of GitHub's.
const ISSUED_BEFORE: Duration = Duration::from_secs(60);
/// How long a token lives. GitHub refuses more than ten minutes; nine leave room for a clock
/// a little behind GitHub's. A pass makes a fresh one for each request.
const LIFETIME: Duration = Duration::from_secs(9 * 60);

#[derive(serde::Serialize)]
struct Claims {
    iat: u64,
    exp: u64,
    /// The App's id, as a string: GitHub takes its id or its client id here.
    iss: String,
}

/// The JWT of the App `app_id` signed with `key`, valid from a minute before `now`.
pub fn app_jwt(
    app_id: i64,
    key: &EncodingKey,
    now: SystemTime,
) -> Result<String, jsonwebtoken::errors::Error> {
    let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let claims = Claims {
        iat: (now - ISSUED_BEFORE.min(now)).as_secs(),
        exp: (now + LIFETIME).as_secs(),
        iss: app_id.to_string(),
    };
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, key)
}

#[cfg(test)]
mod tests;
