//! The secrets a delivery may be signed with: [`Secret`], each with an optional expiry;
//! [`SecretSet`], several at once for rotation; and [`Secrets`], the trait a verifier finds
//! them through, per request.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine;
use http::request::Parts;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::webhooks::sender::Sender;

/// What Standard Webhooks puts before the base64 of a secret.
const STANDARD_WEBHOOKS_PREFIX: &str = "whsec_";

/// One secret: the key of the HMAC (or, for [`Sender::GitLab`], the token itself), and when
/// it stops being accepted, if ever. Its `Debug` shows the expiry, never the key.
#[derive(Clone)]
pub struct Secret {
    key: Arc<[u8]>,
    expires: Option<SystemTime>,
}

/// Why a secret or a set of them could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretError {
    /// The secret is empty: anyone could sign with it.
    Empty,
    /// A Standard Webhooks secret lacks its `whsec_` prefix or is not base64 after it.
    NotStandardWebhooks,
    /// A set was built without a secret in it.
    EmptySet,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SecretError::Empty => "a webhook secret must not be empty",
            SecretError::NotStandardWebhooks => "a Standard Webhooks secret is `whsec_` and base64",
            SecretError::EmptySet => "a set of webhook secrets needs one secret at least",
        })
    }
}

impl StdError for SecretError {}

impl Secret {
    /// A secret whose bytes are the key, as GitHub, GitLab, Bitbucket, Gitea, Forgejo, Stripe
    /// (its `whsec_…` text as it is), Slack and Shopify use it. An empty one is an error.
    ///
    /// ```
    /// use faultline::webhooks::{Secret, SecretError};
    ///
    /// assert!(Secret::new("It's a Secret to Everybody").is_ok());
    /// assert_eq!(Secret::new("").unwrap_err(), SecretError::Empty);
    /// ```
    pub fn new(key: impl AsRef<[u8]>) -> Result<Self, SecretError> {
        let key = key.as_ref();
        if key.is_empty() {
            return Err(SecretError::Empty);
        }
        Ok(Self {
            key: key.into(),
            expires: None,
        })
    }

    /// A Standard Webhooks secret, `whsec_` and the base64 of the key, as Svix, GitLab's
    /// signing tokens and the Standard Webhooks libraries give it.
    ///
    /// ```
    /// use faultline::webhooks::{Secret, SecretError};
    ///
    /// assert!(Secret::standard_webhooks("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
    /// let unprefixed = Secret::standard_webhooks("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    /// assert_eq!(unprefixed.unwrap_err(), SecretError::NotStandardWebhooks);
    /// ```
    pub fn standard_webhooks(text: &str) -> Result<Self, SecretError> {
        let encoded = text
            .strip_prefix(STANDARD_WEBHOOKS_PREFIX)
            .ok_or(SecretError::NotStandardWebhooks)?;
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| SecretError::NotStandardWebhooks)?;
        Self::new(key)
    }

    /// The secret of `sender` as its settings show it: [`standard_webhooks`] for
    /// [`Sender::StandardWebhooks`] and [`Sender::GitLabSigned`], [`new`] for the others.
    ///
    /// [`standard_webhooks`]: Secret::standard_webhooks
    /// [`new`]: Secret::new
    ///
    /// ```
    /// use faultline::webhooks::{Secret, Sender};
    ///
    /// assert!(Secret::for_sender(Sender::Stripe, "whsec_not-base64!").is_ok());
    /// assert!(Secret::for_sender(Sender::StandardWebhooks, "whsec_not-base64!").is_err());
    /// ```
    pub fn for_sender(sender: Sender, text: &str) -> Result<Self, SecretError> {
        match sender {
            Sender::StandardWebhooks | Sender::GitLabSigned => Self::standard_webhooks(text),
            _ => Self::new(text),
        }
    }

    /// The moment from which this secret no longer passes: the end of a rotation's grace.
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires = Some(at);
        self
    }

    /// Whether it still passes at `now`.
    pub(crate) fn is_live(&self, now: SystemTime) -> bool {
        self.expires.is_none_or(|expires| now < expires)
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Whether `digest` is the [`token_digest`] of this secret, in constant time: digests on
    /// both sides, so the time taken says nothing of either length.
    pub(crate) fn digest_matches(&self, digest: &[u8; TOKEN_DIGEST_BYTES]) -> Choice {
        token_digest(&self.key).ct_eq(digest)
    }
}

/// Bytes of a [`token_digest`]: a SHA-256.
pub const TOKEN_DIGEST_BYTES: usize = 32;

/// The SHA-256 of a token sent as it is (GitLab's `X-Gitlab-Token`): the form to keep a
/// token in when it is checked later, since the token is the secret itself. The verifier
/// compares these digests, never the token, so a check of a kept digest
/// ([`SecretSet::matches_token_digest`]) is the same check as at receive time.
///
/// ```
/// use std::time::SystemTime;
/// use faultline::webhooks::{token_digest, SecretSet};
///
/// let kept = token_digest(b"glpat-the-inbox-token");
/// let secrets = SecretSet::one("glpat-the-inbox-token")?;
/// assert!(secrets.matches_token_digest(&kept, SystemTime::now()));
/// assert!(!secrets.matches_token_digest(&token_digest(b"another"), SystemTime::now()));
/// # Ok::<(), faultline::webhooks::SecretError>(())
/// ```
pub fn token_digest(token: &[u8]) -> [u8; TOKEN_DIGEST_BYTES] {
    Sha256::digest(token).into()
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// The secrets an inbox accepts at once: during a rotation the new one and the old one,
/// which carries the end of its grace as its expiry. Never empty. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SecretSet {
    secrets: Arc<[Secret]>,
}

impl SecretSet {
    /// The set of these secrets; none at all is an error.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use faultline::webhooks::{Secret, SecretSet};
    ///
    /// let grace_ends = SystemTime::now() + Duration::from_secs(24 * 60 * 60);
    /// let set = SecretSet::new([
    ///     Secret::new("new secret")?,
    ///     Secret::new("old secret")?.expires_at(grace_ends),
    /// ])?;
    /// assert_eq!(set.len(), 2);
    /// assert!(SecretSet::new([]).is_err());
    /// # Ok::<(), faultline::webhooks::SecretError>(())
    /// ```
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Result<Self, SecretError> {
        let secrets: Arc<[Secret]> = secrets.into_iter().collect();
        if secrets.is_empty() {
            return Err(SecretError::EmptySet);
        }
        Ok(Self { secrets })
    }

    /// The set of one secret made with [`Secret::new`].
    pub fn one(key: impl AsRef<[u8]>) -> Result<Self, SecretError> {
        Self::new([Secret::new(key)?])
    }

    /// How many secrets it holds, expired ones included.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// Always false: a set holds one secret at least. (Here for the convention beside `len`.)
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Whether `digest` is the [`token_digest`] of a secret live at `now`. Every live secret
    /// is compared, so the time taken does not say which matched.
    pub fn matches_token_digest(&self, digest: &[u8; TOKEN_DIGEST_BYTES], now: SystemTime) -> bool {
        let matched = self.live(now).fold(Choice::from(0), |any, secret| {
            any | secret.digest_matches(digest)
        });
        matched.into()
    }

    /// The secrets that pass at `now`.
    pub(crate) fn live(&self, now: SystemTime) -> impl Iterator<Item = &Secret> {
        self.secrets.iter().filter(move |s| s.is_live(now))
    }
}

/// What a request is verified with: who sends it, and the secrets it may be signed with.
#[derive(Debug, Clone)]
pub struct Keys {
    sender: Sender,
    secrets: SecretSet,
}

impl Keys {
    /// The keys of one sender.
    pub fn new(sender: Sender, secrets: SecretSet) -> Self {
        Self { sender, secrets }
    }

    /// The sender.
    pub fn sender(&self) -> Sender {
        self.sender
    }

    /// The secrets.
    pub fn secrets(&self) -> &SecretSet {
        &self.secrets
    }
}

/// Why a lookup found no keys.
#[derive(Debug)]
#[non_exhaustive]
pub enum LookupError {
    /// No inbox answers to this request: a 404, which tells the sender's operator that the
    /// URL is wrong.
    UnknownInbox,
    /// The store of secrets failed: a 503 with `Retry-After`, so that the sender retries.
    Unavailable(Box<dyn StdError + Send + Sync>),
}

impl LookupError {
    /// The store failed with `error`; the report sees it, the sender does not.
    pub fn unavailable(error: impl StdError + Send + Sync + 'static) -> Self {
        LookupError::Unavailable(Box::new(error))
    }
}

/// Where the keys of a request come from: a fixed set ([`Keys`] itself), or a lookup per
/// tenant or inbox, which may read the request's path, headers or extensions and await a
/// store.
///
/// ```
/// use axum::extract::{FromRequestParts, Path};
/// use axum::http::request::Parts;
/// use faultline::webhooks::{Keys, LookupError, SecretSet, Secrets, Sender};
///
/// /// Inboxes by the last segment of `/hooks/{inbox}`, from a store of theirs.
/// struct Inboxes(std::collections::HashMap<String, SecretSet>);
///
/// impl Secrets for Inboxes {
///     async fn keys(&self, request: &mut Parts) -> Result<Keys, LookupError> {
///         let Ok(Path(inbox)) = Path::<String>::from_request_parts(request, &()).await else {
///             return Err(LookupError::UnknownInbox);
///         };
///         let secrets = self.0.get(&inbox).ok_or(LookupError::UnknownInbox)?;
///         Ok(Keys::new(Sender::GitHub, secrets.clone()))
///     }
/// }
/// ```
pub trait Secrets: Send + Sync + 'static {
    /// The keys this request is verified with. It runs before the body is read, so a
    /// request for no inbox costs no read.
    fn keys(&self, request: &mut Parts) -> impl Future<Output = Result<Keys, LookupError>> + Send;
}

impl Secrets for Keys {
    async fn keys(&self, _request: &mut Parts) -> Result<Keys, LookupError> {
        Ok(self.clone())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_expired_secret_is_left_out_and_its_debug_never_shows_the_key() {
        let now = SystemTime::now();
        let set = SecretSet::new([
            Secret::new("current").unwrap(),
            Secret::new("gone").unwrap().expires_at(now),
            Secret::new("grace")
                .unwrap()
                .expires_at(now + Duration::from_secs(1)),
        ])
        .unwrap();
        let live: Vec<&[u8]> = set.live(now).map(Secret::key).collect();
        assert_eq!(live, [&b"current"[..], b"grace"]);
        let shown = format!("{set:?}");
        assert!(
            !shown.contains("current") && !shown.contains("grace"),
            "{shown}"
        );
    }

    #[test]
    fn a_token_digest_matches_a_live_secret_only() {
        let now = SystemTime::now();
        let set = SecretSet::new([
            Secret::new("current").unwrap(),
            Secret::new("gone").unwrap().expires_at(now),
        ])
        .unwrap();
        assert!(set.matches_token_digest(&token_digest(b"current"), now));
        assert!(!set.matches_token_digest(&token_digest(b"gone"), now));
        assert!(!set.matches_token_digest(&token_digest(b"curren"), now));
        let before = now - Duration::from_secs(1);
        assert!(set.matches_token_digest(&token_digest(b"gone"), before));
    }

    #[test]
    fn a_standard_webhooks_secret_is_decoded_and_a_bad_one_refused() {
        let secret = Secret::standard_webhooks("whsec_aGVsbG8=").unwrap();
        assert_eq!(secret.key(), b"hello");
        for bad in ["whsec_", "whsec_not base64!", "aGVsbG8="] {
            assert!(Secret::standard_webhooks(bad).is_err(), "{bad}");
        }
    }
}
