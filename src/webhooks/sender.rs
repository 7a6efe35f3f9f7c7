//! [`Sender`]: who signs a delivery, and the headers and replay window each one uses.

use std::fmt;
use std::time::Duration;

/// The replay window of the senders that sign a timestamp: Standard Webhooks, Stripe (its
/// libraries' default `tolerance`) and Slack all document five minutes.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

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
    /// Every sender, for tests and for services that name them in configuration.
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

    /// How far from now a signed timestamp may be, either way; `None` for the senders that
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
