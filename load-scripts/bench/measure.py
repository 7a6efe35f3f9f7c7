"""The cases and how each is measured: server CPU per request under wrk, the mixed load
reconciled against the ledger, memory over many distinct failing paths, and instructions per
request under callgrind."""

from __future__ import annotations

import math
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab import (CONNECTIONS, MIXED_CONNECTIONS, THREADS, BenchFailure, Lab, Server, get,
                 load_average, metrics, quiescent_metrics, run_wrk, sequential)
from settings import HERE

from harness.procs import sigint_as_default  # noqa: E402 (lab puts the harness on the path)

# Bytes per MiB, for RSS.
MIB = 1024 * 1024
# The mixed row's quiet tail: no request is sent in the last second of the run, so none is
# in flight when wrk ends (see mixed.lua).
MIXED_QUIET_S = 1


@dataclass
class Case:
    """One (mode, route) pair measured under wrk."""

    key: str
    mode: str
    path: str
    backtrace: bool = False
    cheap: bool = True
    group: str = ""
    reps: int = 0
    results: list = field(default_factory=list)

    def title(self) -> str:
        suffix = " RUST_BACKTRACE=1" if self.backtrace else ""
        return f"{self.mode} {self.path}{suffix}"


@dataclass
class GrindCase:
    """One (mode, route) pair measured under callgrind."""

    key: str
    mode: str
    path: str
    backtrace: bool = False
    expensive: bool = False
    # So expensive that even the expensive N would take minutes under callgrind.
    very_expensive: bool = False
    per_request: float | None = None
    totals: tuple = ()

    def title(self) -> str:
        suffix = " RUST_BACKTRACE=1" if self.backtrace else ""
        return f"{self.mode} {self.path}{suffix}"


@dataclass
class Results:
    """What one run measured (or what a results file says it measured)."""

    cases: list[Case]
    grind: list[GrindCase]
    mixed: list[dict]
    memory: dict | None
    started: float
    elapsed: float
    loads: list[float]

    def saved(self, recorded: dict) -> dict:
        """The results file's content; `recorded` are the settings it keeps."""
        return {
            "args": recorded,
            "cases": {c.key: c.results for c in self.cases},
            "grind": {g.key: (g.per_request, g.totals) for g in self.grind},
            "mixed": self.mixed, "memory": self.memory, "started": self.started,
            "elapsed": self.elapsed, "loads": self.loads,
        }

    @classmethod
    def from_saved(cls, saved: dict, cases: list[Case], grind: list[GrindCase]) -> Results:
        """The results a results file holds for these cases; callgrind rows it lacks are left
        out."""
        for c in cases:
            c.results = saved["cases"][c.key]
        for g in grind:
            g.per_request, g.totals = saved["grind"].get(g.key, (None, ()))
        grind = [g for g in grind if g.per_request is not None]
        return cls(cases, grind, saved["mixed"], saved["memory"], saved["started"],
                   saved["elapsed"], saved["loads"])


def cpu_cases(cheap_reps: int, reps: int) -> list[Case]:
    """The CPU rows in the order they run and are shown; cheap rows get `cheap_reps`
    repetitions, the others `reps`."""

    def case(key, mode, path, cheap=True, **kw):
        return Case(key, mode, path, cheap=cheap, reps=cheap_reps if cheap else reps, **kw)

    c = []
    for mode in ["bare", "catch-panic", "naive", "faultline"]:
        c.append(case(f"{mode} /ok", mode, "/ok", group="/ok"))
    for mode in ["bare", "naive", "faultline"]:
        c.append(case(f"{mode} /handled", mode, "/handled", cheap=mode != "naive", group="/handled"))
    for bt in [False, True]:
        for mode in ["faultline", "catch-panic"]:
            key = f"{mode} /panic" + (" bt" if bt else "")
            c.append(case(key, mode, "/panic", backtrace=bt, cheap=not bt or mode == "faultline",
                          group="/panic RUST_BACKTRACE=1" if bt else "/panic"))
    for path in ["/small", "/huge"]:
        c.append(case(f"faultline {path}", "faultline", path, group="/small, /huge"))
    return c


def grind_cases() -> list[GrindCase]:
    return [
        GrindCase("bare /ok", "bare", "/ok"),
        GrindCase("catch-panic /ok", "catch-panic", "/ok"),
        GrindCase("faultline /ok", "faultline", "/ok"),
        GrindCase("bare /handled", "bare", "/handled"),
        GrindCase("faultline /handled", "faultline", "/handled"),
        GrindCase("naive /handled", "naive", "/handled", very_expensive=True),
        GrindCase("faultline /panic", "faultline", "/panic"),
        GrindCase("catch-panic /panic", "catch-panic", "/panic"),
        GrindCase("faultline /panic bt", "faultline", "/panic", backtrace=True),
        GrindCase("catch-panic /panic bt", "catch-panic", "/panic", backtrace=True, expensive=True),
        GrindCase("faultline /small", "faultline", "/small"),
        GrindCase("faultline /huge", "faultline", "/huge"),
    ]


def measure_cpu(lab: Lab, case: Case, seconds: float, warmup: float) -> dict:
    server = lab.start(case.mode, case.backtrace)
    try:
        if warmup > 0:
            run_wrk(server.port, case.path, warmup, connections=4)
        stderr0, cpu0 = server.log_bytes(), server.cpu_seconds()
        result = run_wrk(server.port, case.path, seconds)
        cpu1, stderr1 = server.cpu_seconds(), server.log_bytes()
        if not server.alive():
            raise BenchFailure(f"server died during {case.title()}")
    finally:
        server.stop()
    requests = max(result["requests"], 1)
    result.update(
        cpu_us=(cpu1 - cpu0) * 1e6 / requests,
        stderr_per_request=(stderr1 - stderr0) / requests,
        load=load_average(),
    )
    del result["stdout"]
    return result


def measure_mixed(lab: Lab, seconds: float) -> dict:
    server = lab.start("faultline")
    try:
        before = metrics(server)
        cpu0 = server.cpu_seconds()
        result = run_wrk(server.port, "/", seconds, connections=MIXED_CONNECTIONS,
                         script=HERE / "mixed.lua", script_args=[seconds - MIXED_QUIET_S])
        cpu1 = server.cpu_seconds()
        after, scrapes_after = quiescent_metrics(server)
    finally:
        server.stop()
    sent = re.search(r"SENT total=(\d+) ok=(\d+) handled=(\d+) panic=(\d+)", result["stdout"])
    if not sent:
        raise BenchFailure("the mixed script printed no totals")
    total, ok, handled, panic = (int(g) for g in sent.groups())
    outcomes = [k for k in after if k != "in_flight"]
    delta = {k: after[k] - before[k] for k in outcomes}
    # The scrape before and every scrape after but the last finished as `ok` in between.
    scrapes = 1 + (scrapes_after - 1)
    finished = sum(delta.values()) - scrapes
    counted = {
        "sent": total, "sent_ok": ok, "sent_handled": handled, "sent_panic": panic,
        "wrk_responses": result["requests"], "ledger_finished": finished,
        "ledger_ok": delta["ok"] - scrapes, "ledger_handled": delta["handled"],
        "ledger_panicked": delta["panicked"], "ledger_cancelled": delta["cancelled"],
        "ledger_other": finished - (delta["ok"] - scrapes) - delta["handled"] - delta["panicked"]
        - delta["cancelled"],
        "in_flight_after": after["in_flight"] - 1, "scrapes": scrapes + 1,
        "rps": total / (seconds - MIXED_QUIET_S), "cpu_us": (cpu1 - cpu0) * 1e6 / max(total, 1),
        "socket_errors": result["socket_errors"],
    }
    counted["reconciled"] = finished == total and counted["in_flight_after"] == 0
    return counted


def fail_until(server: Server, target: int, distinct: int) -> None:
    """Sends failing requests until the ledger has counted `target` rejections, then stops wrk
    with SIGINT (wrk's duration cannot be a request count; the script idles at its quota)."""
    already = metrics(server)["rejected"]
    quota = math.ceil((target - already) / THREADS)
    target = already + quota * THREADS
    command = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", "-d3600s", "--timeout", "10s",
               "-s", str(HERE / "distinct_paths.lua"), f"http://127.0.0.1:{server.port}/",
               "--", str(quota), str(distinct), str(THREADS)]
    load = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=sigint_as_default)
    deadline = time.monotonic() + 1200
    try:
        while metrics(server)["rejected"] < target:
            if load.poll() is not None:
                raise BenchFailure(f"wrk ended early: {load.stderr.read().decode()[-400:]}")
            if time.monotonic() > deadline or not server.alive():
                raise BenchFailure("the memory row did not reach its count of failures")
            time.sleep(0.05)
    finally:
        if load.poll() is None:
            load.send_signal(signal.SIGINT)
            try:
                load.wait(timeout=30)
            except subprocess.TimeoutExpired:
                load.kill()
                load.wait()


def measure_memory(lab: Lab, first: int, total: int, distinct: int) -> dict:
    server = lab.start("faultline")
    try:
        rss_start = server.rss_bytes()
        fail_until(server, first, distinct)
        m1, _ = quiescent_metrics(server)
        rss_first = server.rss_bytes()
        fail_until(server, total, distinct)
        m2, _ = quiescent_metrics(server)
        rss_total = server.rss_bytes()
        series = get(server, "/metrics").count("faultline_errors_total{")
    finally:
        server.stop()
    return {
        "rss_start": rss_start, "rss_first": rss_first, "rss_total": rss_total,
        "failures_first": m1["rejected"], "failures_total": m2["rejected"],
        "distinct": distinct, "series": series,
    }


def measure_grind(lab: Lab, case: GrindCase, n1: int, n2: int, outdir: Path) -> None:
    totals = []
    for n in (n1, n2):
        out = outdir / f"{case.key.replace(' ', '_').replace('/', '')}-{n}.callgrind"
        out.unlink(missing_ok=True)
        server = lab.start(case.mode, case.backtrace, valgrind_out=out)
        try:
            sequential(server.port, case.path, n)
        finally:
            server.stop()
        totals.append(callgrind_total(out))
    case.totals = (n1, totals[0], n2, totals[1])
    case.per_request = (totals[1] - totals[0]) / (n2 - n1)


def callgrind_total(path: Path) -> int:
    if not path.exists():
        raise BenchFailure(f"callgrind wrote no profile at {path}")
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            total = max(total, int(line.split()[1]))
    if total == 0:
        raise BenchFailure(f"no totals in {path}")
    return total
