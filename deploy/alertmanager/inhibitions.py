"""The inhibitions of alertmanager.yml, proven live: a real Alertmanager on 127.0.0.1 is sent a
set of alerts and asked which it mutes. A fast burn mutes the slow and steady burns of its own
job and route, and nothing of another route or job.

usage: PYTHONPATH=load-scripts python3 deploy/alertmanager/inhibitions.py CONFIG
(deploy/alertmanager/check.sh runs it after amtool's checks)."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

from harness import prometheus, script

NAME = "deploy/alertmanager/inhibitions.py"
# How long Alertmanager's inhibitor may take to learn of the alerts posted.
SETTLE_TIMEOUT_S = 10.0

# (alertname, severity, job, route) -> whether Alertmanager must mute it.
CASES = {
    ("FaultlineFastBurn", "page", "ingest", "/hook"): False,
    ("FaultlineSlowBurn", "page", "ingest", "/hook"): True,
    ("FaultlineSteadyBurn", "ticket", "ingest", "/hook"): True,
    # Another route of the same job: its slow burn is its own page; it mutes its steady burn.
    ("FaultlineSlowBurn", "page", "ingest", "/other"): False,
    ("FaultlineSteadyBurn", "ticket", "ingest", "/other"): True,
    # The same route in another job: not the fast burn's business.
    ("FaultlineSteadyBurn", "ticket", "api", "/hook"): False,
    # Other alerts are never muted by a burn.
    ("FaultlineDeliveriesRefused", "ticket", "ingest", "/hook"): False,
}


def muted_now(url: str) -> dict:
    with urllib.request.urlopen(url + "/api/v2/alerts?inhibited=true", timeout=10) as answer:
        got = json.load(answer)
    return {
        (a["labels"]["alertname"], a["labels"]["severity"], a["labels"]["job"],
         a["labels"]["route"]): bool(a["status"]["inhibitedBy"])
        for a in got
    }


def body(run: script.Run, config: Path) -> None:
    url = run.add(prometheus.alertmanager(run.work, config)).url
    alerts = [{"labels": {"alertname": a, "severity": s, "job": j, "route": r}}
              for (a, s, j, r) in CASES]
    request = urllib.request.Request(url + "/api/v2/alerts", data=json.dumps(alerts).encode(),
                                     method="POST", headers={"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    # The inhibitor learns of a source alert a moment after it is posted: wait, within a
    # bound, for every alert that must be muted to be, then judge every case on that answer.
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        seen = muted_now(url)
        if all(seen.get(key) for key, muted in CASES.items() if muted) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for key, want in CASES.items():
        run.check(seen.get(key) == want,
                  f"{key}: muted should be {want}, Alertmanager says {seen.get(key)}")
    run.settle()
    print(f"{NAME}: alertmanager mutes {sum(CASES.values())} of {len(CASES)} alerts, "
          "as the inhibitions mean")


if __name__ == "__main__":
    config = Path(sys.argv[1]).resolve()
    script.main(NAME, lambda run: body(run, config), tools_needed=("prometheus-alertmanager",),
                install="apt-get install prometheus-alertmanager")
