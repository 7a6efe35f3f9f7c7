"""The tallies of the SDK senders (sdk_senders.py, octokit.mjs) against the intake's ledger:
each problem code's count, the ok total, and every refusal a client error.

    python3 sdk_ledger.py URL TALLY.json...
"""

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import metrics  # noqa: E402

ROUTE = "/hooks/{inbox}"


def main(url, tallies):
    sent = Counter()
    for path in tallies:
        sent.update(json.load(open(path)))
    m, _ = metrics.quiescent(url)
    counted = Counter()
    for labels, value in m.by_name.get("faultline_errors_total", []):
        if labels.get("route") == ROUTE:
            counted[labels["code"]] += int(value)
    counted["ok"] = m.total("faultline_route_requests_total", route=ROUTE, outcome="ok")
    handled = {cls: m.total("faultline_route_requests_total", route=ROUTE, outcome="handled",
                            **{"class": cls}) for cls in ("4xx", "5xx")}
    print(f"sent {sum(sent.values())}: {dict(sorted(sent.items()))}")
    assert counted == sent, f"counted {dict(counted)}"
    # Every refusal is the sender's to fix: a client error, which spends no error budget.
    refused = sum(n for code, n in sent.items() if code != "ok")
    assert handled["4xx"] == refused and handled["5xx"] == 0, handled


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
