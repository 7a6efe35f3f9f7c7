//! The keys a request is verified with (a sender, its secrets and a tolerance), and where an
//! intake finds them for each request: a fixed set, or a lookup per tenant or inbox
//! ([`Secrets`]), which may fail ([`LookupError`]).

use std::error::Error as StdError;
use std::future::Future;
use std::time::Duration;

use http::request::Parts;

use crate::webhooks::secret::{SecretError, SecretSet};
use crate::webhooks::sender::{Sender, ToleranceError, MAX_TOLERANCE, MIN_TOLERANCE};

/// What a request is verified with: who sends it, the secrets it may be signed with, and
/// how far its signed timestamp may be from now.
#[derive(Debug, Clone)]
pub struct Keys {
    sender: Sender,
    secrets: SecretSet,
    tolerance: Option<Duration>,
}

impl Keys {
    /// The keys of one sender, or the mistake that would refuse every delivery: a secret in
    /// the wrong form for the sender (a `whsec_` text taken as raw bytes for Standard
    /// Webhooks, or decoded for Stripe), a Standard Webhooks key outside the 24 to 64 bytes
    /// its specification asks for, a GitLab token no header can carry.
    ///
    /// ```
    /// use faultline::webhooks::{Keys, SecretError, SecretSet, Sender};
    ///
    /// let svix = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    /// let raw = SecretSet::one(svix)?;
    /// let refused = Keys::new(Sender::StandardWebhooks, raw).unwrap_err();
    /// assert_eq!(refused, SecretError::EncodedKey { sender: Sender::StandardWebhooks });
    /// assert!(refused.to_string().contains("Secret::for_sender"));
    ///
    /// let decoded = SecretSet::for_sender(Sender::StandardWebhooks, svix)?;
    /// assert!(Keys::new(Sender::StandardWebhooks, decoded).is_ok());
    /// // Stripe's secrets also begin with `whsec_`, and Stripe signs with that text.
    /// assert!(Keys::new(Sender::Stripe, SecretSet::one("whsec_stripe_secret")?).is_ok());
    /// # Ok::<(), SecretError>(())
    /// ```
    pub fn new(sender: Sender, secrets: SecretSet) -> Result<Self, SecretError> {
        secrets.check_for(sender)?;
        let tolerance = sender.tolerance();
        Ok(Self {
            sender,
            secrets,
            tolerance,
        })
    }

    /// The same keys with a replay window of their own instead of the sender's
    /// [`DEFAULT_TOLERANCE`](super::DEFAULT_TOLERANCE), within [`MIN_TOLERANCE`] and
    /// [`MAX_TOLERANCE`] (stripe-python's `tolerance`, per inbox). A sender that signs no
    /// timestamp has no window to set.
    ///
    /// ```
    /// use std::time::Duration;
    /// use faultline::webhooks::{Intake, Keys, SecretSet, Sender, ToleranceError};
    ///
    /// let secrets = SecretSet::one("whsec_stripe_secret")?;
    /// let keys = Keys::new(Sender::Stripe, secrets)?.with_tolerance(Duration::from_secs(60))?;
    /// assert_eq!(keys.tolerance(), Some(Duration::from_secs(60)));
    /// let intake = Intake::new(keys.clone());
    ///
    /// let day = Duration::from_secs(24 * 60 * 60);
    /// assert!(matches!(keys.with_tolerance(day), Err(ToleranceError::OutOfBounds { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_tolerance(mut self, tolerance: Duration) -> Result<Self, ToleranceError> {
        if self.tolerance.is_none() {
            return Err(ToleranceError::NoTimestamp {
                sender: self.sender,
            });
        }
        if !(MIN_TOLERANCE..=MAX_TOLERANCE).contains(&tolerance) {
            return Err(ToleranceError::OutOfBounds { asked: tolerance });
        }
        self.tolerance = Some(tolerance);
        Ok(self)
    }

    /// How far from now a signed timestamp may be, either way; `None` for the senders that
    /// sign none.
    pub fn tolerance(&self) -> Option<Duration> {
        self.tolerance
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
/// /// Inboxes by the last segment of `/hooks/{inbox}`, their keys made (and so checked)
/// /// when the inbox was set up.
/// struct Inboxes(std::collections::HashMap<String, Keys>);
///
/// impl Secrets for Inboxes {
///     async fn keys(&self, request: &mut Parts) -> Result<Keys, LookupError> {
///         let Ok(Path(inbox)) = Path::<String>::from_request_parts(request, &()).await else {
///             return Err(LookupError::UnknownInbox);
///         };
///         self.0.get(&inbox).cloned().ok_or(LookupError::UnknownInbox)
///     }
/// }
///
/// let keys = Keys::new(Sender::GitHub, SecretSet::one("It's a Secret to Everybody")?)?;
/// let inboxes = Inboxes([("repo".to_owned(), keys)].into());
/// # Ok::<(), faultline::webhooks::SecretError>(())
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
