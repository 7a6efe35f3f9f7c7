"""The errors page's error budget section, checked against what the load sent.

The expectation is computed here from the load alone, by the definition of the Prometheus
rules (docs/alerts.md): only the server's own failures spend the budget, a handler's 5xx
answers, `service_error`, `panicked`, `aborted` and `cancelled`; the client's mistakes, a
handler's 4xx answers and `rejected`, are left out of the failures and the requests alike. A
route with requests is listed, with 0 if none failed; a route with only client mistakes has
none and is left out. The page shows the fastest burning first, ties by route, at most
MAX_ROUTES_SHOWN, and judges each route as the rules' fast-burn alert does.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "deploy" / "prometheus"))
import generate  # noqa: E402 (the settings the committed rules were written from)

# The page judges by the rules' defaults (`deploy/prometheus/check.sh` holds
# `src/export/errors_page/budget.rs` to them): the objective, the fast burn's factor, the guard.
SLO = round(generate.SETTINGS["slo"] / 100, 12)  # 0.999, as the page writes it
FAST_BURN = next(a[2] for a in generate.BURN_ALERTS if a[0] == "FaultlineFastBurn")
MIN_REQUESTS = generate.SETTINGS["min_requests"]
# The model below leaves handled 4xx and `rejected` out and counts `cancelled`, as the ledger
# does; check.sh holds the rules' `count_handled_4xx`, `count_rejected` and `count_cancelled`
# to the same, and so does this.
MODELLED = {"count_handled_4xx": False, "count_rejected": False, "count_cancelled": True}
for _setting, _value in MODELLED.items():
    if generate.SETTINGS[_setting] != _value:
        sys.exit(f"budget.py: the model assumes {_setting} {_value}; the rules say otherwise")
# The page's cut (`MAX_ROUTES_SHOWN` there).
MAX_ROUTES_SHOWN = 10


def judged(outcome, status):
    """(whether a request counts, whether it fails): `status` is the answer's, None when the
    body failed mid-stream."""
    if outcome == "ok":
        return True, False
    client = outcome == "rejected" or (outcome == "handled" and 400 <= status <= 499)
    return (False, False) if client else (True, True)


def expected(sent):
    """The budget rows the page should show for `sent`, a list of (route, outcome, status,
    count): dicts of route, requests, failures, ratio and burn, in the page's order."""
    totals = {}
    for route, outcome, status, count in sent:
        requests, failures = totals.get(route, (0, 0))
        counts, fails = judged(outcome, status)
        requests += count if counts else 0
        failures += count if fails else 0
        totals[route] = (requests, failures)
    rows = []
    for route, (requests, failures) in totals.items():
        if requests == 0:
            continue
        ratio = failures / requests
        burn = ratio / (1.0 - SLO)
        # A run younger than five minutes: the short window's burn rate is the hour's.
        alert = "none" if burn <= FAST_BURN else "page" if requests >= MIN_REQUESTS else "guard"
        rows.append({"route": route, "requests": requests, "failures": failures,
                     "ratio": ratio, "burn": burn, "alert": alert})
    rows.sort(key=lambda row: (-row["burn"], row["route"]))
    return rows[:MAX_ROUTES_SHOWN], rows[MAX_ROUTES_SHOWN:]


def shown(row):
    """What the page's cells should read for `row`: route, requests, failures, ratio, burn
    rate, the last five minutes, which for a run younger than five minutes are the hour's
    figures, steady; and the fast-burn alert's judgement."""
    burn = f"{row['burn']:.1f}×"
    alert = {"page": "pages", "guard": "too few requests", "none": ""}[row["alert"]]
    return [row["route"], str(row["requests"]), str(row["failures"]),
            f"{row['ratio'] * 100:.3f}%", burn, f"{burn} steady", alert]


def check(rows, heading, sent):
    """Compares the page's budget rows (dicts of attrs and cells) with the expectation from
    `sent`; returns a message per difference, none when they agree."""
    want, cut = expected(sent)
    problems = []
    if f"against {SLO * 100:g}%" not in heading:
        problems.append(f"the heading {heading!r} names another objective than {SLO}")
    got = [r["attrs"].get("data-route") for r in rows]
    if got != [w["route"] for w in want]:
        problems.append(f"routes {got}, expected {[w['route'] for w in want]} "
                        f"(cut: {[c['route'] for c in cut]})")
    burns = [float(r["attrs"].get("data-burn", "nan")) for r in rows]
    if burns != sorted(burns, reverse=True):
        problems.append(f"burn rates not fastest first: {burns}")
    by_route = {w["route"]: w for w in want + cut}
    for row in rows:
        attrs = row["attrs"]
        want_row = by_route.get(attrs.get("data-route"))
        if want_row is None:
            problems.append(f"{attrs.get('data-route')}: listed, but the load has no "
                            "requests counted there")
            continue
        figures = {"requests": int(attrs["data-requests"]),
                   "failures": int(attrs["data-failures"]),
                   "ratio": float(attrs["data-ratio"]), "burn": float(attrs["data-burn"])}
        for name, value in figures.items():
            if value != want_row[name]:
                problems.append(f"{want_row['route']}: {name} {value}, expected "
                                f"{want_row[name]}")
        if attrs.get("data-alert") != want_row["alert"]:
            problems.append(f"{want_row['route']}: fast burn alert {attrs.get('data-alert')}, "
                            f"expected {want_row['alert']}")
        if float(attrs["data-recent"]) != want_row["burn"]:
            problems.append(f"{want_row['route']}: last 5 min {attrs['data-recent']}, "
                            f"expected the hour's {want_row['burn']}")
        if row["cells"] != shown(want_row):
            problems.append(f"{want_row['route']}: cells {row['cells']}, expected "
                            f"{shown(want_row)}")
    return problems
