#!/usr/bin/env python3
"""No push lost while the database is down (outage.sh); standard library and the harness
only, 127.0.0.1 only.

Three nodes on a throwaway PostgreSQL, each with its own spool, take a push storm (every
REDELIVER_EVERY-th delivery sent again at once to a second node); mid-storm PostgreSQL is
stopped for several seconds, one node is killed with SIGKILL while it is down and restarted
on its spool (with the database still down). Once the database is back and the spools are
drained, it checks: no 5xx while the database was down; every delivery answered 2xx stored
once with all its commits; a resend of each answered `duplicate`; the ledgers, summed, count
every request they answered (the killed node's from its restart on: a request counts for it
when its connection was opened after the kill). Everything it starts is stopped by PID.

    outage.py [--release]
"""

import json
import signal
import time

import hookload
import nodes
from harness import storm as storms
from harness.procs import Failure

NODES = ("o1", "o2", "o3")
# The node killed while the database is down (its index in NODES).
VICTIM = 1
# The storm: long enough to hold the outage with seconds to spare on both sides.
STORM_S = 18
STORM_SENDERS = 24
# The outage starts once this many answers are in, and lasts about DOWN_S.
DOWN_AFTER = 400
DOWN_S = 5
# How long the storm may take to reach DOWN_AFTER answers before the run is called stuck.
WAIT_S = 60
# Every this many deliveries, one is sent a second time at once to the next node: a
# redelivery that two nodes (and their spools) see.
REDELIVER_EVERY = 4
SENDERS_RESEND = 24


def storm(env, log_path, seconds, senders, urls):
    """Pushes for SECONDS (harness.storm.storm), every REDELIVER_EVERY-th twice at once."""
    entries, elapsed = storms.storm(env, urls, log_path, "outage", senders,
                                    seconds=seconds, redeliver_every=REDELIVER_EVERY)
    acked = sum(1 for e in entries if 200 <= e["status"] < 300)
    print(f"outage: storm: {len(entries)} requests in {elapsed:.1f}s from {senders} senders, "
          f"{acked} answered 2xx")


def reconcile(env, log_path, found, meta, polls, urls):
    """The checks of the module's doc on the storm's LOG_PATH and the store's rows (FOUND);
    META says when PostgreSQL was stopped and back (`down_from`, `down_to`), which node was
    killed and when it had exited (`killed`, `killed_at`); POLLS are the /health requests
    the drain sent each node."""
    with open(log_path) as log:
        entries = [json.loads(line) for line in log]
    rows = hookload.read_rows(found)
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
        raise Failure("MISMATCH: " + "; ".join(problems[:10]))
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


def outage(run, pg, servers, storm_log):
    """PostgreSQL stopped for about DOWN_S, node VICTIM killed and restarted meanwhile; the
    nodes (the victim's new server in its place) and META for `reconcile`."""
    down_from = time.time()
    pg.stop()
    run.say(f"postgres stopped after {nodes.lines(storm_log)} answers")
    time.sleep(DOWN_S // 2)
    victim = servers[VICTIM]
    victim.stop(signal.SIGKILL)
    killed_at = time.time()
    run.say(f"{victim.name} killed with SIGKILL while the database is down; restarting it on "
            "its spool")
    servers[VICTIM] = run.restart(victim, pg.url)
    time.sleep(DOWN_S - DOWN_S // 2)
    pg.launch()
    down_to = time.time()
    run.say(f"postgres back after {down_to - down_from:.1f}s")
    return {"down_from": down_from, "down_to": down_to, "killed": VICTIM,
            "killed_at": killed_at}


def scenario(run, _args):
    pg = run.postgres()
    servers = run.nodes(pg.url, list(NODES))
    urls = [s.url for s in servers]
    run.say(f"nodes {' '.join(urls)} on postgres :{pg.port}, each with its own spool")
    env = hookload.setup(urls[0])
    log = run.work / "outage.storm"
    log.touch()
    storming = nodes.Background(lambda: storm(env, log, STORM_S, STORM_SENDERS, urls))
    nodes.wait_for_lines(log, DOWN_AFTER, WAIT_S, storming)
    meta = outage(run, pg, servers, log)
    storming.join()
    polls = hookload.drained(urls)
    reconcile(env, log, run.sql(hookload.ROWS_SQL), meta, polls, urls)
    for server in servers:
        for line in server.log_path.read_text(errors="replace").splitlines():
            if "spool" in line and ("cut" in line or "from before" in line):
                run.say(f"{server.name}: {line}")


if __name__ == "__main__":
    nodes.main("outage", scenario, "outage.sh [--release]", need=(nodes.POSTGRESQL,))
