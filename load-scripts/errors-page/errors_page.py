#!/usr/bin/env python3
"""Drives the errors page check: the lab, a bounded load, headless Chromium, the DOM checks.

Standard library and the harness only. Chromium runs as `--headless --dump-dom` (the DOM after the page's
script ran); the page keeps its filters in the URL fragment, so a filtered view is one more
dump. The budget section is checked against what was sent (`budget.py`), and the fit of the
page at a laptop's width by measuring it in the browser over the DevTools protocol
(`cdp.py`), which also takes the screenshots.
"""

import argparse
import concurrent.futures
import html.parser
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import budget
import cdp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import lab as labs  # noqa: E402
from harness.metrics import Metrics  # noqa: E402
from harness.procs import Failure, exit_on_sigterm  # noqa: E402

# Requests per failure kind: enough for distinct counts, few enough for seconds in a debug
# build. Distinct numbers, so a row showing another group's count cannot pass. Each with the
# route template it is counted under and the outcome it should have: what the budget section
# is checked against. /slow mixes ok, rejected and cancelled, so that its ratio shows which
# of them count. Last, the status each answer must have (None: the body fails mid-stream,
# which only /panic-body does). /internal's 5xx get exactly the rules' traffic guard, so that
# it pages on the page while the other failing routes, with fewer requests, are judged too
# few to page; /handled's 4xx get as many, and are no failure of the server: left out.
LOAD = [
    ("GET", "/ok", 20, None, "/ok", "ok", 200),
    ("GET", "/handled", budget.MIN_REQUESTS, None, "/handled", "handled", 422),
    ("GET", "/hostile", 6, None, "/hostile", "handled", 400),
    ("GET", "/internal", budget.MIN_REQUESTS, None, "/internal", "handled", 500),
    ("GET", "/panic", 4, None, "/panic", "panicked", 500),
    ("GET", "/panic-body", 3, None, "/panic-body", "aborted", None),
    ("GET", "/small", 8, None, "/small", "handled", 500),
    ("GET", "/huge", 2, None, "/huge", "handled", 500),
    ("GET", "/timeout", 2, None, "/timeout", "service_error", 504),
    ("GET", "/missing/route", 9, None, "~unmatched", "rejected", 404),
    ("POST", "/json", 7, b"{not json", "/json", "rejected", 400),
    ("POST", "/json", 4, b'{"valid": true}', "/json", "ok", 200),
    ("GET", "/slow?ms=not-a-number", 3, None, "/slow", "rejected", 400),
    ("GET", "/slow?ms=1", 10, None, "/slow", "ok", 200),
]
# Requests dropped by the client before the answer: cancelled.
CANCELLED = 2
CANCELLED_PATH, CANCELLED_ROUTE = "/slow?ms=5000", "/slow"
# The width of a laptop's screen, in CSS pixels, at which the page must not scroll sideways.
FIT_WIDTH, FIT_HEIGHT = 1300, 900
# The most a vertical scrollbar takes from that width.
SCROLLBAR_MAX_PX = 20
# Where /hostile's unbroken token starts (`hostile_message` in the lab).
UNBROKEN_TOKEN = "https://git.example.com/"
CLIENTS = 8
TIMEOUT_S = 10
CHROMIUM_TIMEOUT_S = 60


def fail(message):
    print(f"errors_page.py: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def start_lab(binary, work):
    """The lab (harness.lab), RUST_BACKTRACE cleared, its log lines kept in `work`."""
    try:
        lab = labs.start(binary, Path(work))
    except Failure as failure:
        fail(f"the lab did not start: {failure}")
    return lab, lab.url


def send(base, method, path, body):
    request = urllib.request.Request(base + path, data=body, method=method)
    if body is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        error.read()
        return error.code
    except (OSError, http.client.HTTPException):
        return None  # /panic-body ends its stream in an error


def load(base):
    jobs = [(m, p, b, status) for (m, p, n, b, _, _, status) in LOAD for _ in range(n)]
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        got = list(pool.map(lambda job: send(base, *job[:3]), jobs))
    wrong = {(m, p, want, status) for (m, p, _, want), status in zip(jobs, got)
             if status != want}
    if wrong:
        fail(f"answers with another status than the load expects: {sorted(wrong, key=str)}")
    for _ in range(CANCELLED):
        try:
            urllib.request.urlopen(base + CANCELLED_PATH, timeout=0.2)
        except OSError:
            pass


# Requests of this script to the lab's own routes so far: the budget counts them, all ok.
reads = {"/errors": 0, "/metrics": 0}


def get(base, path):
    reads[path] += 1
    with urllib.request.urlopen(base + path, timeout=TIMEOUT_S) as response:
        return response.read()


def get_errors(base):
    return json.loads(get(base, "/errors"))


def settle(base):
    """Waits until every request of the load has finished in the server, the cancelled ones
    included (the server learns that a client went away after it did): until the in-flight
    gauge of /metrics counts its own request only."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        in_flight = Metrics(get(base, "/metrics").decode()).in_flight
        if in_flight == 1:
            return
        if time.monotonic() > deadline:
            fail(f"{in_flight - 1} requests still in flight {TIMEOUT_S} s after the load")
        time.sleep(0.05)


def chromium(*args):
    profile = tempfile.mkdtemp(prefix="faultline-errors-page-chromium.")
    browser = subprocess.Popen([*cdp.CHROMIUM, f"--user-data-dir={profile}", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = browser.communicate(timeout=CHROMIUM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        fail(f"chromium {args[-1]}: no answer in {CHROMIUM_TIMEOUT_S} s")
    finally:
        cdp.kill_group(browser)
        shutil.rmtree(profile, ignore_errors=True)
    if browser.returncode != 0:
        fail(f"chromium {args[-1]}: {err[-2000:]}")
    return out


class Dom(html.parser.HTMLParser):
    """The facts of the dumped DOM the checks need."""

    def __init__(self):
        super().__init__()
        self.html_attrs = {}
        self.scripts = 0
        self.rows = []  # the groups' rows: dicts of attributes, hidden, cells by class
        self.budget_rows = []  # dicts of attributes, cells in order
        self.budget_heading = ""
        self.in_heading = False
        self.cell = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.html_attrs = attrs
        elif tag == "script":
            self.scripts += 1
        elif tag == "h2":
            self.in_heading = True
        elif tag == "tr" and "data-outcome" in attrs:
            self.rows.append({"attrs": attrs, "hidden": "hidden" in attrs, "cells": {}})
        elif tag == "tr" and "data-route" in attrs:
            self.budget_rows.append({"attrs": attrs, "cells": []})
        elif tag == "td" and self.budget_rows and not self.rows:
            self.cell = len(self.budget_rows[-1]["cells"])
            self.budget_rows[-1]["cells"].append("")
        elif tag == "td" and self.rows and attrs.get("class"):
            self.cell = attrs["class"].split()[0]
            self.rows[-1]["cells"][self.cell] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        elif tag == "h2":
            self.in_heading = False

    def handle_data(self, data):
        self.text.append(data)
        if self.in_heading:
            self.budget_heading += data
        if self.cell is None:
            return
        if self.rows:
            self.rows[-1]["cells"][self.cell] += data
        elif self.budget_rows:
            self.budget_rows[-1]["cells"][self.cell] += data


def dom_of(url):
    dom = Dom()
    dom.feed(chromium("--dump-dom", url))
    if dom.html_attrs.get("data-ready") != "1":
        fail(f"the page's script did not run (blocked by its own policy?) at {url}")
    if "data-pwned" in dom.html_attrs:
        fail("the script injected through an error message ran")
    if dom.scripts != 1:
        fail(f"{dom.scripts} script elements in the DOM, expected the page's own only")
    return dom


def check_rows(dom, before, after):
    """Rows match the groups read before and after the page: the same fingerprints, in
    order, with their codes; each count between the two reads (the browser's own favicon
    request may add a 404 meanwhile), exact where the reads agree."""
    first = {g["fingerprint"]: g for g in before["groups"]}
    last = {g["fingerprint"]: g for g in after["groups"]}
    shown = [(r["attrs"]["data-fingerprint"], r["cells"]) for r in dom.rows]
    if not shown:
        fail("no rows")
    counts = [int(cells["count"]) for _, cells in shown]
    if counts != sorted(counts, reverse=True):
        fail(f"rows are not most frequent first: {counts}")
    missing = set(first) - {fp for fp, _ in shown}
    if missing:
        fail(f"groups of /errors missing from the page: {sorted(missing)}")
    for fingerprint, cells in shown:
        group = last.get(fingerprint)
        if group is None:
            fail(f"row {fingerprint} is no group of /errors")
        low = first.get(fingerprint, {"count": 0})["count"]
        count = int(cells["count"])
        if not low <= count <= group["count"]:
            fail(f"{group['code']}: the page shows {count}, /errors {low}..{group['count']}")
        if (cells["code"], int(cells["status"]), cells["outcome"], cells["route"]) != (
                group["code"], group["status"], group["outcome"], group["route"]):
            fail(f"row {fingerprint}: {cells} != {group}")
    return len(shown)


def check_filter(url, fragment, keep, groups):
    dom = dom_of(f"{url}#{fragment}")
    visible = [r for r in dom.rows if not r["hidden"]]
    expected = [g for g in groups if keep(g)]
    if not expected:
        fail(f"#{fragment}: the load made no group to keep")
    if len(dom.rows) != len(groups) or len(visible) != len(expected):
        fail(f"#{fragment}: {len(visible)} of {len(dom.rows)} rows shown, "
             f"expected {len(expected)} of {len(groups)}")
    wanted = {g["fingerprint"] for g in expected}
    if any(r["attrs"]["data-fingerprint"] not in wanted for r in visible):
        fail(f"#{fragment}: a row that should be hidden is shown")
    print(f"   #{fragment}: {len(visible)} of {len(dom.rows)} rows shown, as expected")


def check_budget(dom):
    """The budget section against the load: exact counts, ratios and burn rates as sent,
    the fastest burning first. The script's reads of /errors and /metrics so far count under
    their routes; the page's own request is still in flight while it is drawn, so it does
    not."""
    sent = [(route, outcome, status, n) for (_, _, n, _, route, outcome, status) in LOAD]
    sent += [(CANCELLED_ROUTE, "cancelled", None, CANCELLED)]
    sent += [(path, "ok", 200, n) for path, n in reads.items()]
    problems = budget.check(dom.budget_rows, dom.budget_heading, sent)
    if problems:
        fail("the budget section: " + "; ".join(problems))
    listed, cut = budget.expected(sent)
    zero = [r["route"] for r in listed if r["failures"] == 0]
    left_out = sorted({route for route, *_ in sent} - {r["route"] for r in listed + cut})
    print(f"== budget: {len(listed)} routes match the load, fastest burning first; "
          f"listed with 0: {zero}; cut past {budget.MAX_ROUTES_SHOWN}: "
          f"{[r['route'] for r in cut]}; only client mistakes, left out: {left_out}")
    judged = {kind: [r["route"] for r in listed if r["alert"] == kind] for kind in ("page", "guard")}
    print(f"== fast burn alert, as the rules judge it: pages {judged['page']}; "
          f"too few requests to page {judged['guard']}")
    if not judged["page"] or not judged["guard"]:
        fail("the load should make one route page and others fall under the guard")
    # A route whose handler answered only 4xx, past the guard were they counted, pages no one.
    clients = {route for (_, _, n, _, route, outcome, status) in LOAD
               if outcome == "handled" and status < 500 and n >= budget.MIN_REQUESTS}
    if not clients or clients & {r["route"] for r in listed + cut}:
        fail(f"the load should hold a route of client mistakes past the guard, left out: {clients}")
    print(f"== client mistakes past the guard, left out and paging no one: {sorted(clients)}")


# Measured in the page: how wide the document is against the viewport, and how wide the
# summary holding /hostile's unbroken token would be against the box it is cut to.
MEASURE = """(() => {
  const root = document.documentElement;
  const token = [...document.querySelectorAll("td.latest summary")]
    .find((s) => s.textContent.includes(%s));
  const pre = token && token.parentElement.querySelector("pre.message");
  return {ready: root.dataset.ready, scroll: root.scrollWidth, client: root.clientWidth,
          token: token ? [token.scrollWidth, token.clientWidth] : null,
          pre: pre && pre.offsetParent ? [pre.scrollWidth, pre.clientWidth] : null};
})()"""
OPEN_ALL = "document.querySelectorAll('details').forEach((d) => { d.open = true; })"


def check_fit(url, out):
    """At a laptop's width the page does not scroll sideways, with every disclosure closed
    and then open, although /hostile's message holds a token wider than the screen."""
    with cdp.Browser(FIT_WIDTH, FIT_HEIGHT, CHROMIUM_TIMEOUT_S) as browser:
        browser.open(url)
        closed = browser.evaluate(MEASURE % json.dumps(UNBROKEN_TOKEN))
        if closed["ready"] != "1":
            fail(f"the page's script did not run at {FIT_WIDTH} px")
        if not closed["token"] or closed["token"][0] <= FIT_WIDTH:
            fail(f"no latest message wider than {FIT_WIDTH} px reached the page: "
                 f"{closed['token']}")
        browser.screenshot(os.path.join(out, "inbox.png"))
        browser.evaluate(OPEN_ALL)
        opened = browser.evaluate(MEASURE % json.dumps(UNBROKEN_TOKEN))
        browser.screenshot(os.path.join(out, "inbox-open.png"))
    for state, seen in (("closed", closed), ("open", opened)):
        if not FIT_WIDTH - SCROLLBAR_MAX_PX <= seen["client"] <= FIT_WIDTH:
            fail(f"measured at {seen['client']} px, not in a {FIT_WIDTH} px window")
        if seen["scroll"] > seen["client"]:
            fail(f"at {FIT_WIDTH} px with the messages {state} the page is "
                 f"{seen['scroll']} px wide: it scrolls sideways")
    if not opened["pre"] or opened["pre"][0] > opened["pre"][1]:
        fail(f"the open message does not wrap in its box: {opened['pre']}")
    print(f"== fit at {FIT_WIDTH} px ({closed['client']} px beside the scrollbar): "
          f"the page is {closed['scroll']} px wide closed, "
          f"{opened['scroll']} px open, with a message of {closed['token'][0]} px cut to "
          f"{closed['token'][1]} px and wrapped when open; screenshots in {out}/")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    # A CI timeout's SIGTERM runs the finally clauses below: the lab and Chromium stop.
    exit_on_sigterm("errors_page.py")
    began = time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="faultline-errors-page-lab.")
    lab, base = start_lab(args.lab, work)
    try:
        print(f"== load: {sum(n for _, _, n, *_ in LOAD) + CANCELLED} requests, "
              "every failure kind")
        load(base)
        url = base + "/errors/inbox"
        settle(base)
        before = get_errors(base)
        dom = dom_of(url)
        check_budget(dom)
        after = get_errors(base)
        rows = check_rows(dom, before, after)
        print(f"== {rows} rows match /errors: fingerprints, order, codes, statuses, counts")
        outcomes = {g["outcome"] for g in after["groups"]}
        missing = {"handled", "rejected", "panicked", "service_error", "aborted",
                   "cancelled"} - outcomes
        if missing:
            fail(f"the load made no group of {sorted(missing)}")
        text = "".join(dom.text)
        if "<script>document.documentElement.dataset.pwned='1'</script>" not in text:
            fail("the hostile message is not shown as text")
        print("== the hostile message shows as text; its script did not run")
        groups = after["groups"]
        check_filter(url, "outcome=panicked", lambda g: g["outcome"] == "panicked", groups)
        check_filter(url, "status=5xx", lambda g: 500 <= g["status"] <= 599, groups)
        check_filter(url, "q=hostile", lambda g: "hostile" in g["code"] + g["route"], groups)
        check_fit(url, args.out)
    finally:
        lab.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"errors_page.py: passed in {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
