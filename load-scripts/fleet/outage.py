#!/usr/bin/env python3
"""The push storm of outage.sh and its reconciliation; standard library and the harness only,
127.0.0.1 only.

  storm ENV LOG SECONDS SENDERS URL...   pushes with fresh delivery ids for SECONDS from
                                         SENDERS threads, each to the next node, every
                                         REDELIVER_EVERY-th sent again at once to another
                                         node; one JSON line per answer -> LOG
  drained POLLS URL...                   waits until every spool is drained -> POLLS (JSON)
  reconcile ENV LOG ROWS META POLLS URL... the checks below, then a resend of every delivery

META (JSON, written by outage.sh): down_from and down_to (when PostgreSQL was stopped and
back), killed (the index of the node killed) and killed_at (when it had exited).

Checks: no 5xx while the database was down; every delivery answered 2xx is stored once with
all its commits; a resend of each answers `duplicate`; and the ledgers, summed, count every
request they answered (the killed node's from its restart on: a request counts for it
when its connection was opened after the kill).
"""

import json
import sys

import hookload
from hookload import die, storms

# Every this many deliveries, one is sent a second time at once to the next node: a
# redelivery that two nodes (and their spools) see.
REDELIVER_EVERY = 4
SENDERS_RESEND = 24


def storm(env_path, log_path, seconds, senders, urls):
    """Pushes for SECONDS (harness.storm.storm), every REDELIVER_EVERY-th twice at once."""
    entries, elapsed = storms.storm(json.load(open(env_path)), urls, log_path, "outage", senders,
                                    seconds=seconds, redeliver_every=REDELIVER_EVERY)
    acked = sum(1 for e in entries if 200 <= e["status"] < 300)
    print(f"outage: storm: {len(entries)} requests in {elapsed:.1f}s from {senders} senders, "
          f"{acked} answered 2xx")


def reconcile(env_path, log_path, rows_path, meta_path, polls_path, urls):
    env, meta = json.load(open(env_path)), json.load(open(meta_path))
    polls = json.load(open(polls_path))
    entries = [json.loads(line) for line in open(log_path)]
    rows = hookload.read_rows(rows_path)
    problems, tally = [], {}
    for e in entries:
        key = f"{e['status']} {e['label']}"
        tally[key] = tally.get(key, 0) + 1
    for key, n in sorted(tally.items()):
        print(f"outage: answered {key}: {n}")
    down = [e for e in entries if meta["down_from"] <= e["t"] <= meta["down_to"]]
    down_5xx = [e for e in down if e["status"] >= 500]
    queued = sum(1 for e in down if e["label"] == "queued")
    print(f"outage: while the database was down ({meta['down_to'] - meta['down_from']:.1f}s): "
          f"{len(down)} answers, {queued} queued, {len(down_5xx)} 5xx")
    if down_5xx:
        problems.append(f"{len(down_5xx)} 5xx while the database was down")
    sent = {}
    for e in entries:
        sent.setdefault(e["delivery"], e)
    acked = {e["delivery"] for e in entries if 200 <= e["status"] < 300}
    for delivery in acked:
        count, _, stored = rows.get(delivery, (None, None, None))
        if count != sent[delivery]["commits"] or stored != count:
            problems.append(f"{delivery}: answered 2xx, {stored} of "
                            f"{sent[delivery]['commits']} commits stored")
    strangers = set(rows) - set(sent)
    if strangers:
        problems.append(f"{len(strangers)} stored deliveries were never sent")
    print(f"outage: {len(sent)} deliveries, {len(acked)} acknowledged, {len(rows)} stored after "
          f"the drain, each acknowledged one once with all its "
          f"{sum(sent[d]['commits'] for d in acked)} commits")
    jobs = [(i % len(urls), e["vcs"], d, None, None, e["commits"], 0, "")
            for i, (d, e) in enumerate(sorted(sent.items()))]
    resent = hookload.send_all(env, urls, jobs, SENDERS_RESEND)
    not_duplicate = [(job[2], status, got) for job, status, got in resent
                     if job[2] in acked and (status, got) != (200, "duplicate")]
    if not_duplicate:
        problems.append(f"resend: {len(not_duplicate)} acknowledged deliveries not answered "
                        f"duplicate, such as {not_duplicate[:3]}")
    print(f"outage: resent all {len(sent)}: every acknowledged one answered duplicate"
          if not not_duplicate else "outage: resend: MISMATCH")
    check_ledgers(env, entries, resent, meta, polls, urls, problems)
    if problems:
        die("MISMATCH: " + "; ".join(problems[:10]))
    print("outage: reconciled")


def check_ledgers(env, entries, resent, meta, polls, urls, problems):
    """Each node's ledger counts every request it answered since it (re)started."""
    want = [0] * len(urls)
    want[0] += env["setup_requests"]
    for e in entries:
        restarted = e["node"] != meta["killed"] or e["opened"] > meta["killed_at"]
        if e["status"] and restarted:
            want[e["node"]] += 1
    for job, status, _ in resent:
        if status:
            want[job[0]] += 1
    for i, n in enumerate(polls):
        want[i] += n
    got = []
    for url in urls:
        counts = hookload.ledger(url)
        got.append(sum(v for k, v in counts.items() if k not in ("ignored_events", "started")))
        if counts["started"] != got[-1]:
            problems.append(f"{url}: started {counts['started']} != the outcomes {got[-1]}")
    print(f"outage: sum of the {len(urls)} ledgers: {sum(got)} requests (answered {sum(want)}; "
          f"per node {got} against {want})")
    if got != want:
        problems.append(f"ledgers {got} != answered {want}")


def main(argv):
    commands = {
        "storm": (4, lambda a: storm(a[0], a[1], float(a[2]), int(a[3]), a[4:])),
        "drained": (2, lambda a: json.dump(hookload.drained(a[1:]), open(a[0], "w"))),
        "reconcile": (6, lambda a: reconcile(a[0], a[1], a[2], a[3], a[4], a[5:])),
    }
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 < commands[argv[1]][0]:
        die(__doc__)
    commands[argv[1]][1](argv[2:])


if __name__ == "__main__":
    main(sys.argv)
