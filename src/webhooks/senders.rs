//! One type of keys per sender, so that an app whose router has one state of its own can
//! hold an [`Intake`](super::Intake) per sender in it and each route picks its own:
//! `Intake<GitHub>` and `Intake<Stripe>` are distinct types, which axum's `FromRef` (derived
//! on a state with a field of each) tells apart, and a handler names the one it takes with
//! `Verified<GitHub>`.
//!
//! ```
//! use axum::extract::{FromRef, State};
//! use axum::{routing::post, Router};
//! use faultline::webhooks::senders::{GitHub, Stripe};
//! use faultline::webhooks::{Intake, SecretSet, Verified};
//!
//! #[derive(Clone, FromRef)]
//! struct AppState {
//!     store: std::sync::Arc<std::sync::Mutex<Vec<bytes::Bytes>>>,
//!     github: Intake<GitHub>,
//!     stripe: Intake<Stripe>,
//! }
//!
//! async fn github(State(state): State<AppState>, delivery: Verified<GitHub>) -> &'static str {
//!     state.store.lock().unwrap().push(delivery.into_delivery().into_body());
//!     "kept"
//! }
//! async fn stripe(delivery: Verified<Stripe>) -> &'static str { "kept" }
//!
//! let state = AppState {
//!     store: Default::default(),
//!     github: Intake::new(GitHub::new(SecretSet::one("the GitHub secret")?)?),
//!     stripe: Intake::new(Stripe::new(SecretSet::one("whsec_the_stripe_secret")?)?),
//! };
//! let app: Router = Router::new()
//!     .route("/hooks/github", post(github))
//!     .route("/hooks/stripe", post(stripe))
//!     .with_state(state);
//! # Ok::<(), faultline::webhooks::SecretError>(())
//! ```
//!
//! Two inboxes of one sender in one state (two GitHub organisations, say) each need a type
//! of their own: a newtype of [`Keys`] that implements [`Secrets`] as these do.

use std::time::Duration;

use axum::http::request::Parts;

use crate::webhooks::keys::{Keys, LookupError, Secrets};
use crate::webhooks::secret::{SecretError, SecretSet};
use crate::webhooks::sender::{Sender, ToleranceError};

/// One type per sender, from one definition: keys whose sender is fixed by the type.
macro_rules! sender_keys {
    ($($name:ident => $sender:ident;)*) => {$(
        #[doc = concat!("The keys of an inbox of [`Sender::", stringify!($sender), "`]: `Intake<",
            stringify!($name), ">` in a state, `Verified<", stringify!($name), ">` in a handler.")]
        #[derive(Debug, Clone)]
        pub struct $name(Keys);

        impl $name {
            #[doc = concat!("The keys of a `", stringify!($sender), "` inbox signed with `secrets`; ",
                "an error when a secret is not in the sender's form (see [`Keys::new`]).")]
            pub fn new(secrets: SecretSet) -> Result<Self, SecretError> {
                Keys::new(Sender::$sender, secrets).map(Self)
            }

            /// The same keys, held to `tolerance` for a signed timestamp instead of the
            /// sender's default: see [`Keys::with_tolerance`], whose errors it gives.
            pub fn with_tolerance(self, tolerance: Duration) -> Result<Self, ToleranceError> {
                self.0.with_tolerance(tolerance).map(Self)
            }

            /// The keys, with their sender.
            pub fn as_keys(&self) -> &Keys {
                &self.0
            }
        }

        impl Secrets for $name {
            async fn keys(&self, _request: &mut Parts) -> Result<Keys, LookupError> {
                Ok(self.0.clone())
            }
        }
    )*};
}

sender_keys! {
    GitHub => GitHub;
    GitLab => GitLab;
    GitLabSigned => GitLabSigned;
    Bitbucket => Bitbucket;
    Gitea => Gitea;
    Forgejo => Forgejo;
    StandardWebhooks => StandardWebhooks;
    Stripe => Stripe;
    Slack => Slack;
    Shopify => Shopify;
}
