#!/usr/bin/env python3
"""A fleet of failure-lab nodes scraped by a real Prometheus on 127.0.0.1 (fleet.sh).

Sends a known mixed load spread across the nodes, then asks Prometheus's HTTP API for
sum(faultline_requests_started_total), sum(faultline_requests_total) and the per-outcome
sums, and fails unless they equal what was sent and reconcile: started is the outcomes plus
what is in flight, and once the load is over that is each target's scrape. This is how a
service outgrows one machine: Prometheus aggregates the nodes' ledgers; faultline keeps no
cluster state of its own.

    fleet.py [--release]
"""

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import lab, metrics, prometheus, script, storm  # noqa: E402
from harness.client import Conn  # noqa: E402
from harness.procs import Failure  # noqa: E402

NODES = 3
# Give Prometheus this long to scrape what the load left behind before calling it a mismatch.
SETTLE_TIMEOUT_S = 30
JOB = prometheus.JOB
# Every scrape of /metrics passes the layer too and is counted ok once it has finished, so a
# target's latest sample includes all its earlier scrapes: subtract (scrapes - 1) per target.
SCRAPES_BEFORE_LATEST = f'sum(count_over_time(up{{job="{JOB}"}}[1h])) - count(up{{job="{JOB}"}})'
TARGETS_UP = f'count(up{{job="{JOB}"}} == 1)'


def plan(i):
    """Node i's load: a different mix each, so a wrong sum cannot pass by symmetry;
    (path, count, status, outcome)."""
    return [("/ok", 200 + 50 * i, 200, "ok"), ("/handled", 60 + 7 * i, 422, "handled"),
            (f"/missing/{i}", 30 + 3 * i, 404, "rejected"), ("/panic", 10 + i, 500, "panicked")]


def send_load(labs):
    """Every (node, route) on a keep-alive connection of its own, all at once; the answers'
    statuses checked exactly. Returns the requests sent per outcome."""
    jobs = [(server, path, count, status) for i, server in enumerate(labs)
            for path, count, status, _ in plan(i)]
    tally = storm.Tally()

    def send(j):
        server, path, count, _ = jobs[j]
        conn = Conn(server.url)
        for _ in range(count):
            tally.begin()
            status, _, _ = conn.raw("GET", path)
            tally.end((path, status))
        conn.close()

    storm.run_parallel(len(jobs), send)
    expected = {}
    for server, path, count, status in jobs:
        expected[(path, status)] = expected.get((path, status), 0) + count
    tally.check(expected, len(jobs))
    sent = dict.fromkeys(metrics.OUTCOMES, 0)
    for i in range(len(labs)):
        for _, count, _, outcome in plan(i):
            sent[outcome] += count
    return sent


def reconciled(prom, sent):
    """None once Prometheus's sums, all at one instant, are what was sent and reconcile; what
    differs otherwise."""
    at = time.time()

    def q(promql):
        found = prometheus.query(prom, promql, at)
        return None if found is None else int(found)

    scraped, total, started = q(SCRAPES_BEFORE_LATEST), q("sum(faultline_requests_total)"), \
        q("sum(faultline_requests_started_total)")
    up, in_flight = q(TARGETS_UP), q("sum(faultline_in_flight)")
    got = {o: q(f'sum(faultline_requests_total{{outcome="{o}"}})') or 0 for o in metrics.OUTCOMES}
    if None in (scraped, total, started, up, in_flight):
        return "not every series scraped yet"
    want = dict(sent, ok=sent["ok"] + scraped)
    problems = [metrics.unreconciled(started, got, up)]
    if got != want:
        problems.append(f"per outcome {got} != sent {sent} + {scraped} scrapes")
    if up != NODES or in_flight != up:
        problems.append(f"{up} targets up, {in_flight} in flight")
    problems = [p for p in problems if p]
    if problems:
        return "; ".join(problems)
    print(f"fleet: prometheus agrees: sum(faultline_requests_total) = {total} = "
          f"{sum(sent.values())} sent + {scraped} scrapes")
    print(f"fleet: per outcome: ok {got['ok']} (- {scraped} scrapes), handled {got['handled']}, "
          f"rejected {got['rejected']}, panicked {got['panicked']}")
    print(f"fleet: sum(faultline_requests_started_total) = {started} = {sum(sent.values())} sent "
          f"+ {scraped} scrapes + {up} in flight; started - outcomes = {started - total} = "
          f"sum(faultline_in_flight) = {in_flight}, one scrape per target")
    return None


def scenario(run: script.Run, release: bool) -> None:
    binary = lab.build(release=release)
    labs = [run.add(lab.start(binary, run.work, f"lab{i}")) for i in range(NODES)]
    print(f"fleet: nodes on ports {' '.join(str(s.port) for s in labs)}")
    prom = run.add(prometheus.start(run.work, [f"127.0.0.1:{s.port}" for s in labs]))
    sent = send_load(labs)
    print(f"fleet: sent {sum(sent.values())} requests (ok {sent['ok']}, handled {sent['handled']},"
          f" rejected {sent['rejected']}, panicked {sent['panicked']})")
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while (problem := reconciled(prom.url, sent)) is not None:
        if time.monotonic() > deadline:
            raise Failure(f"MISMATCH after {SETTLE_TIMEOUT_S}s: {problem}")
        time.sleep(prometheus.SCRAPE_INTERVAL_S)
    exposition = metrics.scrape(labs[0].url).text
    linted = subprocess.run(["promtool", "check", "metrics"], input=exposition, text=True)
    if linted.returncode != 0:
        raise Failure("promtool check metrics failed on the exposition")
    print("fleet: promtool check metrics: clean")
    failures = int(prometheus.query(prom.url, "sum(faultline_reports_total)") or 0)
    print(f"fleet: failure reports (written + suppressed) across the fleet: {failures}")
    if failures != sent["handled"] + sent["rejected"] + sent["panicked"]:
        raise Failure(f"MISMATCH: reports {failures} != failures sent")


def main(argv):
    release, _ = script.parse(argv, "load-scripts/fleet/fleet.sh [--release]")
    script.main("fleet", lambda run: scenario(run, release),
                tools_needed=prometheus.TOOLS, install=prometheus.INSTALL)


if __name__ == "__main__":
    main(sys.argv[1:])
