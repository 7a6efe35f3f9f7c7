"""Hostile traffic against the webhook ingestion service on 127.0.0.1 (hostile.sh), with short
limits set by flags: a few thousand connections that send half a request head and stall, a
few hundred that stall in their body (stall.py), and, while they stall, signed pushes and
/health probes (runner.sh). Checks that

  - every push is stored, answered 201, each within the header timeout (had the stalls held
    the service, a push would wait that long for a free connection);
  - every stalled connection is closed within its limit (and a little slack), every stalled
    body answered 408 body-timeout;
  - the open-connection gauge returns to its baseline;
  - the ledger and the store reconcile with what was sent (reconcile.sh): the stalled bodies
    are counted as 408s, the stalled heads, never requests, not at all;
  - on SIGTERM the service exits cleanly, and its final ledger counts exactly the requests of
    the last scrape (which reconcile.sh and the gauge loop account for) and that scrape
    itself: every outcome, `started`, nothing in flight, consistent.

Prints the figures.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest, metrics, script  # noqa: E402
from harness.procs import Failure, wait_until  # noqa: E402
from scenarios import Scenarios  # noqa: E402

HERE = Path(__file__).resolve().parent
STALLED_HEADS = 3000
STALLED_BODIES = 300
# The service's limits for this run: short, so the run takes seconds, not minutes.
HEADER_TIMEOUT_S = 4
BODY_TIMEOUT_S = 4
REQUEST_TIMEOUT_S = 6
SHUTDOWN_TIMEOUT_S = 5
# Above every connection of the run, so no push waits for a stalled client's slot.
MAX_CONNECTIONS = 6000
# Descriptors each process needs: the stalled connections and some room.
DESCRIPTORS = 8192
# How much later than its limit a stalled connection may be seen closed: the service accepts
# thousands of connections at once and the client watches them all, on a loaded machine.
CLOSE_SLACK_S = 2
# The pushes and probes sent while the connections stall.
PUSH_COPIES = 4
PUSHES_PER_COPY = 50
PROBES_PER_COPY = 60
# Scrapes while waiting for the gauge to return to its baseline, this far apart.
MAX_GAUGE_SCRAPES = 100
GAUGE_PAUSE_S = 0.1
# How long stall.py watches its connections: three times a scenario's request timeout
# (lib.sh's CURL_MAX_TIME), far past every limit above.
STALL_WATCH_S = 30
GAUGE = "webhook_ingest_open_connections"


def raise_descriptors() -> None:
    """The soft limit of open files raised to DESCRIPTORS, for this process and the service
    and stall.py it starts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= DESCRIPTORS:
        return
    if hard != resource.RLIM_INFINITY and hard < DESCRIPTORS:
        raise Failure(f"needs {DESCRIPTORS} descriptors; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, hard))


def open_gauge(url: str) -> tuple[int, metrics.Metrics]:
    """The open-connection gauge, read by a scrape whose own connection it counts, and that
    scrape: the final ledger must count exactly what the last one saw, and the scrape."""
    scraped = metrics.scrape(url)
    if GAUGE not in scraped.samples:
        raise Failure("no open-connection gauge")
    return scraped.value(GAUGE), scraped


def stall(run: script.Run, scenarios: Scenarios, port: int, path: str) -> dict[str, int]:
    """stall.py's connections, the pushes and probes while they stall; stall.py's figures."""
    ready, out = run.work / "stall.ready", run.work / "stall.out"
    argv = [sys.executable, HERE / "stall.py", port, path, STALLED_HEADS, STALLED_BODIES, ready,
            STALL_WATCH_S]
    with open(out, "w") as sink:
        stalling = subprocess.Popen([str(a) for a in argv], stdout=sink)
    try:
        wait_until(ready.exists, STALL_WATCH_S, "the stall script opening every connection",
                   lambda: stalling.poll() is None)
        scenarios.runner(PUSH_COPIES, f"post-github-push.sh {PUSHES_PER_COPY}",
                         f"probe-health.sh {PROBES_PER_COPY}", quiet=True)
        if stalling.wait(STALL_WATCH_S * 2) != 0:
            raise Failure("the stall script failed")
    finally:
        if stalling.poll() is None:
            stalling.kill()
            stalling.wait()
    # Every figure is a count but `open_secs`, a duration.
    return {name: float(value) if "." in value else int(value) for name, value in
            (line.split() for line in out.read_text().splitlines())}


def latency(log: Path, scenario: str, before_us: int) -> tuple[int, int, int, int]:
    """A scenario's figures from the latency log (lib.sh's LATENCY_LOG): how many requests it
    sent, how many were answered before `before_us` (the last stalled connection closed), and
    the median and the slowest of those in milliseconds."""
    lines = [line.split() for line in log.read_text().splitlines()]
    mine = [(int(end), int(float(took) * 1000)) for end, name, _, took in lines
            if name == scenario]
    during = sorted(ms for end, ms in mine if end <= before_us)
    if not during:
        return len(mine), 0, 0, 0
    return len(mine), len(during), during[(len(during) - 1) // 2], during[-1]


def check_stall(run: script.Run, figures: dict[str, int], pushes: tuple) -> None:
    stalled = STALLED_HEADS + STALLED_BODIES
    opened, closed = figures["opened"], figures["closed"]
    run.check(opened == stalled, f"opened {opened} of {stalled} stalled connections")
    run.check(closed == opened, f"the service kept {opened - closed} stalled connections open")
    for kind, limit in (("head", HEADER_TIMEOUT_S), ("body", BODY_TIMEOUT_S)):
        took = figures[f"{kind}_close_max_ms"]
        run.check(took <= (limit + CLOSE_SLACK_S) * 1000,
                  f"a stalled {kind} was closed after {took} ms")
    answered = figures.get("body_status_408", 0)
    run.check(answered == STALLED_BODIES,
              f"{answered} of {STALLED_BODIES} stalled bodies answered 408")
    _, during, _, slowest = pushes
    run.check(slowest <= HEADER_TIMEOUT_S * 1000, f"a push waited {slowest} ms")
    run.check(during > 0, "no push was answered while the connections stalled")


def check_final_ledger(run: script.Run, final: str, last: metrics.Metrics) -> None:
    """Nothing reached the service after the last gauge scrape, which was in flight as it
    was rendered: the final ledger is that scrape's counts, and the scrape itself, one more
    ok."""
    finished = 0
    for outcome, want in last.outcomes().items():
        want += outcome == "ok"
        found = re.search(rf"\s{outcome}=(\d+)", final)
        if not run.check(found is not None, f"no {outcome} in the final ledger: {final}"):
            continue
        got = int(found.group(1))
        run.check(got == want, f"final ledger: {outcome}={got}, the last scrape and itself: {want}")
        finished += got
    started = re.search(r"\sstarted=(\d+)", final)
    run.check(started is not None and int(started.group(1)) == finished,
              f"final ledger: started is not the {finished} finished: {final}")
    run.check(final.endswith("in_flight=0 consistent=true"),
              f"final ledger not settled or not consistent: {final}")


def body(run: script.Run) -> None:
    raise_descriptors()
    binary = ingest.build(release=ingest.release_profile())
    print("== start", flush=True)
    limits = ["--header-timeout", f"{HEADER_TIMEOUT_S}s", "--body-timeout", f"{BODY_TIMEOUT_S}s",
              "--request-timeout", f"{REQUEST_TIMEOUT_S}s",
              "--shutdown-timeout", f"{SHUTDOWN_TIMEOUT_S}s", "--max-connections", MAX_CONNECTIONS]
    server = run.add(ingest.start(binary, run.work, ["--db", run.work / "ingest.db", *limits],
                                  name="server"))
    print(f"server {server.pid} on 127.0.0.1:{server.port}")
    latency_log = run.work / "latency"
    scenarios = Scenarios(server.url, run.work, LATENCY_LOG=str(latency_log))
    env = scenarios.setup(quiet=True)
    baseline, _ = open_gauge(server.url)
    scenarios.reconcile(begin=True)

    print(f"== stall: {STALLED_HEADS} heads and {STALLED_BODIES} bodies, and pushes meanwhile",
          flush=True)
    path = f"/api/{env['INSTANCE_ID']}/inboxes/{env['GITHUB_INBOX']}/commits"
    figures = stall(run, scenarios, server.port, path)
    # The stalled bodies' answers, as a scenario's tally, for reconcile.sh to check against
    # the ledger's 408 body-timeout series.
    answered = figures.get("body_status_408", 0)
    scenarios.tally("stall-body", {(408, "body-timeout"): answered}, STALLED_BODIES - answered)
    print("== reconcile", flush=True)
    scenarios.reconcile()

    pushes = latency(latency_log, "post-github-push", figures["last_close_us"])
    probes = latency(latency_log, "probe-health", figures["last_close_us"])
    check_stall(run, figures, pushes)
    for _ in range(MAX_GAUGE_SCRAPES):
        gauge, last = open_gauge(server.url)
        if gauge == baseline:
            break
        time.sleep(GAUGE_PAUSE_S)
    run.check(gauge == baseline, f"open connections: {gauge}, baseline {baseline}")

    print("== SIGTERM", flush=True)
    status = server.stop()
    run.check(status == 0, f"the service exited with {status} after SIGTERM")
    final = next((line for line in server.log_path.read_text(errors="replace").splitlines()
                  if "final ledger" in line), "")
    check_final_ledger(run, final, last)
    print_figures(figures, pushes, probes, (baseline, gauge), final)


def print_figures(figures: dict, pushes: tuple, probes: tuple, gauges: tuple, final: str) -> None:
    rows = [
        ("stalled connections opened (heads + bodies)",
         f"{figures['opened']} ({STALLED_HEADS} + {STALLED_BODIES}) in "
         f"{figures['open_secs']:.3f} s"),
        ("stalled connections closed by the service", figures["closed"]),
        (f"time to close a stalled head: median, max (limit {HEADER_TIMEOUT_S} s)",
         f"{figures['head_close_median_ms']} ms, {figures['head_close_max_ms']} ms"),
        (f"time to close a stalled body: median, max (limit {BODY_TIMEOUT_S} s)",
         f"{figures['body_close_median_ms']} ms, {figures['body_close_max_ms']} ms"),
        ("stalled bodies answered 408 body-timeout", figures.get("body_status_408", 0)),
        ("pushes stored (201) during the stall, in all", f"{pushes[1]}, {pushes[0]}"),
        ("push latency during the stall: median, max", f"{pushes[2]} ms, {pushes[3]} ms"),
        ("/health latency during the stall: median, max",
         f"{probes[2]} ms, {probes[3]} ms ({probes[1]} of {probes[0]} probes)"),
        ("open-connection gauge: baseline, after", f"{gauges[0]}, {gauges[1]}"),
        ("final ledger", final.split("final ledger", 1)[-1].strip()),
    ]
    print("| figure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    script.main("hostile.sh", body, tools_needed=("curl",))
