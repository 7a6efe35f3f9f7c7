#!/usr/bin/env python3
"""Drives the inbox page check: the lab, a bounded load, headless Chromium, the DOM checks.

Standard library only. Chromium runs as `--headless --dump-dom` (the DOM after the page's
script ran) and `--screenshot`; the page keeps its filters in the URL fragment, so a filtered
view is one more dump.
"""

import argparse
import concurrent.futures
import html.parser
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

# Requests per failure kind: enough for distinct counts, few enough for seconds in a debug
# build. Distinct numbers, so a row showing another group's count cannot pass.
LOAD = [
    ("GET", "/ok", 20, None),
    ("GET", "/handled", 15, None),
    ("GET", "/hostile", 6, None),
    ("GET", "/internal", 5, None),
    ("GET", "/panic", 4, None),
    ("GET", "/panic-body", 3, None),
    ("GET", "/small", 8, None),
    ("GET", "/huge", 2, None),
    ("GET", "/timeout", 2, None),
    ("GET", "/missing/route", 9, None),
    ("POST", "/json", 7, b"{not json"),
    ("GET", "/slow?ms=not-a-number", 3, None),
]
# Requests dropped by the client before the answer: cancelled.
CANCELLED = 2
CLIENTS = 8
TIMEOUT_S = 10
CHROMIUM_TIMEOUT_S = 60


def fail(message):
    print(f"inbox.py: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def start_lab(binary):
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)
    lab = subprocess.Popen([binary, "--port", "0"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=env, text=True)
    line = lab.stdout.readline().strip()
    if not line.startswith("listening on "):
        lab.kill()
        fail(f"the lab did not start: {line!r}")
    return lab, "http://" + line.removeprefix("listening on ")


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
    jobs = [(m, p, b) for (m, p, n, b) in LOAD for _ in range(n)]
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(lambda job: send(base, *job), jobs))
    for _ in range(CANCELLED):
        try:
            urllib.request.urlopen(base + "/slow?ms=5000", timeout=0.2)
        except OSError:
            pass


def get_json(url):
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        return json.load(response)


def chromium(*args):
    profile = tempfile.mkdtemp(prefix="faultline-inbox-chromium.")
    try:
        done = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if done.returncode != 0:
        fail(f"chromium {args[-1]}: {done.stderr[-2000:]}")
    return done.stdout


class Dom(html.parser.HTMLParser):
    """The facts of the dumped DOM the checks need."""

    def __init__(self):
        super().__init__()
        self.html_attrs = {}
        self.scripts = 0
        self.rows = []  # dicts: attributes, hidden, cells
        self.cell = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.html_attrs = attrs
        elif tag == "script":
            self.scripts += 1
        elif tag == "tr" and "data-outcome" in attrs:
            self.rows.append({"attrs": attrs, "hidden": "hidden" in attrs, "cells": {}})
        elif tag == "td" and self.rows and attrs.get("class"):
            self.cell = attrs["class"].split()[0]
            self.rows[-1]["cells"][self.cell] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self.cell and self.rows:
            self.rows[-1]["cells"][self.cell] += data


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    began = time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    lab, base = start_lab(args.lab)
    try:
        print(f"== load: {sum(n for *_, n, _ in LOAD) + CANCELLED} requests, every failure kind")
        load(base)
        url = base + "/errors/inbox"
        before = get_json(base + "/errors")
        dom = dom_of(url)
        after = get_json(base + "/errors")
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
        shot = os.path.join(args.out, "inbox.png")
        chromium(f"--screenshot={shot}", "--window-size=1400,900",
                 "--hide-scrollbars", url)
        print(f"== screenshot: {shot}")
    finally:
        lab.send_signal(signal.SIGTERM)
        try:
            lab.wait(timeout=10)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()
    print(f"inbox.py: passed in {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
