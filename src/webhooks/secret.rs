//! The secrets a delivery may be signed with: [`Secret`], each with an optional expiry, and
//! [`SecretSet`], several at once for rotation. What a request is verified with, and the
//! trait a verifier finds it through per request, are in `keys.rs`.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::webhooks::sender::Sender;

/// What Standard Webhooks puts before the base64 of a secret.
const STANDARD_WEBHOOKS_PREFIX: &str = "whsec_";

/// The shortest Standard Webhooks key: its specification asks for a random key "between 24
/// bytes (192 bits) and 64 bytes (512 bits)"; a shorter one can be guessed sooner.
pub const MIN_STANDARD_KEY_BYTES: usize = 24;
/// The longest Standard Webhooks key, from the same sentence of its specification.
pub const MAX_STANDARD_KEY_BYTES: usize = 64;

/// One secret: the key of the HMAC (or, for [`Sender::GitLab`], the token itself), and when
/// it stops being accepted, if ever. Its `Debug` shows the expiry, never the key.
#[derive(Clone)]
pub struct Secret {
    key: Arc<[u8]>,
    form: Form,
    expires: Option<SystemTime>,
}

/// How a secret was given: its bytes as they are, or the key decoded from a `whsec_` text.
/// A sender takes one form only; the other is a mistake
/// [`Keys::new`](crate::webhooks::Keys::new) refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Raw,
    StandardWebhooks,
}

/// Why a secret, a set of them, or the keys of a sender could not be made. Each message
/// names the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretError {
    /// The secret is empty (a `whsec_` text included): anyone could sign with it.
    Empty,
    /// A Standard Webhooks secret lacks its `whsec_` prefix or is not base64 after it.
    NotStandardWebhooks,
    /// A set was built without a secret in it.
    EmptySet,
    /// A `whsec_` text given as raw bytes to a sender that signs with the key it encodes
    /// ([`Sender::StandardWebhooks`], [`Sender::GitLabSigned`]): every delivery would fail.
    EncodedKey {
        /// The sender the keys are for.
        sender: Sender,
    },
    /// A key decoded from `whsec_` given to a sender that signs with its secret's text as
    /// it is (Stripe's `whsec_…` included).
    DecodedKey {
        /// The sender the keys are for.
        sender: Sender,
    },
    /// A key outside the lengths its sender's specification allows.
    KeyLength {
        /// The sender the keys are for.
        sender: Sender,
        /// The key's length.
        bytes: usize,
    },
    /// A token sent as it is in a header ([`Sender::GitLab`]) that no header can carry.
    TokenNotText,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Empty => f.write_str("the webhook secret is empty"),
            SecretError::NotStandardWebhooks => {
                f.write_str("a Standard Webhooks secret is `whsec_` and base64")
            }
            SecretError::EmptySet => {
                f.write_str("a set of webhook secrets needs one secret at least")
            }
            SecretError::EncodedKey { sender } => write!(
                f,
                "`{sender}` signs with the key inside a `whsec_` secret, not with its text: \
                 make it with `Secret::for_sender` or `Secret::standard_webhooks`"
            ),
            SecretError::DecodedKey { sender } => write!(
                f,
                "`{sender}` signs with its secret's text as it is, not a key decoded from \
                 `whsec_`: make it with `Secret::for_sender` or `Secret::new`"
            ),
            SecretError::KeyLength { sender, bytes } => write!(
                f,
                "a `{sender}` key is {bytes} bytes, and its specification asks for \
                 {MIN_STANDARD_KEY_BYTES} to {MAX_STANDARD_KEY_BYTES}"
            ),
            SecretError::TokenNotText => {
                f.write_str("a token sent in a header must be visible ASCII")
            }
        }
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
            form: Form::Raw,
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
    /// // An unset variable says so, not that the form is wrong.
    /// assert_eq!(Secret::standard_webhooks("").unwrap_err(), SecretError::Empty);
    /// assert_eq!(Secret::standard_webhooks("whsec_").unwrap_err(), SecretError::Empty);
    /// ```
    pub fn standard_webhooks(text: &str) -> Result<Self, SecretError> {
        let encoded = match text.strip_prefix(STANDARD_WEBHOOKS_PREFIX) {
            // Nothing at all is empty, as `whsec_` alone is once decoded.
            _ if text.is_empty() => return Err(SecretError::Empty),
            Some(encoded) => encoded,
            None => return Err(SecretError::NotStandardWebhooks),
        };
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| SecretError::NotStandardWebhooks)?;
        let mut secret = Self::new(key)?;
        secret.form = Form::StandardWebhooks;
        Ok(secret)
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

    /// Whether `sender` can verify with this secret, or the mistake that would fail every
    /// delivery: a secret in the other form, a key of a length its specification refuses.
    pub(crate) fn check_for(&self, sender: Sender) -> Result<(), SecretError> {
        let encoded = matches!(sender, Sender::StandardWebhooks | Sender::GitLabSigned);
        match self.form {
            Form::Raw if encoded && self.key.starts_with(STANDARD_WEBHOOKS_PREFIX.as_bytes()) => {
                return Err(SecretError::EncodedKey { sender })
            }
            Form::StandardWebhooks if !encoded => return Err(SecretError::DecodedKey { sender }),
            _ => {}
        }
        let bytes = self.key.len();
        if encoded && !(MIN_STANDARD_KEY_BYTES..=MAX_STANDARD_KEY_BYTES).contains(&bytes) {
            return Err(SecretError::KeyLength { sender, bytes });
        }
        if sender == Sender::GitLab && http::HeaderValue::from_bytes(&self.key).is_err() {
            return Err(SecretError::TokenNotText);
        }
        Ok(())
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

    /// The set of one secret made with [`Secret::for_sender`]: the text as `sender`'s
    /// settings show it.
    ///
    /// ```
    /// use faultline::webhooks::{Keys, SecretSet, Sender};
    ///
    /// let text = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    /// let secrets = SecretSet::for_sender(Sender::StandardWebhooks, text)?;
    /// assert!(Keys::new(Sender::StandardWebhooks, secrets).is_ok());
    /// # Ok::<(), faultline::webhooks::SecretError>(())
    /// ```
    pub fn for_sender(sender: Sender, text: &str) -> Result<Self, SecretError> {
        Self::new([Secret::for_sender(sender, text)?])
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

    /// Whether every secret is in the form `sender` signs with (see [`Keys::new`](super::Keys::new)).
    pub(crate) fn check_for(&self, sender: Sender) -> Result<(), SecretError> {
        self.secrets
            .iter()
            .try_for_each(|secret| secret.check_for(sender))
    }

    /// The secrets that pass at `now`.
    pub(crate) fn live(&self, now: SystemTime) -> impl Iterator<Item = &Secret> {
        self.secrets.iter().filter(move |s| s.is_live(now))
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
