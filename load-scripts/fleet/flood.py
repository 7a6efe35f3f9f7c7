#!/usr/bin/env python3
"""The spool only real senders fill, measured as the hole was found (flood.sh); standard
library and the harness only, 127.0.0.1 only.

One node on a throwaway PostgreSQL, its inboxes made and known; PostgreSQL stopped; 60
made-up pushes of 4 MiB at once to instances and inboxes that never existed (none may get a
2xx: each is past the per-body cap); then 160 of 512 KiB (the unverified bound takes what
fits, the rest get 503 with Retry-After); the node killed with SIGKILL and restarted on its
spool with the database still down (it still knows the inboxes; 60 more made-up pushes all
get 503: what the bound holds still counts); then 30 signed pushes of the real senders to the
known inboxes, all 202 queued. PostgreSQL back: the real deliveries are stored, nothing else.
Everything it starts is stopped by PID.

    flood.py [--release]
"""

import json
import signal
import time

import hookload
import nodes
from harness.client import Conn, label
from harness.ingest import hook_path, push_body
from harness.procs import Failure
from harness.storm import run_parallel

# As measured on main: 60 pushes of 4 MiB, each past the 1 MiB per-body cap.
LARGE = 60
LARGE_BYTES = 4 << 20
# Under the cap: the bound (64 MiB, the default) takes 127 of these, not 160.
SMALL = 160
SMALL_BYTES = 512 << 10
UNVERIFIED_BOUND = 64 << 20
REAL_PER_PROVIDER = 6
# A refresh after the setup is quick; this is the bound of a stuck one.
KNOWN_TIMEOUT_S = 30


def health(url):
    status, body, _ = Conn(url).request("GET", "/health")
    if status != 200:
        raise Failure(f"/health answered {status}")
    return body


def wait_known(env, url):
    """Until the node knows every inbox ENV made."""
    count = len(env["inboxes"])
    deadline = time.monotonic() + KNOWN_TIMEOUT_S
    while health(url)["spool"].get("known_inboxes") != count:
        if time.monotonic() > deadline:
            raise Failure(f"the node never knew {count} inboxes: {health(url)}")
        time.sleep(0.1)


def padded_push(n, size):
    """A GitHub push of exactly `size` bytes, one commit whose message is the padding."""
    bare = push_body("github", f"flood-{n:06d}", 1)
    message = f"change 0 of flood-{n:06d}"
    return bare.replace(message.encode(), (message + "x" * (size - len(bare))).encode())


def flood(url, first, count, size, want):
    """COUNT made-up GitHub pushes of SIZE bytes at once, each to an instance and inbox that
    never existed, signed with nothing; fails unless no 2xx came but 202 queued, every 503
    has Retry-After, and WANT (`none`: no 202; `fill:BOUND`: 202 until the unverified spool
    holds BOUND bytes, to a record, no more)."""
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
        raise Failure("MISMATCH: a made-up push got a 2xx other than 202 queued")
    if any(status == 503 and not retry_after for status, _, retry_after in answers):
        raise Failure("MISMATCH: a 503 without Retry-After")
    if any(status not in (202, 503) for status, _, _ in answers):
        raise Failure(f"MISMATCH: answers other than 202 and 503: {tally}")
    if after["depth_bytes"] != before["depth_bytes"]:
        raise Failure("MISMATCH: made-up pushes reached the main spool")
    grew = unverified["depth"] - before["unverified"]["depth"]
    if grew != queued:
        raise Failure(f"MISMATCH: {queued} answered queued, {grew} records spooled")
    if want == "none" and queued:
        raise Failure(f"MISMATCH: {queued} made-up pushes were queued")
    if want.startswith("fill:"):
        bound = int(want[len("fill:"):])
        record = unverified["depth_bytes"] // max(unverified["depth"], 1)
        held = unverified["depth_bytes"] <= bound < unverified["depth_bytes"] + record
        if not queued or queued == count or not held:
            raise Failure(f"MISMATCH: the bound of {bound} B did not fill and hold: {unverified}")
    print(f"flood: {queued} queued")


def real(env, url, per_provider):
    """Signed pushes of every provider to the known inboxes, at once; fails unless every one
    is answered 202 queued."""
    jobs = [(vcs, f"real-{vcs}-{i}") for vcs in hookload.PROVIDERS for i in range(per_provider)]

    def send(i):
        vcs, delivery = jobs[i]
        body = push_body(vcs, delivery, 2)
        status, answer, _ = Conn(url).request(
            "POST", hook_path(env, vcs), body, hookload.headers(env, vcs, delivery, body))
        return status, label(status, answer)

    answers = run_parallel(len(jobs), send)
    tally = {}
    for status, code in answers:
        tally[f"{status} {code}"] = tally.get(f"{status} {code}", 0) + 1
    print(f"real: {len(jobs)} signed pushes to known inboxes: {json.dumps(tally)}")
    if tally != {"202 queued": len(jobs)}:
        raise Failure("MISMATCH: a real delivery was not acknowledged")


def stored(found, per_provider):
    """Fails unless the store's rows (FOUND) hold the real deliveries, PER_PROVIDER of every
    provider, each with its commits, and nothing else."""
    count = len(hookload.PROVIDERS) * per_provider
    rows = hookload.read_rows(found)
    real_rows = [d for d, (commits, _, kept) in rows.items()
                 if d.startswith("real-") and commits == kept == 2]
    print(f"stored: {len(real_rows)} real deliveries with their commits, "
          f"{len(rows) - len(real_rows)} others")
    if len(real_rows) != count or len(rows) != count:
        raise Failure(f"MISMATCH: {len(real_rows)} of {count} real deliveries stored, "
            f"{len(rows) - len(real_rows)} others")


def spool_bytes(run, node):
    return sum(f.stat().st_size for f in (run.work / f"{node.name}.spool").rglob("*")
               if f.is_file())


def scenario(run, _args):
    pg = run.postgres()
    node = run.node("f1", pg.url)
    run.say(f"one node {node.url} on postgres :{pg.port}")
    env = hookload.setup(node.url)
    wait_known(env, node.url)
    pg.stop()
    run.say("postgres stopped")
    flood(node.url, 0, LARGE, LARGE_BYTES, "none")
    flood(node.url, 1000, SMALL, SMALL_BYTES, f"fill:{UNVERIFIED_BOUND}")
    run.say(f"the spool directory holds {spool_bytes(run, node)} B")
    node.stop(signal.SIGKILL)
    run.say("f1 killed with SIGKILL while the database is down; restarting it on its spool")
    node = run.restart(node, pg.url)
    wait_known(env, node.url)
    flood(node.url, 2000, LARGE, SMALL_BYTES, "none")
    real(env, node.url, REAL_PER_PROVIDER)
    run.say(f"the spool directory holds {spool_bytes(run, node)} B")
    pg.launch()
    run.say("postgres back")
    hookload.drained([node.url])
    stored(run.sql(hookload.ROWS_SQL), REAL_PER_PROVIDER)


if __name__ == "__main__":
    nodes.main("flood", scenario, "flood.sh [--release]", need=(nodes.POSTGRESQL,))
