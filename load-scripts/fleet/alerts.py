#!/usr/bin/env python3
"""The alert rules of deploy/prometheus/ in a real Prometheus (alerts.sh); standard library and
the harness only, 127.0.0.1 only.

    alerts.py [--release]

Starts three failure-lab nodes and a Prometheus that scrapes them under job `faultline`
and evaluates deploy/prometheus/rules/faultline.yml itself (not a copy), both every second.
Then sends the nodes a planned load,
waits until Prometheus has scraped all of it and evaluated the rules after that, and checks
through /api/v1/alerts that exactly the planned alerts are active:

- the three burn alerts for the route answering 5xx alone, FaultlineFastBurn with the route
  and the failure code in its annotations;
- FaultlinePanics for the panics, naming their route and code;
- no burn alert for a route whose handler answers only 4xx, nor for one with only rejected
  requests, though either is past the traffic guard were its requests counted; nor for a
  route failing completely under the guard, nor for the healthy route.

What counts is modelled here on its own (`judged`), from the answers sent and the rules'
settings, not from the rules' expressions: the ratios Prometheus computed from the load are
checked against the model first, so that a quiet route is quiet for the reason planned and
not because its requests never reached the rules, and the alerts expected are the model's.
"""

import dataclasses
import datetime
import http.client
import pathlib
import re
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "prometheus"))
sys.path.insert(0, str(ROOT / "load-scripts"))
import generate  # noqa: E402 (the settings the committed rules were written from)
from harness import lab, prometheus, script  # noqa: E402
from harness.procs import Failure  # noqa: E402

NODES = 3
RULES = ROOT / "deploy" / "prometheus" / "rules" / "faultline.yml"
JOB = prometheus.JOB
GUARD = generate.SETTINGS["min_requests"]
FAST_BURN, _, FAST_FACTOR, FAST_LONG, FAST_SHORT, _ = generate.BURN_ALERTS[0]
THRESHOLD = float(generate.number(FAST_FACTOR * (100 - generate.SETTINGS["slo"]) / 100))
BURN_ALERTS = [spec[0] for spec in generate.BURN_ALERTS]
REQUEST_TIMEOUT_S = 10
# Scrapes and evaluations run every second; a loaded 2-core machine can fall well behind.
SETTLE_TIMEOUT_S = 60
# Once an evaluation has read the whole load its alerts are active; a few more evaluations
# are for a machine so loaded that the alerts API lags the rules API.
ALERTS_TIMEOUT_S = 15
POLL_S = 0.25
# How far a ratio of 0 or 1 may be off in its last bits (see `near`).
RATIO_TOLERANCE = 1e-9


@dataclasses.dataclass(frozen=True)
class Load:
    """What one route gets from each node, and how the ledger counts it."""

    route: str  # the route label
    path: str  # what is requested; {i} is the node's index
    per_node: int
    status: int
    outcome: str
    code: str  # the failure code in faultline_errors_total, if any

    def labels(self):
        """The labels of its series in faultline_route_requests_total: a handled one's class."""
        labels = {"outcome": self.outcome}
        if self.outcome == "handled":
            labels["class"] = f"{self.status // 100}xx"
        return labels


# With three nodes, against the traffic guard of 100 requests in the long window:
# 180 5xx answers of a handler and nothing else, past the guard: the burn alerts fire.
BURST = Load("/internal", "/internal", 60, 500, "handled", "store-failed")
# As many 4xx answers of a handler, past the guard were they counted: the client's mistakes,
# neither failures nor requests.
CLIENT_BURST = Load("/handled", "/handled", 60, 422, "handled", "demo-invalid")
# 30 failures and nothing else, under the guard: quiet however high its ratio. Well under it:
# rate() extrapolates to the window's edges, up to about twice what the samples counted when
# they span a single scrape (these 30, 33 with the priming, read as 34 to 45).
UNDER_GUARD = Load("/panic", "/panic", 10, 500, "panicked", "panic")
# 300 404s, past the guard were they counted; `rejected` is neither a failure nor a request.
REJECTED = Load("~unmatched", "/missing/{i}", 100, 404, "rejected", "not-found")
# 300 successes, past the guard, no failure.
HEALTHY = Load("/ok", "/ok", 100, 200, "ok", "")
LOADS = [BURST, CLIENT_BURST, UNDER_GUARD, REJECTED, HEALTHY]


def judged(load):
    """(whether the load's requests count in the total, whether they fail): the definition of
    docs/alerts.md, from the answer alone. The server's own failures spend the budget: a 5xx,
    a panic, a client kept waiting until it left; a client's mistake, whether a handler or
    axum judged it so, counts for nothing unless a setting puts it back."""
    s = generate.SETTINGS
    if load.outcome == "ok":
        return True, False
    if load.outcome == "rejected":
        return s["count_rejected"], s["count_rejected"]
    if load.outcome == "handled" and 400 <= load.status <= 499:
        return s["count_handled_4xx"], s["count_handled_4xx"]
    if load.outcome == "cancelled":
        return s["count_cancelled"], s["count_cancelled"]
    return True, True


def pages(load, n):
    """Whether the model says the load's route burns faster than the fast burn's threshold
    and past the traffic guard, on n nodes; each route gets one kind of answer only, so
    its ratio is 1 or 0."""
    counted, failed = judged(load)
    ratio = 1.0 if failed else 0.0
    return counted and ratio > THRESHOLD and n * load.per_node >= GUARD


def expected_alerts(n):
    """(alert name, its route or outcome label): what the load must make active, and nothing
    else."""
    burning = {(name, load.route) for load in LOADS if pages(load, n) for name in BURN_ALERTS}
    return burning | {("FaultlinePanics", load.outcome) for load in LOADS
                      if load.outcome in ("panicked", "aborted")}


def die(message):
    raise Failure(message)


def api(prom, path, **params):
    try:
        return prometheus.api(prom, path.removeprefix("/api/v1/"), **params)
    except Failure as failure:
        die(str(failure))


def value(prom, promql):
    """The single value of an instant query, or None when the result is empty."""
    result = api(prom, "/api/v1/query", query=promql)["result"]
    if len(result) > 1:
        die(f"{promql}: expected one series, got {len(result)}")
    return float(result[0]["value"][1]) if result else None


def equals(prom, promql, want):
    """(whether the query's value is `want`, the value): a check for wait_for."""
    got = value(prom, promql)
    return got == want, got


def wait_for(what, check, timeout=SETTLE_TIMEOUT_S):
    """Polls check() until it returns (True, seen); dies with the last seen at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        done, seen = check()
        if done:
            return seen
        if time.monotonic() > deadline:
            die(f"{what}: not within {timeout} s; last seen: {seen}")
        time.sleep(POLL_S)


def send(host, port, path, count, status, wrong):
    """COUNT GETs over one keep-alive connection; appends to `wrong` each answer not STATUS."""
    conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
    try:
        for _ in range(count):
            conn.request("GET", path)
            answer = conn.getresponse()
            answer.read()
            if answer.status != status:
                wrong.append(f"{path} on {port}: {answer.status}, expected {status}")
    except OSError as err:
        wrong.append(f"{path} on {port}: {err}")
    finally:
        conn.close()


def send_all(nodes, per_load):
    """Each node gets per_load(load) requests of each load, all at once, one thread each."""
    wrong, threads = [], []
    for i, (host, port) in enumerate(nodes):
        for load in LOADS:
            args = (host, port, load.path.format(i=i), per_load(load), load.status, wrong)
            threads.append(threading.Thread(target=send, args=args))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if wrong:
        die(f"{len(wrong)} unexpected answers, first: {wrong[0]}")


def selector(load, **extra):
    labels = {"job": JOB, "route": load.route, **extra}
    labels = {k: v for k, v in labels.items() if v is not None}
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def unix(stamp):
    """Prometheus' RFC 3339 time (nanoseconds, `Z`) as a Unix time."""
    m = re.fullmatch(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?Z", stamp)
    if not m:
        die(f"unreadable time {stamp!r}")
    whole = datetime.datetime.fromisoformat(m[1] + "+00:00").timestamp()
    return whole + float(m[2] or 0)


def rule_group(prom, rules_file):
    """The one rule group Prometheus loaded from rules_file, or None before it has."""
    groups = [g for g in api(prom, "/api/v1/rules")["groups"] if g["file"] == rules_file]
    if len(groups) > 1:
        die(f"expected one rule group in {rules_file}, Prometheus has {len(groups)}")
    return groups[0] if groups else None


def evaluated_once(prom, rules_file):
    """(whether Prometheus has evaluated the group from rules_file, the group): for wait_for."""
    group = rule_group(prom, rules_file)
    return group is not None and unix(group["lastEvaluation"]) > 0, group


def evaluated_after(prom, rules_file, moment):
    """Waits for an evaluation of the group that read the samples up to `moment`: an
    evaluation reads at its slot's time, at most one interval before it starts."""
    def check():
        group = rule_group(prom, rules_file) or die(f"no rule group from {rules_file}")
        start = unix(group["lastEvaluation"])
        return start - group["interval"] > moment, group["lastEvaluation"]
    return wait_for(f"an evaluation of the rules after {moment:.3f}", check)


def prime(prom, nodes):
    """One request of each load to each node, then a wait until Prometheus holds a sample
    of every route's series. The ledger exports a route's series at its first request, already
    counting it, and rate() sees no increase in a series' first sample: a burst sent to a route
    Prometheus has not scraped yet can be invisible to every ratio, or partly so, depending on
    where the scrape falls. Priming is exact where spreading the burst over a few scrapes would
    only make it likely."""
    send_all(nodes, lambda load: 1)
    routes = "|".join(load.route for load in LOADS)
    want = len(nodes) * len(LOADS)
    query = f'count(faultline_route_requests_total{{job="{JOB}",outcome="ok",route=~"{routes}"}})'
    wait_for("every primed route scraped", lambda: equals(prom, query, want))
    print(f"alerts: primed {len(LOADS)} routes on {len(nodes)} nodes; Prometheus holds their series")


def all_scraped(prom, nodes):
    """Waits until Prometheus's latest samples count every request sent; returns a moment no
    earlier than those samples."""
    def check():
        seen = {}
        for load in LOADS:
            want = len(nodes) * (load.per_node + 1)
            got = value(prom, f"sum(faultline_route_requests_total{selector(load, **load.labels())})")
            seen[load.route] = f"{got} of {want}"
            if got != want:
                return False, seen
        return True, seen
    seen = wait_for("the whole load scraped", check)
    print(f"alerts: Prometheus counts every request, primed ones included: {seen}")
    return time.time()


def ratios(prom, load):
    """What the recording rules computed for the route, and how many of its requests
    Prometheus saw over the short window, counted or not."""
    rec = "job_route:faultline_"
    sel = selector(load)
    return {
        "requests_1h": value(prom, f"{rec}slo_requests:rate{FAST_LONG}{sel} * 3600"),
        "failures_1h": value(prom, f"{rec}slo_failures:rate{FAST_LONG}{sel} * 3600"),
        "ratio_1h": value(prom, f"{rec}error_ratio:rate{FAST_LONG}{sel}"),
        "ratio_5m": value(prom, f"{rec}error_ratio:rate{FAST_SHORT}{sel}"),
        "seen_5m": value(prom, "sum(increase(faultline_route_requests_total"
                               f"{selector(load, **load.labels())}[{FAST_SHORT}]))"),
    }


def near(got, want):
    """Whether a ratio is `want`: a sum of rates may differ in its last bit between the two
    sides of a ratio, as the order of its terms is not fixed."""
    return got is not None and abs(got - want) < RATIO_TOLERANCE


def planned(load, seen, n):
    """(what the model says of the route's figures, whether Prometheus's agree) pairs."""
    counted, failed = judged(load)
    route = load.route
    if not counted:
        return [(f"{route}: none of its requests counted", seen["requests_1h"] == 0),
                (f"{route}: at least {GUARD} requests seen, past the guard were they counted",
                 (seen["seen_5m"] or 0) >= GUARD)]
    want = 1.0 if failed else 0.0
    plan = [(f"{route}: error ratio {want:g} over {FAST_LONG} and {FAST_SHORT}",
             near(seen["ratio_1h"], want) and near(seen["ratio_5m"], want))]
    if n * load.per_node >= GUARD:
        plan.append((f"{route}: at least {GUARD} requests", (seen["requests_1h"] or 0) >= GUARD))
    else:
        plan.append((f"{route}: requests, fewer than {GUARD}", 0 < (seen["requests_1h"] or 0) < GUARD))
    return plan


def check_ratios(prom, n):
    """Each route's figures as the model says: any other reading would make its check below
    moot, or means the rules count otherwise than docs/alerts.md says."""
    seen = {load.route: ratios(prom, load) for load in LOADS}
    for route, r in seen.items():
        shown = (f"{k} {v if v is None else round(v, 4)}" for k, v in r.items())
        print(f"alerts: {route:<11} " + "  ".join(shown))
    broken = [what for load in LOADS for what, holds in planned(load, seen[load.route], n)
              if not holds]
    if broken:
        die("the ratios Prometheus computed are not the model's (the load, a recording rule or"
            " the definition of a failure is wrong): " + "; ".join(broken))


def key(alert):
    """(alert name, the label that says where): route for the burn alerts, outcome for
    FaultlinePanics, instance for the others."""
    labels = alert["labels"]
    return labels["alertname"], labels.get("route") or labels.get("outcome") or labels.get("instance", "")


def show(alerts):
    for a in sorted(alerts, key=key):
        name, where = key(a)
        print(f"alerts: active {name} {where}: {a['state']}, value {a['value']}, since {a['activeAt']}")


def wait_for_alerts(prom, n):
    """Polls until every expected alert is active. Any other active alert fails at once: the
    rules have read the whole load by now, and it does not change."""
    expected = expected_alerts(n)

    def check():
        alerts = api(prom, "/api/v1/alerts")["alerts"]
        keys = {key(a) for a in alerts}
        if len(keys) < len(alerts):
            show(alerts)
            die("more than one alert for one route or outcome: a rule lost its aggregation")
        if keys - expected:
            show(alerts)
            die(f"active, but the load must not raise them: {sorted(keys - expected)}")
        return expected <= keys, f"missing {sorted(expected - keys)}, active {sorted(keys)}"
    wait_for("the expected alerts active", check, ALERTS_TIMEOUT_S)
    alerts = api(prom, "/api/v1/alerts")["alerts"]
    show(alerts)
    return {key(a): a for a in alerts}


def counted(text, pattern, at_least, what):
    """The count `pattern` captures in an annotation, checked against what was sent:
    increase() extrapolates past the samples, never below them, up to about twice (see
    UNDER_GUARD); three times leaves room and still catches a count of something else."""
    m = re.search(pattern, text)
    if not m:
        die(f"{what} does not match {pattern!r}: {text!r}")
    if not at_least <= int(m[1]) <= 3 * at_least:
        die(f"{what} counts {m[1]}, expected about {at_least}: {text!r}")


def check_alerts(alerts, n):
    for (name, where), a in alerts.items():
        if a["labels"].get("job") != JOB or a["state"] not in ("pending", "firing"):
            die(f"{name} {where}: job {a['labels'].get('job')}, state {a['state']}")
    fast = alerts[(FAST_BURN, BURST.route)]
    notes = fast["annotations"]
    print(f"alerts: {FAST_BURN} summary: {notes['summary']}")
    print(f"alerts: {FAST_BURN} description: {notes['description']}")
    if fast["labels"].get("severity") != "page" or f"{BURST.route} on {JOB}" not in notes["summary"]:
        die(f"{FAST_BURN}: severity or summary wrong: {fast['labels']} {notes['summary']!r}")
    if not notes["description"].startswith(f"{BURST.route} on {JOB}: 100% of requests failed"):
        die(f"{FAST_BURN}: description does not name the route, job and ratio: {notes['description']!r}")
    counted(notes["description"], rf"Codes over {FAST_LONG}: {BURST.code} \({BURST.status}\): (\d+); $",
            n * BURST.per_node, f"{FAST_BURN}'s description")
    panics = alerts[("FaultlinePanics", UNDER_GUARD.outcome)]
    print(f"alerts: FaultlinePanics description: {panics['annotations']['description']}")
    if float(panics["value"]) < n * (UNDER_GUARD.per_node + 1):
        die(f"FaultlinePanics counts {panics['value']} panics, {n * (UNDER_GUARD.per_node + 1)} were sent")
    counted(panics["annotations"]["description"],
            rf"By route and code: {re.escape(UNDER_GUARD.route)} {UNDER_GUARD.code}: (\d+); $",
            n * UNDER_GUARD.per_node, "FaultlinePanics' description")


def check_health(prom, rules_file):
    """A rule whose evaluation fails (a many-to-many match, say) is silent, not loud."""
    rules = rule_group(prom, rules_file)["rules"]
    sick = [f"{r['name']}: {r['health']} {r.get('lastError', '')}" for r in rules if r["health"] != "ok"]
    if sick:
        die(f"{len(sick)} rules fail to evaluate, first: {sick[0]}")
    print(f"alerts: all {len(rules)} rules evaluate without error")


def scenario(run: script.Run, release: bool) -> None:
    subprocess.run(["promtool", "check", "rules", str(RULES)], check=True,
                   stdout=subprocess.DEVNULL)
    binary = lab.build(release=release)
    labs = [run.add(lab.start(binary, run.work, f"lab{i}")) for i in range(NODES)]
    prom = run.add(prometheus.start(run.work, [f"127.0.0.1:{s.port}" for s in labs], [RULES]))
    print(f"alerts: nodes on ports {' '.join(str(s.port) for s in labs)}; "
          f"Prometheus on {prom.url} evaluates {RULES}")
    check(prom.url, str(RULES), [("127.0.0.1", s.port) for s in labs])


def main():
    release, _ = script.parse(sys.argv[1:], "load-scripts/fleet/alerts.sh [--release]")
    script.main("alerts", lambda run: scenario(run, release),
                tools_needed=prometheus.TOOLS, install=prometheus.INSTALL)


def check(prom, rules_file, nodes):
    n = len(nodes)
    if 2 * n * UNDER_GUARD.per_node >= GUARD or n * BURST.per_node < GUARD \
            or n * CLIENT_BURST.per_node < GUARD:
        die(f"the planned load does not straddle the traffic guard of {GUARD} with {n} nodes,"
            " with room for rate()'s extrapolation")
    if not pages(BURST, n) or pages(CLIENT_BURST, n):
        die(f"with these settings {BURST.route} would not page, or {CLIENT_BURST.route} would:"
            " the load proves nothing; plan another")
    group = wait_for("the rules loaded and evaluated once", lambda: evaluated_once(prom, rules_file))
    print(f"alerts: {len(group['rules'])} rules loaded from {rules_file},"
          f" evaluated every {group['interval']} s")
    # Every node scraped before the first request: faultline_requests_total then starts
    # at 0 in Prometheus, and FaultlinePanics counts every panic.
    up = f'count(up{{job="{JOB}"}} == 1)'
    wait_for("every node scraped", lambda: equals(prom, up, n))
    prime(prom, nodes)
    send_all(nodes, lambda load: load.per_node)
    sent = (f"{n * load.per_node} x {load.status} to {load.route}" for load in LOADS)
    print("alerts: sent " + ", ".join(sent))
    moment = all_scraped(prom, nodes)
    print(f"alerts: rules evaluated after the last scrape, at {evaluated_after(prom, rules_file, moment)}")
    check_ratios(prom, n)
    check_alerts(wait_for_alerts(prom, n), n)
    check_health(prom, rules_file)
    print(f"alerts: OK: {FAST_BURN} for {BURST.route}'s 5xx alone; quiet for {CLIENT_BURST.route}'s"
          " 4xx and for rejections past the guard, under the guard and when healthy;"
          " FaultlinePanics for the panics")


if __name__ == "__main__":
    main()
