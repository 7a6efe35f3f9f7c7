//! Verified webhook intake (feature `webhooks`): one verifier per sender, and the
//! [`Verified`](crate::webhooks::Verified) extractor that yields a delivery only when its signature matches its body.
//!
//! A route takes `Verified<K>` as its body extractor and finds an `Intake<K>` in its state,
//! made with [`Intake::new`](crate::webhooks::Intake::new) from where its keys come from: the keys of one sender, of a
//! type per sender ([`senders::GitHub`](crate::webhooks::senders::GitHub), …, each holding a [`SecretSet`](crate::webhooks::SecretSet): several secrets
//! during a rotation, each with an optional expiry), or a [`Secrets`](crate::webhooks::Secrets) lookup per tenant or inbox.
//! One sender or several, the setup is the same: an app with several holds an intake of each
//! in its state, and each handler names its own. Whatever fails verification is
//! answered with a [`Refusal`](crate::webhooks::Refusal), a [`Fault`](crate::Fault) with a stable code, rendered and
//! counted by the [`FaultLayer`](crate::FaultLayer) like any handled error; it names
//! headers, never a secret or the body.
//!
//! ```
//! use axum::{routing::post, Router};
//! use faultline::webhooks::senders::GitHub;
//! use faultline::webhooks::{Intake, SecretSet, Verified};
//! use faultline::FaultLayer;
//!
//! async fn push(delivery: Verified<GitHub>) -> &'static str {
//!     // Only a delivery signed with the secret gets here.
//!     assert_eq!(delivery.event(), Some("push"));
//!     "kept"
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let intake = Intake::new(GitHub::new(SecretSet::one("It's a Secret to Everybody")?)?);
//! let (layer, ledger) = FaultLayer::pair();
//! let app = Router::new()
//!     .route("/hooks/github", post(push))
//!     .with_state(intake)
//!     .layer(layer);
//! # use tower::ServiceExt;
//! # let request = |signature: &str| {
//! #     axum::http::Request::post("/hooks/github")
//! #         .header("x-github-event", "push")
//! #         .header("x-hub-signature-256", signature)
//! #         .body(axum::body::Body::from("Hello, World!"))
//! #         .unwrap()
//! # };
//! let signed = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
//! let answer = app.clone().oneshot(request(signed)).await?;
//! assert_eq!(answer.status(), 200);
//!
//! let forged = "sha256=0000000000000000000000000000000000000000000000000000000000000000";
//! let answer = app.oneshot(request(forged)).await?;
//! assert_eq!(answer.status(), 401);
//! let series = ledger.snapshot().series;
//! assert!(series.iter().any(|s| s.code == "webhook-signature-mismatch" && s.count == 1));
//! # Ok(())
//! # }
//! ```
//!
//! An app with one state of its own and several senders holds an intake per sender in it:
//! `Intake<senders::GitHub>` beside `Intake<senders::Stripe>`, each picked by a handler's
//! `Verified<senders::GitHub>` (see [`senders`](crate::webhooks::senders)). An intake told where to remember what it
//! took ([`Intake::replays`](crate::webhooks::Intake::replays)) flags or refuses a repeat,
//! recognised by what the sender signed ([`ReplayKey`](crate::webhooks::ReplayKey)).
//!
//! The guide, `docs/webhooks.md`, has the lines to copy for every sender, rotation, replays,
//! and what each refusal tells the sender.

mod body;
mod counters;
mod delivery;
mod handshake;
mod id;
mod intake;
mod keys;
mod proof;
mod refusal;
mod replay;
mod secret;
mod sender;
pub mod senders;
mod sign;

pub use counters::{REPLAYS_EVICTED, REPLAYS_EXPIRED};
pub use delivery::Delivery;
pub use handshake::Handshake;
pub use id::{DeliveryId, IdError, MAX_DELIVERY_ID_BYTES};
pub use intake::{Intake, Verified, DEFAULT_MAX_BODY_BYTES};
pub use keys::{Keys, LookupError, Secrets};
pub use proof::MAX_SIGNATURES;
pub use refusal::{Refusal, IN_PROGRESS_RETRY_AFTER_SECS, SECRETS_RETRY_AFTER_SECS};
pub use replay::{
    OnRepeat, ReplayKey, ReplayMemory, ReplayStore, Seen, DEFAULT_REPLAY_CAPACITY,
    DEFAULT_REPLAY_LEASE, DEFAULT_REPLAY_WINDOW,
};
pub use secret::{
    token_digest, Secret, SecretError, SecretSet, MAX_STANDARD_KEY_BYTES, MIN_STANDARD_KEY_BYTES,
    TOKEN_DIGEST_BYTES,
};
pub use sender::{Sender, ToleranceError, DEFAULT_TOLERANCE, MAX_TOLERANCE, MIN_TOLERANCE};
pub use sign::{Outgoing, Signer};
