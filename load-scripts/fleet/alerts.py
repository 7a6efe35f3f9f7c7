#!/usr/bin/env python3
"""The load and the checks of alerts.sh; standard library only, 127.0.0.1 only.

    alerts.py PROM_URL RULES_FILE HOST:PORT...

PROM_URL is a Prometheus that scrapes the failure-lab instances at HOST:PORT under job
`faultline` and evaluates RULES_FILE every second. This sends the instances a planned load,
waits until Prometheus has scraped all of it and evaluated the rules after that, and checks
through /api/v1/alerts that exactly the planned alerts are active:

- the three burn alerts for the burst route alone, FaultlineFastBurn with the route and the
  failure code in its annotations;
- FaultlinePanics for the panics, naming their route and code;
- no burn alert for a route failing completely under the traffic guard, for a route with
  only rejected requests, or for the healthy route.

First it checks the ratios Prometheus computed from the load, so that a quiet route is quiet
for the reason planned and not because its requests never reached the rules.
"""

import dataclasses
import datetime
import http.client
import json
import pathlib
import re
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "deploy" / "prometheus"))
import generate  # noqa: E402 (the settings the committed rules were written from)

JOB = "faultline"
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


@dataclasses.dataclass(frozen=True)
class Load:
    """What one route gets from each instance, and how the ledger counts it."""

    route: str  # the route label
    path: str  # what is requested; {i} is the instance's index
    per_instance: int
    status: int
    outcome: str
    code: str  # the failure code in faultline_errors_total, if any


# With three instances, against the traffic guard of 100 requests in the long window:
# 180 failures and nothing else, past the guard: the burn alerts fire.
BURST = Load("/handled", "/handled", 60, 422, "handled", "demo-invalid")
# 30 failures and nothing else, under the guard: quiet however high its ratio. Well under it:
# rate() extrapolates to the window's edges, up to about twice what the samples counted when
# they span a single scrape (these 30, 33 with the priming, read as 34 to 45).
UNDER_GUARD = Load("/panic", "/panic", 10, 500, "panicked", "panic")
# 300 404s, past the guard were they counted; `rejected` is neither a failure nor a request.
REJECTED = Load("~unmatched", "/missing/{i}", 100, 404, "rejected", "not-found")
# 300 successes, past the guard, no failure.
HEALTHY = Load("/ok", "/ok", 100, 200, "ok", "")
LOADS = [BURST, UNDER_GUARD, REJECTED, HEALTHY]

# (alert name, its route or outcome label): what the load must make active, and nothing else.
EXPECTED = {(name, BURST.route) for name in BURN_ALERTS} | {("FaultlinePanics", UNDER_GUARD.outcome)}


def die(message):
    print(f"alerts: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def api(prom, path, **params):
    url = f"{prom}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT_S) as answer:
        body = json.load(answer)
    if body.get("status") != "success":
        die(f"{path} {params}: {body}")
    return body["data"]


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


def send_all(instances, per_load):
    """Each instance gets per_load(load) requests of each load, all at once, one thread each."""
    wrong, threads = [], []
    for i, (host, port) in enumerate(instances):
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


def prime(prom, instances):
    """One request of each load to each instance, then a wait until Prometheus holds a sample
    of every route's series. The ledger exports a route's series at its first request, already
    counting it, and rate() sees no increase in a series' first sample: a burst sent to a route
    Prometheus has not scraped yet can be invisible to every ratio, or partly so, depending on
    where the scrape falls. Priming is exact where spreading the burst over a few scrapes would
    only make it likely."""
    send_all(instances, lambda load: 1)
    routes = "|".join(load.route for load in LOADS)
    want = len(instances) * len(LOADS)
    query = f'count(faultline_route_requests_total{{job="{JOB}",outcome="ok",route=~"{routes}"}})'
    wait_for("every primed route scraped", lambda: equals(prom, query, want))
    print(f"alerts: primed {len(LOADS)} routes on {len(instances)} instances; Prometheus holds their series")


def all_scraped(prom, instances):
    """Waits until Prometheus's latest samples count every request sent; returns a moment no
    earlier than those samples."""
    def check():
        seen = {}
        for load in LOADS:
            want = len(instances) * (load.per_instance + 1)
            got = value(prom, f"sum(faultline_route_requests_total{selector(load, outcome=load.outcome)})")
            seen[load.route] = f"{got} of {want}"
            if got != want:
                return False, seen
        return True, seen
    seen = wait_for("the whole load scraped", check)
    print(f"alerts: Prometheus counts every request, primed ones included: {seen}")
    return time.time()


def ratios(prom, load):
    """What the recording rules computed for the route, and its rejected requests."""
    rec = "job_route:faultline_"
    sel = selector(load)
    return {
        "requests_1h": value(prom, f"{rec}slo_requests:rate{FAST_LONG}{sel} * 3600"),
        "failures_1h": value(prom, f"{rec}slo_failures:rate{FAST_LONG}{sel} * 3600"),
        "ratio_1h": value(prom, f"{rec}error_ratio:rate{FAST_LONG}{sel}"),
        "ratio_5m": value(prom, f"{rec}error_ratio:rate{FAST_SHORT}{sel}"),
        "rejected_5m": value(prom, "sum(increase(faultline_route_requests_total"
                                   f'{selector(load, outcome="rejected")}[{FAST_SHORT}]))'),
    }


def check_ratios(prom):
    """Each route's ratios as planned: any other reading would make its check below moot."""
    seen = {load.route: ratios(prom, load) for load in LOADS}
    for route, r in seen.items():
        shown = (f"{k} {v if v is None else round(v, 4)}" for k, v in r.items())
        print(f"alerts: {route:<11} " + "  ".join(shown))
    b, u, rej, ok = (seen[load.route] for load in LOADS)
    plan = [
        (f"{BURST.route} fails above {THRESHOLD} over {FAST_LONG} and {FAST_SHORT}",
         (b["ratio_1h"] or 0) > THRESHOLD and (b["ratio_5m"] or 0) > THRESHOLD),
        (f"{BURST.route} has at least {GUARD} requests", (b["requests_1h"] or 0) >= GUARD),
        (f"{UNDER_GUARD.route} fails above {THRESHOLD} over {FAST_LONG} and {FAST_SHORT}",
         (u["ratio_1h"] or 0) > THRESHOLD and (u["ratio_5m"] or 0) > THRESHOLD),
        (f"{UNDER_GUARD.route} has requests, fewer than {GUARD}", 0 < (u["requests_1h"] or 0) < GUARD),
        (f"{REJECTED.route} has at least {GUARD} rejected requests", (rej["rejected_5m"] or 0) >= GUARD),
        (f"{HEALTHY.route} has at least {GUARD} requests and no failure",
         (ok["requests_1h"] or 0) >= GUARD and ok["ratio_5m"] == 0),
    ]
    broken = [what for what, holds in plan if not holds]
    if broken:
        die("the ratios Prometheus computed are not as planned (the load or a recording rule"
            " is wrong): " + "; ".join(broken))


def key(alert):
    """(alert name, the label that says where): route for the burn alerts, outcome for
    FaultlinePanics, instance for the others."""
    labels = alert["labels"]
    return labels["alertname"], labels.get("route") or labels.get("outcome") or labels.get("instance", "")


def show(alerts):
    for a in sorted(alerts, key=key):
        name, where = key(a)
        print(f"alerts: active {name} {where}: {a['state']}, value {a['value']}, since {a['activeAt']}")


def wait_for_alerts(prom):
    """Polls until every expected alert is active. Any other active alert fails at once: the
    rules have read the whole load by now, and it does not change."""
    def check():
        alerts = api(prom, "/api/v1/alerts")["alerts"]
        keys = {key(a) for a in alerts}
        if len(keys) < len(alerts):
            show(alerts)
            die("more than one alert for one route or outcome: a rule lost its aggregation")
        if keys - EXPECTED:
            show(alerts)
            die(f"active, but the load must not raise them: {sorted(keys - EXPECTED)}")
        return EXPECTED <= keys, f"missing {sorted(EXPECTED - keys)}, active {sorted(keys)}"
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
            n * BURST.per_instance, f"{FAST_BURN}'s description")
    panics = alerts[("FaultlinePanics", UNDER_GUARD.outcome)]
    print(f"alerts: FaultlinePanics description: {panics['annotations']['description']}")
    if float(panics["value"]) < n * (UNDER_GUARD.per_instance + 1):
        die(f"FaultlinePanics counts {panics['value']} panics, {n * (UNDER_GUARD.per_instance + 1)} were sent")
    counted(panics["annotations"]["description"],
            rf"By route and code: {re.escape(UNDER_GUARD.route)} {UNDER_GUARD.code}: (\d+); $",
            n * UNDER_GUARD.per_instance, "FaultlinePanics' description")


def check_health(prom, rules_file):
    """A rule whose evaluation fails (a many-to-many match, say) is silent, not loud."""
    rules = rule_group(prom, rules_file)["rules"]
    sick = [f"{r['name']}: {r['health']} {r.get('lastError', '')}" for r in rules if r["health"] != "ok"]
    if sick:
        die(f"{len(sick)} rules fail to evaluate, first: {sick[0]}")
    print(f"alerts: all {len(rules)} rules evaluate without error")


def main():
    if len(sys.argv) < 4:
        die("usage: alerts.py PROM_URL RULES_FILE HOST:PORT...")
    prom, rules_file = sys.argv[1], sys.argv[2]
    instances = [(host, int(port)) for host, port in (a.rsplit(":", 1) for a in sys.argv[3:])]
    n = len(instances)
    if 2 * n * UNDER_GUARD.per_instance >= GUARD or n * BURST.per_instance < GUARD:
        die(f"the planned load does not straddle the traffic guard of {GUARD} with {n} instances,"
            " with room for rate()'s extrapolation")
    group = wait_for("the rules loaded and evaluated once", lambda: evaluated_once(prom, rules_file))
    print(f"alerts: {len(group['rules'])} rules loaded from {rules_file},"
          f" evaluated every {group['interval']} s")
    # Every instance scraped before the first request: faultline_requests_total then starts
    # at 0 in Prometheus, and FaultlinePanics counts every panic.
    up = f'count(up{{job="{JOB}"}} == 1)'
    wait_for("every instance scraped", lambda: equals(prom, up, n))
    prime(prom, instances)
    send_all(instances, lambda load: load.per_instance)
    sent = (f"{n * load.per_instance} x {load.status} to {load.route}" for load in LOADS)
    print("alerts: sent " + ", ".join(sent))
    moment = all_scraped(prom, instances)
    print(f"alerts: rules evaluated after the last scrape, at {evaluated_after(prom, rules_file, moment)}")
    check_ratios(prom)
    check_alerts(wait_for_alerts(prom), n)
    check_health(prom, rules_file)
    print(f"alerts: OK: {FAST_BURN} for {BURST.route} alone; quiet under the guard, for rejections"
          " and when healthy; FaultlinePanics for the panics")


if __name__ == "__main__":
    main()
