"""The signatures of every sender the load scripts sign for, each written once.

The forges (GitHub, Gitea, Forgejo, Bitbucket: a hex HMAC-SHA256 of the body; GitLab: the
secret itself as a token) with the headers each sends, and the base64 HMAC of Shopify. The
senders that publish a library (Standard Webhooks, Svix, Stripe, Slack) are signed by that
library in `verifiers/sdk_senders.py`, which is the point of that script."""

from __future__ import annotations

import base64
import hashlib
import hmac

# The providers whose pushes the ingest service takes.
PROVIDERS = ("github", "gitlab", "bitbucket", "gitea", "forgejo")


def hmac_sha256(secret: str, body: bytes) -> bytes:
    return hmac.new(secret.encode(), body, hashlib.sha256).digest()


def hex_signature(secret: str, body: bytes) -> str:
    """The hex HMAC-SHA256 of `body` under `secret`: GitHub's, Gitea's, Bitbucket's."""
    return hmac_sha256(secret, body).hex()


def shopify_signature(secret: str, body: bytes) -> str:
    """Shopify's `X-Shopify-Hmac-Sha256`: the base64 HMAC-SHA256 of the body."""
    return base64.b64encode(hmac_sha256(secret, body)).decode()


def github_headers(secret: str, delivery: str, body: bytes, event: str = "push") -> dict:
    """What GitHub sends with a delivery."""
    return {"x-github-event": event, "x-github-delivery": delivery,
            "x-hub-signature-256": "sha256=" + hex_signature(secret, body),
            "content-type": "application/json"}


def provider_headers(vcs: str, secret: str, delivery: str, body: bytes, event: str | None = None) -> dict:
    """The headers `vcs` (one of PROVIDERS) sends with a delivery of `event` (its push event by
    default), signed with `secret`."""
    digest = hex_signature(secret, body)
    signature = "sha256=" + digest
    # As Gitea sends it: its own headers, Gogs' and GitHub's; Forgejo adds its own to those.
    gitea = {f"x-{name}-{part}": value for name in ("gitea", "gogs")
             for part, value in (("event", event or "push"), ("delivery", delivery),
                                 ("signature", digest))}
    gitea.update({"x-github-event": event or "push", "x-github-delivery": delivery,
                  "x-hub-signature-256": signature})
    own = {
        "github": lambda: {"x-github-event": event or "push", "x-github-delivery": delivery,
                           "x-hub-signature-256": signature},
        "gitlab": lambda: {"x-gitlab-event": event or "Push Hook", "idempotency-key": delivery,
                           "x-gitlab-token": secret},
        "bitbucket": lambda: {"x-event-key": event or "repo:push", "x-request-uuid": delivery,
                              "x-hub-signature": signature},
        "gitea": lambda: gitea,
        "forgejo": lambda: dict(gitea, **{"x-forgejo-event": event or "push",
                                          "x-forgejo-delivery": delivery,
                                          "x-forgejo-signature": digest}),
    }[vcs]()
    return dict(own, **{"content-type": "application/json"})
