#!/usr/bin/env python3
"""Signed push deliveries for webhook-ingest nodes, and the checks that reconcile them: the
fleet scenarios' library (pg_fleet.py, crash.py, outage.py, flood.py, throughput.py); standard
library and the harness only. Every request goes to 127.0.0.1.

ROWS are a store's delivery rows: delivery_id, commit_count, redeliveries, commits stored for
it (what `ROWS_SQL` selects, from PostgreSQL or from SQLite with `sqlite_rows`).
"""

import hashlib
import json
import sqlite3
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest, metrics, signing, storm as storms  # noqa: E402
from harness.client import Conn, label  # noqa: E402
from harness.ingest import hook_path, push_body  # noqa: E402
from harness.procs import Failure  # noqa: E402
from harness.storm import MAX_COMMITS, run_parallel  # noqa: E402

# The fleet load, per provider: deliveries, and how many carry no commits (tag pushes).
FLEET_PUSHES = 72
FLEET_SENDERS = 24
# Copies of one delivery sent at the same instant, each to the next node.
REDELIVERY_COPIES = 20
FLEET_BAD_SIGNATURES = 45
FLEET_IGNORED = 45
# Commits in a fleet push cycle through 0..MAX_COMMITS-1, so tag-like empty pushes are in the
# mix.
PROVIDERS = signing.PROVIDERS

ROWS_SQL = (
    "SELECT d.delivery_id, d.commit_count, d.redeliveries, "
    "(SELECT count(*) FROM commits c WHERE c.inbox_id = d.inbox_id "
    "AND c.delivery_id = d.delivery_id) FROM deliveries d"
)


def setup(url):
    """An instance, a digest and an inbox per provider (harness.ingest.setup)."""
    return ingest.setup(url, PROVIDERS, "fleet")


def headers(env, vcs, delivery, body, event=None, secret=None):
    return signing.provider_headers(vcs, secret or env["inboxes"][vcs]["secret"], delivery, body, event)


def fleet_jobs(env, nodes):
    """Every request of the fleet load but the redelivery bursts: (node, vcs, delivery,
    event, secret, commits, expected status, expected label)."""
    ignored = {"github": "issues", "gitlab": "Issue Hook", "bitbucket": "pullrequest:created",
               "gitea": "issues", "forgejo": "issues"}
    jobs = []
    for p, vcs in enumerate(PROVIDERS):
        for n in range(FLEET_PUSHES):
            jobs.append((n % nodes, vcs, f"fleet-{vcs}-{n}", None, None, n % MAX_COMMITS,
                         201, "stored"))
    for n in range(FLEET_BAD_SIGNATURES):
        vcs = PROVIDERS[n % len(PROVIDERS)]
        jobs.append(((n + 1) % nodes, vcs, f"forged-{n}", None, "not-the-secret", 1, 401,
                     "bad-signature"))
    for n in range(FLEET_IGNORED):
        vcs = PROVIDERS[n % len(PROVIDERS)]
        jobs.append(((n + 2) % nodes, vcs, f"other-{n}", ignored[vcs], None, 0, 202,
                     "ignored"))
    # Interleaved, so each node takes every kind at once; a fixed order keeps runs alike.
    jobs.sort(key=lambda job: hashlib.sha256(job[2].encode()).digest())
    return jobs


def send_all(env, urls, jobs, senders):
    """Sends jobs from `senders` threads; [(job, status, label)] in no particular order."""
    lock = threading.Lock()
    queue = iter(jobs)
    done = []

    def work(_):
        conns = [Conn(url) for url in urls]
        mine = []
        while True:
            with lock:
                job = next(queue, None)
            if job is None:
                with lock:
                    done.extend(mine)
                return
            node, vcs, delivery, event, secret, commits = job[:6]
            body = push_body(vcs, delivery, commits)
            status, answer, _ = conns[node].request(
                "POST", hook_path(env, vcs), body, headers(env, vcs, delivery, body, event, secret))
            mine.append((job, status, label(status, answer)))

    run_parallel(senders, work)
    return done


def fleet(env, urls):
    """The fleet load: pushes of all providers, REDELIVERY_COPIES copies of one delivery at
    once to different nodes (per provider), bad signatures, ignored events; what was sent."""
    nodes = len(urls)
    sent = [{"ok": 0, "handled": 0} for _ in urls]
    sent[0]["ok"] += env["setup_requests"]
    accepted, problems, tallies = {}, [], {}

    def tally(node, status, got, want_status, want_label, what):
        tallies[f"{status} {got}"] = tallies.get(f"{status} {got}", 0) + 1
        sent[node]["ok" if 200 <= status < 300 else "handled"] += 1
        if (status, got) != (want_status, want_label):
            problems.append(f"{what}: {status} {got}, expected {want_status} {want_label}")

    started = time.monotonic()
    for job, status, got in send_all(env, urls, fleet_jobs(env, nodes), FLEET_SENDERS):
        tally(job[0], status, got, job[6], job[7], job[2])
        if status == 201:
            accepted[job[2]] = job[5]
    redelivered = []
    for vcs in PROVIDERS:
        delivery, commits = f"again-{vcs}", 3
        body = push_body(vcs, delivery, commits)

        def copy(i, vcs=vcs, delivery=delivery, body=body):
            return Conn(urls[i % nodes]).request(
                "POST", hook_path(env, vcs), body, headers(env, vcs, delivery, body))

        answers = run_parallel(REDELIVERY_COPIES, copy)
        stored = sum(1 for status, _, _ in answers if status == 201)
        for i, (status, answer, _) in enumerate(answers):
            tally(i % nodes, status, label(status, answer), status,
                  label(status, answer) if status in (200, 201) else "stored", delivery)
        duplicates = sum(1 for status, answer, _ in answers if label(status, answer) == "duplicate")
        if stored != 1 or duplicates != REDELIVERY_COPIES - 1:
            problems.append(f"{delivery}: {stored} stored, {duplicates} duplicates of "
                            f"{REDELIVERY_COPIES} copies at once")
        accepted[delivery] = commits
        redelivered.append(delivery)
    elapsed = time.monotonic() - started
    for line in sorted(tallies.items()):
        print(f"fleet: answered {line[0]}: {line[1]}")
    print(f"fleet: {sum(tallies.values())} requests in {elapsed:.2f}s across {nodes} nodes")
    if problems:
        raise Failure("MISMATCH: " + "; ".join(problems[:10]))
    return {"sent": sent, "accepted": accepted, "redelivered": redelivered,
            "copies": REDELIVERY_COPIES}


def read_rows(found):
    """ROWS by delivery: {delivery: (commit_count, redeliveries, commits stored)}."""
    rows = {}
    for delivery, count, redeliveries, stored in found:
        if delivery in rows:
            raise Failure(f"delivery {delivery} has two rows")
        rows[delivery] = (int(count), int(redeliveries), int(stored))
    return rows


def sqlite_rows(path):
    """ROWS of the SQLite store at PATH, read only."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(ROWS_SQL).fetchall()
    finally:
        db.close()


def ledger(url):
    """The node's outcome counters and ignored events, once it is quiescent; the earlier
    scrapes of this wait are taken out of `ok`. Its `started` must be the sum of the outcomes
    plus the scrape in flight, or the reconciliation fails."""
    m, scrapes = metrics.quiescent(url)
    counts = m.outcomes()
    counts["ok"] -= scrapes - 1
    counts["ignored_events"] = m.total("webhook_ingest_ignored_events_total")
    counts["started"] = m.started - scrapes
    return counts


def reconcile_fleet(sent, found, urls):
    """The store's ROWS (FOUND) and every node's ledger against what `fleet` SENT."""
    rows = read_rows(found)
    accepted = sent["accepted"]
    problems = []
    if set(rows) != set(accepted):
        problems.append(f"{len(set(accepted) - set(rows))} accepted deliveries missing, "
                        f"{len(set(rows) - set(accepted))} stored that were never accepted")
    for delivery, commits in accepted.items():
        count, redeliveries, stored = rows.get(delivery, (None, None, None))
        want_redeliveries = sent["copies"] - 1 if delivery in sent["redelivered"] else 0
        if (count, stored, redeliveries) != (commits, commits, want_redeliveries):
            problems.append(f"{delivery}: {stored} commits stored of {commits}, "
                            f"{redeliveries} redeliveries (expected {want_redeliveries})")
    commits = sum(accepted.values())
    print(f"fleet: database: {len(rows)} deliveries (accepted {len(accepted)}), "
          f"{sum(r[2] for r in rows.values())} commits (accepted {commits}), "
          f"{len(sent['redelivered'])} deliveries sent {sent['copies']} times at once, each stored once")
    totals = {"ok": 0, "handled": 0}
    ignored = 0
    for i, url in enumerate(urls):
        counts = ledger(url)
        ignored += counts.pop("ignored_events", 0)
        started = counts.pop("started")
        if started != sent["sent"][i]["ok"] + sent["sent"][i]["handled"]:
            problems.append(f"node {i}: started {started}, sent {sent['sent'][i]}")
        totals["started"] = totals.get("started", 0) + started
        for outcome in totals:
            totals[outcome] += counts.get(outcome, 0)
        others = {k: v for k, v in counts.items() if k not in ("ok", "handled") and v}
        if counts.get("ok", 0) != sent["sent"][i]["ok"] or counts.get("handled", 0) != sent["sent"][i]["handled"] or others:
            problems.append(f"node {i}: ledger {counts}, sent {sent['sent'][i]}")
    want = {k: sum(s[k] for s in sent["sent"]) for k in ("ok", "handled")}
    want["started"] = want["ok"] + want["handled"]
    print(f"fleet: sum of the {len(urls)} ledgers: ok {totals['ok']} (sent {want['ok']}), "
          f"handled {totals['handled']} (sent {want['handled']}), started {totals['started']} "
          f"= the outcomes (each node's scrapes taken out)")
    if totals != want:
        problems.append(f"ledgers {totals} != sent {want}")
    print(f"fleet: ignored events counted by the nodes: {ignored} (sent {FLEET_IGNORED})")
    if ignored != FLEET_IGNORED:
        problems.append(f"{ignored} ignored events counted, {FLEET_IGNORED} sent")
    if problems:
        raise Failure("MISMATCH: " + "; ".join(problems[:10]))
    print("fleet: reconciled")


def storm(env, log_path, prefix, count, senders, urls):
    """COUNT pushes with fresh delivery ids (harness.storm.storm), one JSON line per answer
    in LOG_PATH; what it says of them (`line`), deliveries `stored` and `acknowledged`, and
    the `rate` of acknowledgements per second."""
    entries, elapsed = storms.storm(env, urls, log_path, prefix, senders, count=count)
    stored = sum(1 for e in entries if e["status"] == 201)
    acked = [e for e in entries if 200 <= e["status"] < 300]
    rate = len(acked) / elapsed
    line = (f"storm: {len(entries)} deliveries, {stored} stored, {len(acked)} acknowledged in "
            f"{elapsed:.2f}s by {senders} senders: {rate:.0f} deliveries/s, "
            f"{sum(e['commits'] for e in acked) / elapsed:.0f} commits/s")
    return {"line": line, "stored": stored, "acknowledged": len(acked), "rate": round(rate)}


def read_log(log_path):
    entries = {}
    with open(log_path) as log:
        for line in log:
            entry = json.loads(line)
            entries[entry["delivery"]] = entry
    return entries


def reconcile_crash(env, log_path, found, urls):
    """Every delivery answered 2xx is stored once with all its commits, every stored one is
    whole; then every delivery is sent again: "duplicate" exactly for the stored ones."""
    entries, rows = read_log(log_path), read_rows(found)
    problems = []
    answered = [d for d, e in entries.items() if 200 <= e["status"] < 300]
    lost = [d for d, e in entries.items() if e["status"] == 0]
    refused = [d for d, e in entries.items() if e["status"] and not 200 <= e["status"] < 300]
    for delivery in answered:
        if delivery not in rows:
            problems.append(f"{delivery} was answered {entries[delivery]['status']} but is not stored")
    for delivery, (count, redeliveries, stored) in rows.items():
        want = entries[delivery]["commits"] if delivery in entries else None
        if (count, stored, redeliveries) != (want, want, 0):
            problems.append(f"{delivery}: {stored} of {want} commits stored, {redeliveries} redeliveries")
    stored_unanswered = len([d for d in lost + refused if d in rows])
    print(f"crash: {len(entries)} deliveries sent: {len(answered)} answered 2xx, "
          f"{len(lost)} without an answer, {len(refused)} refused; {len(rows)} stored "
          f"({stored_unanswered} of them stored though their answer was lost)")
    jobs = [(i % len(urls), e["vcs"], d, None, None, e["commits"], 0, "")
            for i, (d, e) in enumerate(sorted(entries.items()))]
    resent = send_all(env, urls, jobs, FLEET_SENDERS)
    duplicates = {job[2] for job, status, got in resent if status == 200 and got == "duplicate"}
    newly = {job[2] for job, status, got in resent if status == 201}
    other = [(job[2], status, got) for job, status, got in resent
             if job[2] not in duplicates and job[2] not in newly]
    if duplicates != set(rows):
        problems.append(f"resend: {len(duplicates)} duplicates for {len(rows)} stored "
                        f"({len(duplicates - set(rows))} not stored, {len(set(rows) - duplicates)} missed)")
    if newly != set(entries) - set(rows) or other:
        problems.append(f"resend: {len(newly)} newly stored, {len(other)} other answers {other[:3]}")
    print(f"crash: resent all {len(entries)}: {len(duplicates)} answered duplicate "
          f"(= the {len(rows)} stored), {len(newly)} stored now")
    if problems:
        raise Failure("MISMATCH: " + "; ".join(problems[:10]))


def reconcile_complete(log_path, found):
    """After the resend every delivery is stored, once, with all its commits."""
    entries, rows = read_log(log_path), read_rows(found)

    def is_whole(delivery, commits):
        count, _, stored = rows.get(delivery, (None, None, None))
        return count == stored == commits

    whole = [d for d, e in entries.items() if is_whole(d, e["commits"])]
    if len(whole) != len(entries) or set(rows) - set(entries):
        raise Failure(f"MISMATCH: {len(whole)} of {len(entries)} deliveries stored whole, "
            f"{len(set(rows) - set(entries))} rows never sent")
    print(f"crash: every one of the {len(entries)} deliveries is stored once with its "
          f"{sum(e['commits'] for e in entries.values())} commits")


# How long the spools may take to drain once the store answers; the drainer waits at most
# 2 s between attempts, and drains hundreds of deliveries a second.
DRAIN_TIMEOUT_S = 120


def drained(urls):
    """Waits until every node's /health says its store is up and its spools (the main one
    and the unverified one) empty; the number of /health requests sent to each."""
    polls = [0] * len(urls)
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    conns = [Conn(url) for url in urls]
    pending = set(range(len(urls)))
    while pending:
        for i in sorted(pending):
            status, health, _ = conns[i].request("GET", "/health")
            polls[i] += 1
            spool = health.get("spool", {}) if status == 200 else {}
            if (status == 200 and health.get("store") == "up" and spool.get("depth") == 0
                    and spool.get("unverified", {}).get("depth", 0) == 0):
                pending.discard(i)
        if pending:
            if time.monotonic() > deadline:
                raise Failure(f"spools not drained after {DRAIN_TIMEOUT_S}s: {sorted(pending)}")
            time.sleep(0.1)
    for conn in conns:
        conn.close()
    print(f"drained: {sum(polls)} /health requests")
    return polls


def probe(env, url, delivery, want):
    """One GitHub push to URL; fails unless answered `want` (and a 503 with Retry-After).
    Returns what it printed."""
    body = push_body("github", delivery, 1)
    status, answer, retry_after = Conn(url).request(
        "POST", hook_path(env, "github"), body, headers(env, "github", delivery, body))
    said = (f"probe: {delivery} answered {status} {label(status, answer)}, "
            f"Retry-After {retry_after}; body {json.dumps(answer)}")
    print(said)
    if status != want or (status == 503 and not retry_after):
        raise Failure(f"MISMATCH: expected {want}{' with Retry-After' if want == 503 else ''}")
    return said
