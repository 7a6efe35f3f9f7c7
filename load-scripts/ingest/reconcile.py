"""The reconciliation of reconcile.sh: every tally the scenario copies wrote since `begin`
against the deltas of the service's /metrics (harness.metrics) and of its store's stats.

    reconcile.py begin|check URL RESULTS     (INSTANCE_ID and API_KEY in the environment)

Nothing but the load scripts may talk to the service between the two, or the counts differ
(which is the point). The checks:
  - every response had a status its scenario expects; every copy sent all it was asked to
  - started moved by the requests tallied plus reconcile's own, and equals the outcomes plus
    what is in flight (the one reconciliation, harness.metrics.unreconciled)
  - ok == 2xx tallied; handled + rejected == failures tallied; no other outcome moved
  - each (code, status) failure series moved by exactly what the scripts saw; the ignored
    events counted moved by the answers `202 ignored`
  - stored commits == commits in the pushes answered 201; deliveries == pushes answered 201;
    redeliveries == answers `duplicate`; digests == digests answered 201
"""

import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import metrics  # noqa: E402
from harness.client import Conn  # noqa: E402
from harness.procs import Failure, wait_until  # noqa: E402

# How long the last requests may take to leave the ledger's in-flight count; the scripts have
# all exited, so this is only the server finishing its bookkeeping.
SETTLE_TIMEOUT_S = 5.0
FAILURE_SERIES = "faultline_errors_total"


def fetch(url, path):
    status, body, _ = Conn(url).raw("GET", path, headers={
        "authorization": f"Bearer {os.environ['API_KEY']}"})
    if status != 200:
        raise Failure(f"GET {path} answered {status}")
    return body.decode()


def stats(url):
    return json.loads(fetch(url, f"/api/{os.environ['INSTANCE_ID']}/stats"))


def begin(url, results):
    base = results / "begin"
    for old in (results / "tallies", base):
        if old.exists():
            for f in old.iterdir():
                f.unlink()
        old.mkdir(parents=True, exist_ok=True)
    # The scrape first, then the stats request, whose outcome the next scrape will count.
    (base / "metrics").write_text(fetch(url, "/metrics"))
    (base / "stats").write_text(fetch(url, f"/api/{os.environ['INSTANCE_ID']}/stats"))
    print("reconcile: baseline recorded")


def tallies(results):
    """The tallies of every copy since `begin`."""
    t = {"by_label": Counter(), "by_script": Counter(), "requests": 0, "successes": 0,
         "failures": 0, "commits": 0, "unexpected": 0, "unsent": 0}
    for file in sorted((results / "tallies").glob("*")):
        for line in file.read_text().splitlines():
            kind, script, *rest = line.split()
            if kind == "count":
                status, label, n = rest[0], rest[1], int(rest[2])
                t["by_label"][(status, label)] += n
                t["by_script"][(script, status)] += n
                t["requests"] += n
                t["successes" if 200 <= int(status) < 300 else "failures"] += n
            elif kind in ("commits", "unexpected", "unsent"):
                t[kind] += int(rest[0])
    return t


def settle(url):
    """Scrapes until only the scrape itself is in flight: the last scrape, and how many."""
    scrapes = [0]

    def once():
        scrapes[0] += 1
        m = metrics.Metrics(fetch(url, "/metrics"))
        return m if m.in_flight <= 1 else None

    try:
        return wait_until(once, SETTLE_TIMEOUT_S, "the ledger settling", pause_s=0.1), scrapes[0]
    except Failure:
        return metrics.Metrics(fetch(url, "/metrics")), scrapes[0] + 1


def checks(t, before, after, scrapes, stats_before, stats_after):
    """(name, from the scripts, observed) of every check."""
    def delta(name, **labels):
        return after.total(name, **labels) - before.total(name, **labels)

    def outcome(o):
        return delta("faultline_requests_total", outcome=o)

    def stat(name):
        return stats_after[name] - stats_before[name]

    rows = [("responses a scenario does not expect", 0, t["unexpected"]),
            ("requests a copy did not send", 0, t["unsent"]),
            # Our own requests since the baseline scrape: the baseline's stats request and
            # every settling scrape; the baseline scrape itself was already counted as started.
            ("ledger: requests started", t["requests"] + 1 + scrapes, after.started - before.started),
            ("ledger: started = the outcomes + in flight", None,
             metrics.unreconciled(after.started, after.outcomes(), after.in_flight)),
            # ok: the baseline scrape and stats request, and all settling scrapes but the
            # last, which is still in flight.
            ("ledger: ok (2xx)", t["successes"] + 1 + scrapes, outcome("ok")),
            ("ledger: handled + rejected", t["failures"], outcome("handled") + outcome("rejected"))]
    rows += [(f"ledger: {o}", 0, outcome(o))
             for o in ("service_error", "panicked", "aborted", "cancelled")]
    rows += [("ledger: in flight at the end", 1, after.in_flight),
             ("ledger: failure series, all", t["failures"], delta(FAILURE_SERIES))]
    for status, label in sorted(t["by_label"]):
        if not 200 <= int(status) < 300:
            rows.append((f"ledger: {label} {status}", t["by_label"][(status, label)],
                         delta(FAILURE_SERIES, code=label, status=status)))
    by = t["by_script"]
    stored = by[("post-github-push", "201")] + by[("post-gitea-forgejo-push", "201")] + \
        by[("post-duplicate-delivery", "201")]
    rows += [("store: deliveries", stored, stat("deliveries")),
             ("store: commits", t["commits"], stat("commits")),
             ("store: redeliveries (stored once)", by[("post-duplicate-delivery", "200")],
              stat("redeliveries")),
             ("store: digests", by[("post-new-digest", "201")], stat("digests")),
             ("ignored events counted", t["by_label"][("202", "ignored")],
              delta("webhook_ingest_ignored_events_total"))]
    return rows


def check(url, results):
    base = results / "begin"
    if not (base / "metrics").exists():
        raise Failure("no baseline: run 'reconcile.sh begin' before the load")
    after, scrapes = settle(url)
    stats_after = stats(url)
    before = metrics.Metrics((base / "metrics").read_text())
    stats_before = json.loads((base / "stats").read_text())
    t = tallies(results)
    mismatches = 0
    print("| check | from the scripts | observed | |\n|---|---|---|---|")
    for name, expected, observed in checks(t, before, after, scrapes, stats_before, stats_after):
        mark = "ok" if expected == observed else "MISMATCH"
        mismatches += mark != "ok"
        print(f"| {name} | {'-' if expected is None else expected} | "
              f"{'holds' if observed is None else observed} | {mark} |")
    (results / "last-reconcile").write_text("".join(f"{k}={v}\n" for k, v in {
        "requests": t["requests"], "successes": t["successes"], "failures": t["failures"],
        "ledger_failures": after.total(FAILURE_SERIES) - before.total(FAILURE_SERIES),
        "commits": stats_after["commits"] - stats_before["commits"],
        "deliveries": stats_after["deliveries"] - stats_before["deliveries"],
        "redeliveries": stats_after["redeliveries"] - stats_before["redeliveries"],
        "mismatches": mismatches}.items()))
    if mismatches:
        raise Failure(f"{mismatches} mismatches")
    print(f"reconcile: {t['requests']} requests, every total matches")


def main(argv):
    if len(argv) != 3 or argv[0] not in ("begin", "check"):
        raise SystemExit(__doc__)
    mode, url, results = argv[0], argv[1], Path(argv[2])
    try:
        (begin if mode == "begin" else check)(url, results)
    except Failure as failure:
        print(f"reconcile: {failure}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
