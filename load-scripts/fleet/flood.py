#!/usr/bin/env python3
"""An unauthenticated flood and the real senders after it, for flood.sh; standard library and
the harness only.
Every request goes to 127.0.0.1. Subcommands:

  wait-known ENV URL                 waits until the node knows every inbox ENV made
  flood URL FIRST COUNT BYTES WANT   COUNT made-up GitHub pushes of BYTES bytes at once, each to
                                     an instance and inbox that never existed, signed with
                                     nothing; prints the answers and the spools; fails unless
                                     no 2xx came but 202 queued, every 503 has Retry-After, and
                                     WANT (`none`: no 202; `fill:BOUND`: 202 until the
                                     unverified spool holds BOUND bytes, to a record, no more)
  real ENV URL PER_PROVIDER          signed pushes of every provider to the known inboxes, at
                                     once; fails unless every one is answered 202 queued
  stored ROWS PER_PROVIDER           fails unless ROWS (hookload's) holds the real deliveries,
                                     PER_PROVIDER of every provider, each with its commits, and
                                     nothing else
"""

import json
import sys
import time

import hookload
from hookload import PROVIDERS, Conn, die, headers, hook_path, label, push_body, run_parallel

# A refresh after the setup is quick; this is the bound of a stuck one.
KNOWN_TIMEOUT_S = 30


def health(url):
    status, body, _ = Conn(url).request("GET", "/health")
    if status != 200:
        die(f"/health answered {status}")
    return body


def wait_known(env_path, url):
    count = len(json.load(open(env_path))["inboxes"])
    deadline = time.monotonic() + KNOWN_TIMEOUT_S
    while health(url)["spool"].get("known_inboxes") != count:
        if time.monotonic() > deadline:
            die(f"the node never knew {count} inboxes: {health(url)}")
        time.sleep(0.1)


def padded_push(n, size):
    """A GitHub push of exactly `size` bytes, one commit whose message is the padding."""
    bare = push_body("github", f"flood-{n:06d}", 1)
    message = f"change 0 of flood-{n:06d}"
    return bare.replace(message.encode(), (message + "x" * (size - len(bare))).encode())


def flood(url, first, count, size, want):
    def send(i):
        n = first + i
        body = padded_push(n, size)
        path = f"/api/in_flood{n:06d}/inboxes/ib_flood{n:06d}/commits"
        sent = {"content-type": "application/json", "x-github-event": "push",
                "x-github-delivery": f"flood-{n:06d}", "x-hub-signature-256": "sha256=" + "ab" * 32}
        status, answer, retry_after = Conn(url).request("POST", path, body, sent)
        return status, label(status, answer), retry_after

    before = health(url)["spool"]
    started = time.monotonic()
    answers = run_parallel(count, send)
    took = time.monotonic() - started
    after = health(url)["spool"]
    tally = {}
    for status, code, _ in answers:
        tally[f"{status} {code}"] = tally.get(f"{status} {code}", 0) + 1
    unverified = after["unverified"]
    print(f"flood: {count} x {size} B made-up pushes in {took:.1f}s: {json.dumps(tally)}; "
          f"main spool {before['depth_bytes']} -> {after['depth_bytes']} B, unverified spool "
          f"{before['unverified']['depth_bytes']} -> {unverified['depth_bytes']} B "
          f"({unverified['depth']} records), refused full {unverified['refused_full']}, "
          f"too large {unverified['refused_too_large']}")
    queued = sum(1 for status, code, _ in answers if status == 202 and code == "queued")
    if any(200 <= status < 300 for status, _, _ in answers if status != 202):
        die("MISMATCH: a made-up push got a 2xx other than 202 queued")
    if any(status == 503 and not retry_after for status, _, retry_after in answers):
        die("MISMATCH: a 503 without Retry-After")
    if any(status not in (202, 503) for status, _, _ in answers):
        die(f"MISMATCH: answers other than 202 and 503: {tally}")
    if after["depth_bytes"] != before["depth_bytes"]:
        die("MISMATCH: made-up pushes reached the main spool")
    grew = unverified["depth"] - before["unverified"]["depth"]
    if grew != queued:
        die(f"MISMATCH: {queued} answered queued, {grew} records spooled")
    if want == "none" and queued:
        die(f"MISMATCH: {queued} made-up pushes were queued")
    if want.startswith("fill:"):
        bound = int(want[len("fill:"):])
        record = unverified["depth_bytes"] // max(unverified["depth"], 1)
        held = unverified["depth_bytes"] <= bound < unverified["depth_bytes"] + record
        if not queued or queued == count or not held:
            die(f"MISMATCH: the bound of {bound} B did not fill and hold: {unverified}")
    print(f"flood: {queued} queued")


def real(env_path, url, per_provider):
    env = json.load(open(env_path))
    jobs = [(vcs, f"real-{vcs}-{i}") for vcs in PROVIDERS for i in range(per_provider)]

    def send(i):
        vcs, delivery = jobs[i]
        body = push_body(vcs, delivery, 2)
        status, answer, _ = Conn(url).request(
            "POST", hook_path(env, vcs), body, headers(env, vcs, delivery, body))
        return status, label(status, answer)

    answers = run_parallel(len(jobs), send)
    tally = {}
    for status, code in answers:
        tally[f"{status} {code}"] = tally.get(f"{status} {code}", 0) + 1
    print(f"real: {len(jobs)} signed pushes to known inboxes: {json.dumps(tally)}")
    if tally != {"202 queued": len(jobs)}:
        die("MISMATCH: a real delivery was not acknowledged")


def stored(rows_path, per_provider):
    count = len(PROVIDERS) * per_provider
    rows = hookload.read_rows(rows_path)
    real_rows = [d for d, (commits, _, kept) in rows.items()
                 if d.startswith("real-") and commits == kept == 2]
    print(f"stored: {len(real_rows)} real deliveries with their commits, "
          f"{len(rows) - len(real_rows)} others")
    if len(real_rows) != count or len(rows) != count:
        die(f"MISMATCH: {len(real_rows)} of {count} real deliveries stored, "
            f"{len(rows) - len(real_rows)} others")


def main(argv):
    commands = {
        "wait-known": (2, lambda a: wait_known(a[0], a[1])),
        "flood": (5, lambda a: flood(a[0], int(a[1]), int(a[2]), int(a[3]), a[4])),
        "real": (3, lambda a: real(a[0], a[1], int(a[2]))),
        "stored": (2, lambda a: stored(a[0], int(a[1]))),
    }
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 < commands[argv[1]][0]:
        die(__doc__)
    commands[argv[1]][1](argv[2:])


if __name__ == "__main__":
    main(sys.argv)
