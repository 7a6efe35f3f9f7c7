//! [`Sender`]: who signs a delivery, and the headers and replay window each one uses.

use std::fmt;
use std::time::Duration;

/// The replay window of the senders that sign a timestamp: Standard Webhooks, Stripe (its
/// libraries' default `tolerance`) and Slack all document five minutes.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// The narrowest window [`Keys::with_tolerance`](super::Keys::with_tolerance) takes. A
/// delivery is signed when it is sent, then waits on the sender's connection and on the
/// receiver's; clocks kept by NTP agree within a second, but a sender's queue or a slow
/// connection takes seconds more, and a window narrower than that refuses genuine
/// deliveries, which the sender then retries or (Slack) drops.
pub const MIN_TOLERANCE: Duration = Duration::from_secs(5);

/// The widest window [`Keys::with_tolerance`](super::Keys::with_tolerance) takes: the
/// window is how long a captured delivery can be replayed, so it stays short. An hour
/// covers a host whose clock has drifted by minutes, twelve times Stripe's and Standard
/// Webhooks' default; past that the clock is the thing to fix.
pub const MAX_TOLERANCE: Duration = Duration::from_secs(60 * 60);

/// Why a replay window could not be set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToleranceError {
    /// Outside [`MIN_TOLERANCE`] ..= [`MAX_TOLERANCE`].
    OutOfBounds {
        /// The window asked for.
        asked: Duration,
    },
    /// The sender signs no timestamp, so there is no window to set.
    NoTimestamp {
        /// The sender.
        sender: Sender,
    },
}

impl fmt::Display for ToleranceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToleranceError::OutOfBounds { asked } => write!(
                f,
                "a tolerance of {} s is outside {} s to {} s",
                asked.as_secs_f64(),
                MIN_TOLERANCE.as_secs(),
                MAX_TOLERANCE.as_secs()
            ),
            ToleranceError::NoTimestamp { sender } => {
                write!(f, "`{sender}` signs no timestamp, so it has no tolerance")
            }
        }
    }
}

impl std::error::Error for ToleranceError {}

/// A sender of webhooks, and so the way its deliveries prove that they come from it.
///
/// | sender | proof | delivery id | event | signed timestamp |
/// |---|---|---|---|---|
/// | `GitHub` | `X-Hub-Signature-256: sha256=<hex>` | `X-GitHub-Delivery` | `X-GitHub-Event` | none |
/// | `GitLab` | `X-Gitlab-Token: <token>` | `Idempotency-Key`, `X-Gitlab-Event-UUID` | `X-Gitlab-Event` | none |
/// | `GitLabSigned` | Standard Webhooks headers, `whsec_` signing token | `webhook-id` | `X-Gitlab-Event` | `webhook-timestamp` |
/// | `Bitbucket` | `X-Hub-Signature: sha256=<hex>` | `X-Request-UUID` (Cloud), `X-Request-Id` (Data Center) | `X-Event-Key` | none |
/// | `Gitea` | `X-Gitea-Signature: <hex>` | `X-Gitea-Delivery` | `X-Gitea-Event` | none |
/// | `Forgejo` | `X-Forgejo-Signature: <hex>` | `X-Forgejo-Delivery` | `X-Forgejo-Event` | none |
/// | `StandardWebhooks` | `webhook-signature: v1,<base64> …` (or `svix-`) | `webhook-id` | none (in the body) | `webhook-timestamp` |
/// | `Stripe` | `Stripe-Signature: t=<ts>,v1=<hex>,…` | none (in the body) | none (in the body) | `t=` |
/// | `Slack` | `X-Slack-Signature: v0=<hex>` | none | none (in the body) | `X-Slack-Request-Timestamp` |
/// | `Shopify` | `X-Shopify-Hmac-Sha256: <base64>` | `X-Shopify-Webhook-Id` | `X-Shopify-Topic` | none |
///
/// Every HMAC is HMAC-SHA256 keyed with the secret's bytes; for `StandardWebhooks` and
/// `GitLabSigned` the secret is the `whsec_` text decoded (see
/// [`Secret::standard_webhooks`](super::Secret::standard_webhooks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Sender {
    /// GitHub, GitHub Enterprise Server.
    GitHub,
    /// GitLab with a secret token, sent as it is in `X-Gitlab-Token`.
    GitLab,
    /// GitLab with a signing token: Standard Webhooks signatures, GitLab's event header.
    GitLabSigned,
    /// Bitbucket Cloud and Bitbucket Data Center.
    Bitbucket,
    /// Gitea.
    Gitea,
    /// Forgejo.
    Forgejo,
    /// The Standard Webhooks specification: Svix and the senders built on it (Clerk, Resend,
    /// Supabase, …), with `webhook-` or Svix's `svix-` headers.
    StandardWebhooks,
    /// Stripe.
    Stripe,
    /// Slack's Events API, slash commands and interactivity.
    Slack,
    /// Shopify.
    Shopify,
}

/// How a sender encodes its proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// A hex HMAC of the body, after a fixed prefix (`sha256=`, `v0=`, or none).
    Hex {
        header: &'static str,
        prefix: &'static str,
    },
    /// A base64 HMAC of the body.
    Base64 { header: &'static str },
    /// The secret itself.
    Token { header: &'static str },
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    Standard,
    /// `Stripe-Signature: t=…,v1=…`.
    Stripe,
}

impl Sender {
    /// Every sender, for tests and for services that name them in configuration: ten
    /// entries for nine senders, as the README counts them, since GitLab proves a delivery
    /// in two ways (a token, or a signing token) and each is a `Sender` of its own.
    pub const ALL: [Sender; 10] = [
        Sender::GitHub,
        Sender::GitLab,
        Sender::GitLabSigned,
        Sender::Bitbucket,
        Sender::Gitea,
        Sender::Forgejo,
        Sender::StandardWebhooks,
        Sender::Stripe,
        Sender::Slack,
        Sender::Shopify,
    ];

    /// Its name in kebab-case: `github`, `gitlab-signed`, `standard-webhooks`, …
    pub fn name(self) -> &'static str {
        match self {
            Sender::GitHub => "github",
            Sender::GitLab => "gitlab",
            Sender::GitLabSigned => "gitlab-signed",
            Sender::Bitbucket => "bitbucket",
            Sender::Gitea => "gitea",
            Sender::Forgejo => "forgejo",
            Sender::StandardWebhooks => "standard-webhooks",
            Sender::Stripe => "stripe",
            Sender::Slack => "slack",
            Sender::Shopify => "shopify",
        }
    }

    /// The sender named `name`, as [`name`](Sender::name) spells it.
    ///
    /// ```
    /// use faultline::webhooks::Sender;
    ///
    /// assert_eq!(Sender::from_name("gitlab-signed"), Some(Sender::GitLabSigned));
    /// assert_eq!(Sender::from_name("GitHub"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Sender> {
        Sender::ALL.into_iter().find(|sender| sender.name() == name)
    }

    /// How far from now a signed timestamp may be, either way, unless an inbox sets its own
    /// ([`Keys::with_tolerance`](super::Keys::with_tolerance)); `None` for the senders that
    /// sign none.
    pub fn tolerance(self) -> Option<Duration> {
        match self {
            Sender::GitLabSigned | Sender::StandardWebhooks | Sender::Stripe | Sender::Slack => {
                Some(DEFAULT_TOLERANCE)
            }
            _ => None,
        }
    }

    pub(crate) fn scheme(self) -> Scheme {
        match self {
            Sender::GitHub => Scheme::Hex {
                header: "x-hub-signature-256",
                prefix: "sha256=",
            },
            Sender::Bitbucket => Scheme::Hex {
                header: "x-hub-signature",
                prefix: "sha256=",
            },
            Sender::Gitea => Scheme::Hex {
                header: "x-gitea-signature",
                prefix: "",
            },
            Sender::Forgejo => Scheme::Hex {
                header: "x-forgejo-signature",
                prefix: "",
            },
            Sender::Slack => Scheme::Hex {
                header: "x-slack-signature",
                prefix: "v0=",
            },
            Sender::Shopify => Scheme::Base64 {
                header: "x-shopify-hmac-sha256",
            },
            Sender::GitLab => Scheme::Token {
                header: "x-gitlab-token",
            },
            Sender::GitLabSigned | Sender::StandardWebhooks => Scheme::Standard,
            Sender::Stripe => Scheme::Stripe,
        }
    }

    /// The header that carries the proof (lower case): the signature, or GitLab's token.
    /// Standard Webhooks deliveries sent by Svix may carry it as `svix-signature` instead.
    ///
    /// ```
    /// use faultline::webhooks::Sender;
    ///
    /// assert_eq!(Sender::GitHub.signature_header(), "x-hub-signature-256");
    /// assert_eq!(Sender::Stripe.signature_header(), "stripe-signature");
    /// ```
    pub fn signature_header(self) -> &'static str {
        match self.scheme() {
            Scheme::Hex { header, .. } | Scheme::Base64 { header } | Scheme::Token { header } => {
                header
            }
            Scheme::Standard => "webhook-signature",
            Scheme::Stripe => "stripe-signature",
        }
    }

    /// Every header the proof is read from (lower case): the signature, and the signed
    /// timestamp and id where the sender signs them. These are what a delivery kept to be
    /// verified later must keep.
    ///
    /// ```
    /// use faultline::webhooks::Sender;
    ///
    /// assert_eq!(Sender::Slack.proof_headers(), ["x-slack-signature", "x-slack-request-timestamp"]);
    /// assert_eq!(Sender::Gitea.proof_headers(), ["x-gitea-signature"]);
    /// ```
    pub fn proof_headers(self) -> &'static [&'static str] {
        match self {
            Sender::GitHub => &["x-hub-signature-256"],
            Sender::GitLab => &["x-gitlab-token"],
            Sender::Bitbucket => &["x-hub-signature"],
            Sender::Gitea => &["x-gitea-signature"],
            Sender::Forgejo => &["x-forgejo-signature"],
            Sender::GitLabSigned | Sender::StandardWebhooks => {
                &["webhook-id", "webhook-timestamp", "webhook-signature"]
            }
            Sender::Stripe => &["stripe-signature"],
            Sender::Slack => &["x-slack-signature", "x-slack-request-timestamp"],
            Sender::Shopify => &["x-shopify-hmac-sha256"],
        }
    }

    /// The headers that carry the delivery id outside the signature, preferred first (lower
    /// case); empty for the senders whose id is signed with the body, or who send none.
    ///
    /// ```
    /// use faultline::webhooks::Sender;
    ///
    /// assert_eq!(Sender::GitHub.id_headers(), ["x-github-delivery"]);
    /// assert!(Sender::Stripe.id_headers().is_empty());
    /// ```
    pub fn id_headers(self) -> &'static [&'static str] {
        match self {
            Sender::GitHub => &["x-github-delivery"],
            Sender::GitLab => &["idempotency-key", "x-gitlab-event-uuid"],
            // Bitbucket Cloud, then Bitbucket Data Center.
            Sender::Bitbucket => &["x-request-uuid", "x-request-id"],
            Sender::Gitea => &["x-gitea-delivery"],
            Sender::Forgejo => &["x-forgejo-delivery"],
            // Read with the signature: it is signed.
            Sender::GitLabSigned | Sender::StandardWebhooks => &[],
            Sender::Stripe | Sender::Slack => &[],
            Sender::Shopify => &["x-shopify-webhook-id"],
        }
    }

    /// The header that names the event (lower case), for the senders that name it outside
    /// the body.
    ///
    /// ```
    /// use faultline::webhooks::Sender;
    ///
    /// assert_eq!(Sender::Gitea.event_header(), Some("x-gitea-event"));
    /// assert_eq!(Sender::Stripe.event_header(), None);
    /// ```
    pub fn event_header(self) -> Option<&'static str> {
        match self {
            Sender::GitHub => Some("x-github-event"),
            Sender::GitLab | Sender::GitLabSigned => Some("x-gitlab-event"),
            Sender::Bitbucket => Some("x-event-key"),
            Sender::Gitea => Some("x-gitea-event"),
            Sender::Forgejo => Some("x-forgejo-event"),
            Sender::Shopify => Some("x-shopify-topic"),
            Sender::StandardWebhooks | Sender::Stripe | Sender::Slack => None,
        }
    }
}

impl fmt::Display for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_senders_that_sign_a_timestamp_have_a_window_and_the_others_none() {
        let windowed: Vec<&str> = Sender::ALL
            .into_iter()
            .filter(|s| s.tolerance().is_some())
            .map(Sender::name)
            .collect();
        assert_eq!(
            windowed,
            ["gitlab-signed", "standard-webhooks", "stripe", "slack"]
        );
    }
}
