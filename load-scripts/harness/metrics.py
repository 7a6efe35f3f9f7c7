"""`/metrics` read into numbers, and the reconciliation every load script ends with.

The layer exports `faultline_requests_started_total` and one
`faultline_requests_total{outcome=…}` per outcome, so that once a load is over
`started == Σ outcomes + in flight` can be checked from outside, where in flight is the
scrapes being answered (each scrape passes the layer too)."""

from __future__ import annotations

import re

from .client import get
from .procs import Failure, wait_until

OUTCOMES = ("ok", "handled", "rejected", "service_error", "panicked", "aborted", "cancelled")
# A sample line: its name, its labels (whose quoted values may hold braces: route templates),
# its value.
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? '
                    r"([0-9.eE+-]+|NaN|[+-]Inf)$", re.M)
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class Metrics:
    """One exposition: every sample by its series (`name{labels}` as printed)."""

    def __init__(self, text: str):
        self.text = text
        self.samples = {}
        self.by_name: dict[str, list[tuple[dict, float]]] = {}
        for name, labels, value in SAMPLE.findall(text):
            number = float(value)
            self.samples[name + labels] = number
            self.by_name.setdefault(name, []).append((dict(LABEL.findall(labels)), number))

    def value(self, series: str, default: int = 0) -> int:
        """The sample of `series` (`name` or `name{labels}` exactly as exported)."""
        return int(self.samples.get(series, default))

    def total(self, name: str, **labels: str) -> int:
        """The sum of `name`'s samples whose labels include `labels`."""
        return int(sum(v for have, v in self.by_name.get(name, [])
                       if all(have.get(k) == want for k, want in labels.items())))

    def outcomes(self) -> dict[str, int]:
        """Every outcome's count (0 for one not exported)."""
        return {o: self.total("faultline_requests_total", outcome=o) for o in OUTCOMES}

    @property
    def started(self) -> int:
        return self.value("faultline_requests_started_total")

    @property
    def in_flight(self) -> int:
        return self.value("faultline_in_flight")

    def errors(self) -> dict[tuple[str, str], int]:
        """The failure series summed over routes: {(code, status): count}."""
        out: dict[tuple[str, str], int] = {}
        for labels, v in self.by_name.get("faultline_errors_total", []):
            key = (labels.get("code", ""), labels.get("status", ""))
            out[key] = out.get(key, 0) + int(v)
        return out


def scrape(url: str) -> Metrics:
    """`url`/metrics, read once."""
    status, body = get(url, "/metrics")
    if status != 200:
        raise Failure(f"{url}/metrics answered {status}")
    metrics = Metrics(body.decode())
    if "faultline_requests_started_total" not in metrics.samples:
        raise Failure(f"{url}/metrics has no faultline_requests_started_total")
    return metrics


def unreconciled(started: int, outcomes: dict[str, int], in_flight: int) -> str | None:
    """The one reconciliation of the ledger seen from outside: `started` equals the sum of
    the outcomes plus what is still in flight. None when it holds, what differs when not."""
    finished = sum(outcomes.values())
    if started == finished + in_flight:
        return None
    return (f"started {started} != {finished} finished ({outcomes}) + {in_flight} in flight")


def quiescent(url: str, timeout_s: float = 10.0) -> tuple[Metrics, int]:
    """Scrapes until only the scrape itself is in flight and the ledger reconciles (`started`
    is every outcome plus that scrape); the last scrape and how many were made (each finished
    scrape is an `ok` of its own)."""
    scrapes = [0]

    def settled():
        scrapes[0] += 1
        m = scrape(url)
        if m.in_flight == 1 and unreconciled(m.started, m.outcomes(), 1) is None:
            return m
        return None

    try:
        return wait_until(settled, timeout_s, f"{url} settling"), scrapes[0]
    except Failure:
        m = scrape(url)
        raise Failure(f"{url}: never quiescent: {unreconciled(m.started, m.outcomes(), m.in_flight)}"
                      f", in flight {m.in_flight}") from None
