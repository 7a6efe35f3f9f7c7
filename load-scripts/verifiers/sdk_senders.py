#!/usr/bin/env python3
"""Deliveries signed by the senders' own Python libraries, sent to webhook-intake.

standardwebhooks (Standard Webhooks and GitLab's signing token), svix, stripe and
slack-sdk sign; Shopify, Gitea, Forgejo and Bitbucket publish no library that signs, so
theirs are signed by their documented formulas, and GitLab's token is sent as it is. Each
library also verifies what it signed, so a header this script gets wrong fails here, not
in the receiver. The other way round, deliveries signed by faultline's own `Signer`
(`webhook-intake sign`) must pass each library's verifier, and fail it with the body
changed, before they are sent too. Every case is sent ROUNDS times from PARALLEL threads;
each answer's status and problem code are checked. Prints the tally of answers by code as
JSON.

    sdk_senders.py ADDR      (secrets in the environment, and WEBHOOK_INTAKE, the binary
                              that signs, as sdks.py sets them)
"""

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import stripe
from slack_sdk.signature import SignatureVerifier
from standardwebhooks.webhooks import Webhook as StandardWebhook
from svix.webhooks import Webhook as SvixWebhook

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import signing  # noqa: E402 (the senders without a library of their own)

ADDR = sys.argv[1]
ROUNDS = 4
PARALLEL = 8
SIX_MINUTES = timedelta(minutes=6)
BODY = '{"type":"invoice.paid","data":{"id":"in_1","amount":4200}}'
TAMPERED = BODY.replace("4200", "4201")
SECRET = {name: os.environ[f"SECRET_{name.upper().replace('-', '_')}"] for name in (
    "standard", "svix", "gitlab-signed", "stripe", "slack", "shopify", "gitea", "forgejo",
    "bitbucket", "gitlab")}
OTHER = {"standard": "whsec_" + base64.b64encode(b"a key of another inbox, 32 bytes").decode(),
         "plain": "a secret of another inbox"}


def now():
    return datetime.now(timezone.utc)


def standard(secret, at, msg_id="msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", prefix="webhook", body=BODY):
    signature = StandardWebhook(secret).sign(msg_id, at, body)
    headers = {f"{prefix}-id": msg_id, f"{prefix}-timestamp": str(int(at.timestamp())),
               f"{prefix}-signature": signature}
    if abs((now() - at).total_seconds()) < 60:
        StandardWebhook(secret).verify(body, headers)
    return headers


def svix(secret, at, msg_id="msg_svix_1"):
    signature = SvixWebhook(secret).sign(msg_id, at, BODY)
    headers = {"svix-id": msg_id, "svix-timestamp": str(int(at.timestamp())), "svix-signature": signature}
    if abs((now() - at).total_seconds()) < 60:
        SvixWebhook(secret).verify(BODY, headers)
    return headers


def stripe_header(secret, at):
    header = stripe.WebhookSignature.generate_signature_header(BODY, secret, int(at.timestamp()))
    if abs((now() - at).total_seconds()) < 60:
        stripe.WebhookSignature.verify_header(BODY, header, secret, tolerance=300)
    return {"stripe-signature": header}


def slack(secret, at):
    verifier = SignatureVerifier(secret)
    ts = str(int(at.timestamp()))
    signature = verifier.generate_signature(timestamp=ts, body=BODY)
    if abs((now() - at).total_seconds()) < 60:
        assert verifier.is_valid(body=BODY, timestamp=ts, signature=signature)
    return {"x-slack-request-timestamp": ts, "x-slack-signature": signature}


def faultline_sign(sender, secret, *given):
    """The headers faultline's Signer sends with BODY, signed now; `given` is the --id and
    --event flags, for the senders that send them."""
    signed = subprocess.run([os.environ["WEBHOOK_INTAKE"], "sign", sender, secret, *given],
                            input=BODY.encode(), capture_output=True, check=True)
    return json.loads(signed.stdout)


def refused(verify):
    """Whether a library's verifier raises (or answers False) on what it is given."""
    try:
        return verify() is False
    except Exception:
        return True


def faultline_signed():
    """Deliveries signed by faultline, each passed by the sender's own library first, and
    refused by it with the body changed (so a verifier that checks nothing fails here)."""
    out = []
    for inbox, sender, event in (("standard", "standard-webhooks", ()),
                                 ("gitlab-signed", "gitlab-signed", ("--event", "Push Hook"))):
        headers = faultline_sign(sender, SECRET[inbox], "--id", "msg_faultline_1", *event)
        assert headers.get("x-gitlab-event") == (event[1] if event else None), headers
        StandardWebhook(SECRET[inbox]).verify(BODY, headers)
        assert refused(lambda: StandardWebhook(SECRET[inbox]).verify(TAMPERED, headers)), inbox
        out.append((inbox, headers, BODY, 200, None))
    # No id given: the signer makes the one it signs.
    signed = faultline_sign("standard-webhooks", SECRET["svix"])
    svix_headers = {name.replace("webhook-", "svix-"): value for name, value in signed.items()}
    SvixWebhook(SECRET["svix"]).verify(BODY, svix_headers)
    assert refused(lambda: SvixWebhook(SECRET["svix"]).verify(TAMPERED, svix_headers))
    out.append(("svix", svix_headers, BODY, 200, None))
    # Stripe and Slack send no id and no event header: the signer is asked for neither.
    headers = faultline_sign("stripe", SECRET["stripe"])
    assert list(headers) == ["stripe-signature"], headers
    check = stripe.WebhookSignature.verify_header
    check(BODY, headers["stripe-signature"], SECRET["stripe"], tolerance=300)
    assert refused(lambda: check(TAMPERED, headers["stripe-signature"], SECRET["stripe"], tolerance=300))
    out.append(("stripe", headers, BODY, 200, None))
    headers = faultline_sign("slack", SECRET["slack"])
    assert sorted(headers) == ["x-slack-request-timestamp", "x-slack-signature"], headers
    slack_check = lambda body: SignatureVerifier(SECRET["slack"]).is_valid(
        body=body, timestamp=headers["x-slack-request-timestamp"], signature=headers["x-slack-signature"])
    assert slack_check(BODY) and not slack_check(TAMPERED)
    out.append(("slack", headers, BODY, 200, None))
    return out


def cases():
    """(inbox, headers, body, status, code) for every delivery, None as the code of a 200."""
    t = now()
    out = []
    for inbox, sign, other in (("standard", standard, OTHER["standard"]),
                               ("svix", svix, OTHER["standard"]),
                               ("stripe", stripe_header, OTHER["plain"]),
                               ("slack", slack, OTHER["plain"])):
        out += [
            (inbox, sign(SECRET[inbox], t), BODY, 200, None),
            (inbox, sign(SECRET[inbox], t), TAMPERED, 401, "webhook-signature-mismatch"),
            (inbox, sign(SECRET[inbox], t - SIX_MINUTES), BODY, 401, "webhook-timestamp-stale"),
            (inbox, sign(SECRET[inbox], t + SIX_MINUTES), BODY, 401, "webhook-timestamp-future"),
            (inbox, sign(other, t), BODY, 401, "webhook-signature-mismatch"),
        ]
    gitlab_signed = dict(standard(SECRET["gitlab-signed"], t), **{"x-gitlab-event": "Push Hook"})
    out.append(("gitlab-signed", gitlab_signed, BODY, 200, None))
    # A rotation on Stripe's side: the old secret's v1 beside the new one's.
    old = stripe.WebhookSignature.generate_signature_header(BODY, OTHER["plain"], int(t.timestamp()))
    new = stripe_header(SECRET["stripe"], t)["stripe-signature"]
    out.append(("stripe", {"stripe-signature": new + "," + old.split(",")[1]}, BODY, 200, None))
    shopify = {"x-shopify-hmac-sha256": signing.shopify_signature(SECRET["shopify"], BODY.encode()),
               "x-shopify-topic": "orders/create", "x-shopify-webhook-id": "b54557e4-bdd9-4b37"}
    out += [("shopify", shopify, BODY, 200, None),
            ("shopify", shopify, TAMPERED, 401, "webhook-signature-mismatch")]
    for inbox in ("gitea", "forgejo"):
        headers = {f"x-{inbox}-signature": signing.hex_signature(SECRET[inbox], BODY.encode()),
                   f"x-{inbox}-event": "push",
                   f"x-{inbox}-delivery": "6a1b9d2e-0f3c-4e5a-8b7c-9d0e1f2a3b4c"}
        out += [(inbox, headers, BODY, 200, None),
                (inbox, headers, TAMPERED, 401, "webhook-signature-mismatch")]
    bitbucket = {"x-hub-signature": "sha256=" + signing.hex_signature(SECRET["bitbucket"], BODY.encode()),
                 "x-event-key": "repo:push"}
    out += [("bitbucket", bitbucket, BODY, 200, None),
            ("gitlab", {"x-gitlab-token": SECRET["gitlab"], "x-gitlab-event": "Push Hook"}, BODY, 200, None),
            ("gitlab", {"x-gitlab-token": OTHER["plain"]}, BODY, 401, "webhook-signature-mismatch")]
    return out


def send(case):
    inbox, headers, body, status, code = case
    request = urllib.request.Request(f"http://{ADDR}/hooks/{inbox}", data=body.encode(),
                                     headers=dict(headers, **{"content-type": "application/json"}))
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            got, answer = response.status, json.load(response)
    except urllib.error.HTTPError as error:
        got, answer = error.code, json.load(error)
    assert got == status, f"{inbox}: {got}, expected {status}: {answer}"
    if code is None:
        assert answer["inbox"] == inbox and answer["bytes"] == len(body.encode()), answer
    else:
        assert answer["code"] == code, f"{inbox}: {answer}, expected {code}"
    return code or "ok"


def main():
    started = time.monotonic()
    every = (cases() + faultline_signed()) * ROUNDS
    with ThreadPoolExecutor(PARALLEL) as pool:
        tally = Counter(pool.map(send, every))
    print(json.dumps(dict(tally)))
    print(f"sdk_senders.py: {len(every)} deliveries in {time.monotonic() - started:.1f} s",
          file=sys.stderr)


main()
