"""The side-by-side benchmark of the failure lab's modes; run through bench.sh.

Every (mode, route) case runs in a fresh server process per repetition, cases alternate
(A B C … A B C …) so that machine drift falls on all of them alike, and the server's CPU time
comes from /proc/PID/stat before and after each wrk run. Instructions per request come from
callgrind: two runs of N1 and N2 sequential keep-alive requests, divided by N2 - N1 so that
start-up cancels out. The results are printed and written into BENCHMARKS.md between the
markers, with an SVG chart beside it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SERVER = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "examples" / "failure_lab"
CLK_TCK = os.sysconf("SC_CLK_TCK")
BEGIN_MARK = "<!-- bench:begin (written by load-scripts/bench.sh; edits inside are lost) -->"
END_MARK = "<!-- bench:end -->"

# wrk's shape for the CPU rows, as in the reference figures, and for the mixed row.
THREADS = 2
CONNECTIONS = 32
MIXED_CONNECTIONS = 256
# How long a server may take to accept connections before the run fails.
START_TIMEOUT_S = 15.0
START_TIMEOUT_VALGRIND_S = 120.0
# Bytes per MiB, for RSS.
MIB = 1024 * 1024


class BenchFailure(Exception):
    """A real failure: the run exits non-zero. Missed targets are not failures."""


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


def cpu_cases() -> list[Case]:
    c = []
    for mode in ["bare", "catch-panic", "naive", "faultline"]:
        c.append(Case(f"{mode} /ok", mode, "/ok", group="/ok"))
    for mode in ["bare", "naive", "faultline"]:
        c.append(Case(f"{mode} /handled", mode, "/handled", cheap=mode != "naive", group="/handled"))
    for bt in [False, True]:
        for mode in ["faultline", "catch-panic"]:
            key = f"{mode} /panic" + (" bt" if bt else "")
            c.append(Case(key, mode, "/panic", backtrace=bt, cheap=not bt or mode == "faultline",
                          group="/panic RUST_BACKTRACE=1" if bt else "/panic"))
    for path in ["/small", "/huge"]:
        c.append(Case(f"faultline {path}", "faultline", path, group="/small, /huge"))
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


# ---------------------------------------------------------------------------------------------
# Servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(backtrace: bool) -> dict:
    """The server's environment: RUST_BACKTRACE=1 only where a row asks for it."""
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)
    env.pop("RUST_LIB_BACKTRACE", None)
    if backtrace:
        env["RUST_BACKTRACE"] = "1"
    return env


class Server:
    """A failure lab process on 127.0.0.1; stopped by its PID only."""

    def __init__(self, mode: str, backtrace: bool, workdir: Path, valgrind_out: Path | None = None):
        self.port = free_port()
        self.stderr_path = workdir / f"stderr-{self.port}.log"
        command = [str(SERVER), "--port", str(self.port), "--mode", mode]
        if valgrind_out is not None:
            command = ["valgrind", "--tool=callgrind", "--dump-instr=yes",
                       f"--callgrind-out-file={valgrind_out}"] + command
        self.valgrind = valgrind_out is not None
        self.stderr = open(self.stderr_path, "wb")
        # Logs go to /dev/null: the writers still format and write every line, the disk does
        # not fill up.
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.stderr,
                                        env=server_env(backtrace))
        self.pid = self.process.pid
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + (START_TIMEOUT_VALGRIND_S if self.valgrind else START_TIMEOUT_S)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchFailure(f"server exited with {self.process.returncode} before listening; "
                                   f"stderr: {self.stderr_path.read_text(errors='replace')[-800:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.02 if not self.valgrind else 0.2)
        self.stop()
        raise BenchFailure(f"server on port {self.port} did not start listening")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise BenchFailure("no VmRSS in /proc status")

    def stderr_bytes(self) -> int:
        self.stderr.flush()
        return self.stderr_path.stat().st_size

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            # SIGINT: valgrind writes its profile on the way out.
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=120 if self.valgrind else 10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()
        self.stderr_path.unlink(missing_ok=True)

    def get(self, path: str) -> str:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", path)
            return connection.getresponse().read().decode()
        finally:
            connection.close()


# ---------------------------------------------------------------------------------------------
# Load


def run_wrk(port: int, path: str, seconds: float, connections: int = CONNECTIONS,
            script: Path | None = None, script_args: list | None = None) -> dict:
    command = ["wrk", f"-t{THREADS}", f"-c{connections}", f"-d{max(1, round(seconds))}s",
               "--timeout", "10s"]
    if script is not None:
        command += ["-s", str(script)]
    command.append(f"http://127.0.0.1:{port}{path}")
    if script_args:
        command += ["--"] + [str(a) for a in script_args]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchFailure(f"wrk failed: {done.stderr.strip()} {done.stdout.strip()[-400:]}")
    out = done.stdout
    found = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not found or not rate:
        raise BenchFailure(f"could not read wrk's output:\n{out}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests": int(found.group(1)),
        "rps": float(rate.group(1)),
        "socket_errors": sum(int(g) for g in errors.groups()) if errors else 0,
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "stdout": out,
    }


def sequential(port: int, path: str, count: int) -> None:
    """`count` GETs one after another on one keep-alive connection, each read to its end."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for _ in range(count):
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.will_close:
            raise BenchFailure(f"the server closed the keep-alive connection on {path}")
    connection.close()


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# ---------------------------------------------------------------------------------------------
# Measurements


def measure_cpu(case: Case, seconds: float, warmup: float, workdir: Path) -> dict:
    server = Server(case.mode, case.backtrace, workdir)
    try:
        if warmup > 0:
            run_wrk(server.port, case.path, warmup, connections=4)
        stderr0, cpu0 = server.stderr_bytes(), server.cpu_seconds()
        result = run_wrk(server.port, case.path, seconds)
        cpu1, stderr1 = server.cpu_seconds(), server.stderr_bytes()
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


def metrics(server: Server) -> dict:
    text = server.get("/metrics")
    values = {}
    for name, value in re.findall(r'^faultline_requests_total\{outcome="(\w+)"\} (\d+)$', text, re.M):
        values[name] = int(value)
    in_flight = re.search(r"^faultline_in_flight (\d+)$", text, re.M)
    if not values or not in_flight:
        raise BenchFailure(f"/metrics has no outcome counters:\n{text[:500]}")
    values["in_flight"] = int(in_flight.group(1))
    return values


def quiescent_metrics(server: Server) -> tuple[dict, int]:
    """Scrapes until only the scrape itself is in flight; returns the last scrape and how many
    were made (each finished scrape is an `ok` of its own)."""
    scrapes = 0
    deadline = time.monotonic() + 10
    while True:
        scrapes += 1
        m = metrics(server)
        if m["in_flight"] == 1 or time.monotonic() > deadline:
            return m, scrapes
        time.sleep(0.05)


# The mixed row's quiet tail: no request is sent in the last second of the run, so none is
# in flight when wrk ends (see mixed.lua).
MIXED_QUIET_S = 1


def measure_mixed(seconds: float, workdir: Path) -> dict:
    server = Server("faultline", False, workdir)
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
    load = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


def measure_memory(first: int, total: int, distinct: int, workdir: Path) -> dict:
    server = Server("faultline", False, workdir)
    try:
        rss_start = server.rss_bytes()
        fail_until(server, first, distinct)
        m1, _ = quiescent_metrics(server)
        rss_first = server.rss_bytes()
        fail_until(server, total, distinct)
        m2, _ = quiescent_metrics(server)
        rss_total = server.rss_bytes()
        series = server.get("/metrics").count("faultline_errors_total{")
    finally:
        server.stop()
    return {
        "rss_start": rss_start, "rss_first": rss_first, "rss_total": rss_total,
        "failures_first": m1["rejected"], "failures_total": m2["rejected"],
        "distinct": distinct, "series": series,
    }


def measure_grind(case: GrindCase, n1: int, n2: int, outdir: Path, workdir: Path) -> None:
    totals = []
    for n in (n1, n2):
        out = outdir / f"{case.key.replace(' ', '_').replace('/', '')}-{n}.callgrind"
        out.unlink(missing_ok=True)
        server = Server(case.mode, case.backtrace, workdir, valgrind_out=out)
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


# ---------------------------------------------------------------------------------------------
# Report


def median(values):
    return statistics.median(values) if values else float("nan")


def fmt_us(us: float) -> str:
    if math.isnan(us):
        return "–"
    if us >= 100:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None or math.isnan(ratio):
        return "–"
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.2f}"


def fmt_k(instructions: float | None) -> str:
    if instructions is None:
        return "–"
    if instructions >= 1e6:
        return f"{instructions / 1e6:.2f}M"
    return f"{instructions / 1e3:.1f}k"


@dataclass
class Target:
    name: str
    measured: str
    met: bool | None  # None: not measured

    def mark(self) -> str:
        return {True: "met", False: "**missed**", None: "not measured"}[self.met]


def paired(a: Case, b: Case, fn) -> list[float]:
    return [fn(x["cpu_us"], y["cpu_us"]) for x, y in zip(a.results, b.results)]


def evaluate(cases: dict, grind: dict, mixed: list, memory: dict | None) -> list[Target]:
    cpu = {k: median([r["cpu_us"] for r in c.results]) for k, c in cases.items()}
    ins = {k: g.per_request for k, g in grind.items()}
    base_cpu, base_ins = cpu["bare /ok"], ins.get("bare /ok")
    t = []

    def ins_ratio(key):
        return ins[key] / base_ins if base_ins and ins.get(key) else None

    def ratio_target(name, value, limit, unit="×"):
        if value is None or math.isnan(value):
            return Target(name, "–", None)
        return Target(name, f"{value:.2f}{unit}", value <= limit)

    t.append(ratio_target("/ok faultline ≤ 1.03 × bare /ok, instructions", ins_ratio("faultline /ok"), 1.03))
    deltas = paired(cases["faultline /ok"], cases["bare /ok"], lambda x, y: x - y)
    d = median(deltas)
    t.append(Target("/ok faultline − bare paired CPU delta ≤ +0.5 µs",
                    f"{d:+.2f} µs (pairs {', '.join(f'{x:+.2f}' for x in deltas)})", d <= 0.5))
    t.append(ratio_target("/handled faultline ≤ 1.25 × bare /ok, instructions", ins_ratio("faultline /handled"), 1.25))
    def paired_ratio(a, b):
        return median(paired(cases[a], cases[b], lambda x, y: x / y))

    # CPU ratios are medians of paired ratios: the two runs of a pair ran back to back, so
    # they share the machine's state far more than the medians of all repetitions do.
    t.append(ratio_target("/handled faultline ≤ 1.15 × bare /ok, CPU (paired)",
                          paired_ratio("faultline /handled", "bare /ok"), 1.15))
    naive_x = paired_ratio("naive /handled", "faultline /handled")
    t.append(Target("/handled naive ≥ 300 × faultline, CPU (paired)", f"{naive_x:,.0f}×", naive_x >= 300))
    t.append(ratio_target("/panic faultline ≤ 5.6 × bare /ok, instructions", ins_ratio("faultline /panic"), 5.6))
    t.append(ratio_target("/panic faultline RUST_BACKTRACE=1 ≤ 5.6 × bare /ok, instructions", ins_ratio("faultline /panic bt"), 5.6))
    t.append(ratio_target("/panic faultline ≤ 2 × bare /ok, CPU (paired)",
                          paired_ratio("faultline /panic", "bare /ok"), 2.0))
    t.append(ratio_target("/panic faultline RUST_BACKTRACE=1 ≤ 2 × bare /ok, CPU (paired)",
                          paired_ratio("faultline /panic bt", "bare /ok"), 2.0))
    err = max(r["stderr_per_request"] for k in ("faultline /panic", "faultline /panic bt") for r in cases[k].results)
    t.append(Target("/panic faultline: 0 bytes on stderr, with and without RUST_BACKTRACE=1", f"{err:.1f} B/panic", err == 0))
    t.append(ratio_target("/huge ≤ 1.2 × /small, CPU (paired)",
                          paired_ratio("faultline /huge", "faultline /small"), 1.2))
    if ins.get("faultline /huge") and ins.get("faultline /small"):
        t.append(ratio_target("/huge ≤ 1.2 × /small, instructions", ins["faultline /huge"] / ins["faultline /small"], 1.2))
    if memory:
        growth = (memory["rss_total"] - memory["rss_first"]) / MIB
        t.append(Target(f"RSS after {memory['failures_total']:,} failures ≤ RSS after {memory['failures_first']:,} + 5 MB",
                        f"{growth:+.2f} MiB", growth <= 5))
    ok = all(m["reconciled"] for m in mixed)
    t.append(Target("mixed load: ledger totals == requests wrk sent, every repetition",
                    "; ".join(f"{m['ledger_finished']:,} = {m['sent']:,}" if m["reconciled"]
                              else f"{m['ledger_finished']:,} ≠ {m['sent']:,}" for m in mixed), ok))
    return t


MODE_COLOURS = {"bare": "#4e79a7", "catch-panic": "#f28e2b", "naive": "#e15759", "faultline": "#59a14f"}


def write_svg(path: Path, cases: list[Case], mixed_cpu: float | None) -> None:
    """A horizontal bar chart of server CPU µs per request, log scale, one bar per case,
    grouped by route under a heading of their own."""
    rows = []
    last_group = None
    for c in cases:
        if c.group != last_group:
            rows.append(("group", c.group))
            last_group = c.group
        label = c.path if c.group == "/small, /huge" else c.mode
        rows.append(("bar", label, c.mode, median([r["cpu_us"] for r in c.results])))
    if mixed_cpu is not None:
        rows.append(("group", f"mixed 70% /ok, 25% /handled, 5% /panic at {MIXED_CONNECTIONS} connections"))
        rows.append(("bar", "faultline", "faultline", mixed_cpu))
    values = [r[3] for r in rows if r[0] == "bar" and r[3] > 0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    left, width, bar_h, gap, top = 110, 560, 16, 4, 56
    height = top + sum(24 if r[0] == "group" else bar_h + gap for r in rows) + 36
    total_w = left + width + 80

    def x(v):
        return left + width * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{total_w}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">Server CPU µs per request '
           f'(median of repetitions, log scale; shorter is cheaper)</text>']
    lx = left
    for mode, colour in MODE_COLOURS.items():
        out.append(f'<rect x="{lx}" y="32" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{lx + 14}" y="41">{mode}</text>')
        lx += 110
    axis_bottom = height - 28
    decade = lo
    while decade <= hi:
        gx = x(decade)
        out.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{axis_bottom}" stroke="#ddd"/>'
                   f'<text x="{gx:.1f}" y="{axis_bottom + 14}" text-anchor="middle">{decade:g} µs</text>')
        decade *= 10
    y = top
    for r in rows:
        if r[0] == "group":
            y += 18
            out.append(f'<text x="10" y="{y}" font-weight="bold">{r[1]}</text>')
            y += 6
            continue
        _, label, mode, v = r
        out.append(f'<text x="{left - 8}" y="{y + 12}" text-anchor="end">{label}</text>'
                   f'<rect x="{left}" y="{y}" width="{max(x(v) - left, 1):.1f}" height="{bar_h}" '
                   f'fill="{MODE_COLOURS[mode]}"/>'
                   f'<text x="{x(v) + 4:.1f}" y="{y + 12}">{fmt_us(v)}</text>')
        y += bar_h + gap
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def report(args, cases: list[Case], grind: list[GrindCase], mixed: list, memory: dict | None,
           targets: list[Target], started: float, elapsed: float, loads: list[float],
           svg_name: str) -> str:
    by_key = {c.key: c for c in cases}
    g_by_key = {g.key: g for g in grind}
    base_cpu = median([r["cpu_us"] for r in by_key["bare /ok"].results])
    base_ins = g_by_key["bare /ok"].per_request if "bare /ok" in g_by_key else None
    commit, dirty = args.commit, args.dirty
    lines = [BEGIN_MARK, ""]
    lines.append(f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, commit "
                 f"`{commit}`{' with uncommitted changes in src/' if dirty else ''}, "
                 f"{os.cpu_count()} cores, `bench.sh {args.argv or '(defaults)'}`: "
                 f"wrk -t{THREADS} -c{CONNECTIONS} for {args.duration:g} s per repetition after a "
                 f"{args.warmup:g} s warm-up, a fresh server process per repetition, cases "
                 f"alternating; {args.cheap_reps} repetitions for the cheap paths, {args.reps} for "
                 f"the expensive ones (naive, catch-panic with RUST_BACKTRACE=1). Took "
                 f"{elapsed / 60:.1f} min.")
    lines.append("")
    spreads = []
    for c in cases:
        v = [r["cpu_us"] for r in c.results]
        if len(v) > 1:
            spreads.append((max(v) - min(v)) / median(v))
    lines.append(f"Noise: the 1-minute load average ran from {min(loads):.1f} to {max(loads):.1f} "
                 f"on {os.cpu_count()} cores during the run (other work on the machine). The spread "
                 f"(max − min) / median of CPU µs per request over repetitions was "
                 f"{100 * median(spreads):.0f}% at the median row and {100 * max(spreads):.0f}% at "
                 f"the worst; the callgrind instruction counts do not depend on it.")
    lines.append("")
    lines.append("RUST_BACKTRACE is removed from every server's environment except the rows marked "
                 "`RUST_BACKTRACE=1`, where it is set to 1. Server stdout (the log lines) goes to "
                 "/dev/null.")
    lines.append("")
    lines.append(f"![server CPU µs per request by route and mode]({svg_name})")
    lines.append("")
    lines.append("| route | mode | reps | req/s | CPU µs/req (median) | min–max | × bare /ok CPU "
                 "| instructions/req | × bare /ok instr | stderr B/req |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        cpu = [r["cpu_us"] for r in c.results]
        m = median(cpu)
        g = g_by_key.get(c.key)
        ins = g.per_request if g else None
        route = c.path + (" RUST_BACKTRACE=1" if c.backtrace else "")
        stderr = median([r["stderr_per_request"] for r in c.results])
        lines.append(
            f"| {route} | {c.mode} | {len(cpu)} | {median([r['rps'] for r in c.results]):,.0f} "
            f"| {fmt_us(m)} | {fmt_us(min(cpu))}–{fmt_us(max(cpu))} | {fmt_ratio(m / base_cpu)} "
            f"| {fmt_k(ins)} | {fmt_ratio(ins / base_ins) if ins and base_ins else '–'} "
            f"| {stderr:,.0f} |")
    lines.append("")
    lines.append("Paired deltas (repetition i of one case against repetition i of the other; "
                 "each pair ran back to back, in fresh processes):")
    lines.append("")
    lines.append("| pair | CPU µs/req deltas | median delta | median ratio |")
    lines.append("|---|---|---:|---:|")
    for a, b in [("faultline /ok", "bare /ok"), ("catch-panic /ok", "bare /ok"),
                 ("naive /ok", "bare /ok"), ("faultline /handled", "bare /ok"),
                 ("faultline /handled", "bare /handled"), ("faultline /panic", "bare /ok"),
                 ("faultline /panic bt", "bare /ok"), ("faultline /panic", "catch-panic /panic"),
                 ("naive /handled", "faultline /handled"),
                 ("faultline /huge", "faultline /small")]:
        ds = paired(by_key[a], by_key[b], lambda x, y: x - y)
        rs = paired(by_key[a], by_key[b], lambda x, y: x / y)
        lines.append(f"| {a} − {b} | {', '.join(f'{d:+.2f}' for d in ds)} | {median(ds):+.2f} "
                     f"| {fmt_ratio(median(rs))} |")
    lines.append("")
    lines.append(f"Instructions per request under callgrind (release build, sequential requests on "
                 f"one keep-alive connection, (total(N₂) − total(N₁)) / (N₂ − N₁); N₁ = "
                 f"{args.n1}, N₂ = {args.n2}; {args.n1_expensive}/{args.n2_expensive} for catch-panic with "
                 f"RUST_BACKTRACE=1 and {args.n1_very}/{args.n2_very} for naive, whose requests cost "
                 f"too much to run thousands under callgrind):")
    lines.append("")
    lines.append("| case | N₁ | total(N₁) | N₂ | total(N₂) | instructions/req | × bare /ok |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for g in grind:
        if g.per_request is None:
            continue
        n1, t1, n2, t2 = g.totals
        lines.append(f"| {g.title()} | {n1} | {t1:,} | {n2} | {t2:,} | {g.per_request:,.0f} "
                     f"| {fmt_ratio(g.per_request / base_ins)} |")
    lines.append("")
    if mixed:
        lines.append(f"Mixed webhook-like load (70% /ok, 25% /handled, 5% /panic) under faultline, "
                     f"wrk -t{THREADS} -c{MIXED_CONNECTIONS}, {args.mixed_duration:g} s of which the last "
                     f"{MIXED_QUIET_S} s sends nothing (so that no request is cut off when wrk "
                     f"ends; req/s is over the sending window), "
                     f"reconciled against the ledger's totals read through /metrics before and "
                     f"after (the scrapes subtracted):")
        lines.append("")
        lines.append("| rep | req/s | CPU µs/req | sent (ok/handled/panic) | ledger finished "
                     "(ok/handled/panicked/cancelled/other) | in flight after | reconciled |")
        lines.append("|---:|---:|---:|---|---|---:|---|")
        for i, m in enumerate(mixed, 1):
            lines.append(
                f"| {i} | {m['rps']:,.0f} | {fmt_us(m['cpu_us'])} | {m['sent']:,} "
                f"({m['sent_ok']:,}/{m['sent_handled']:,}/{m['sent_panic']:,}) "
                f"| {m['ledger_finished']:,} ({m['ledger_ok']:,}/{m['ledger_handled']:,}/"
                f"{m['ledger_panicked']:,}/{m['ledger_cancelled']:,}/{m['ledger_other']:,}) "
                f"| {m['in_flight_after']} | {'yes' if m['reconciled'] else '**no**'} |")
        lines.append("")
    if memory:
        lines.append(f"Memory: one faultline server, failing requests (404, `GET /miss/<n>`) over "
                     f"{memory['distinct']:,} distinct raw paths:")
        lines.append("")
        lines.append("| after | failures (ledger) | RSS |")
        lines.append("|---|---:|---:|")
        lines.append(f"| start | 0 | {memory['rss_start'] / MIB:.1f} MiB |")
        lines.append(f"| first batch | {memory['failures_first']:,} | {memory['rss_first'] / MIB:.1f} MiB |")
        lines.append(f"| all | {memory['failures_total']:,} | {memory['rss_total'] / MIB:.1f} MiB |")
        lines.append("")
        lines.append(f"Failure series in the exposition at the end: {memory['series']}.")
        lines.append("")
    lines.append("Targets (a miss is reported, not a failure of the run; CPU ratios are the medians "
                 "of the paired ratios above, instruction ratios come from callgrind):")
    lines.append("")
    lines.append("| target | measured | |")
    lines.append("|---|---|---|")
    for t in targets:
        lines.append(f"| {t.name} | {t.measured} | {t.mark()} |")
    lines.append("")
    lines.append(END_MARK)
    return "\n".join(lines)


def splice(markdown: Path, generated: str) -> None:
    """Replaces what lies between the markers, keeping the hand-written rest of the file."""
    if markdown.exists():
        text = markdown.read_text()
        if BEGIN_MARK in text and END_MARK in text:
            head, rest = text.split(BEGIN_MARK, 1)
            tail = rest.split(END_MARK, 1)[1]
            markdown.write_text(head + generated + tail)
            return
        markdown.write_text(text.rstrip() + "\n\n" + generated + "\n")
        return
    markdown.write_text("# Benchmarks\n\n" + generated + "\n")


# ---------------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="tiny durations and counts (CI): every mode and row, about a minute")
    p.add_argument("--duration", type=float, help="seconds of wrk per repetition (10)")
    p.add_argument("--reps", type=int, help="repetitions of the expensive rows (3)")
    p.add_argument("--cheap-reps", type=int, help="repetitions of the cheap rows (5)")
    p.add_argument("--warmup", type=float, help="seconds of warm-up per server (1)")
    p.add_argument("--n1", type=int, help="callgrind N1 (200)")
    p.add_argument("--n2", type=int, help="callgrind N2 (2200)")
    p.add_argument("--no-callgrind", action="store_true", help="skip the callgrind rows")
    p.add_argument("--render-only", type=Path, metavar="RESULTS_JSON",
                   help="measure nothing: rewrite the report and chart from a saved results file")
    p.add_argument("--out", type=Path, help="the markdown file to write (BENCHMARKS.md; "
                   "target/bench/BENCHMARKS.md with --quick)")
    args = p.parse_args()
    args.argv = " ".join(sys.argv[1:])
    # What was measured: the work tree when the run starts.
    args.commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip()
    args.dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                                     capture_output=True, text=True).stdout.strip())
    quick = args.quick
    args.duration = args.duration or (1 if quick else 10)
    args.reps = args.reps or (1 if quick else 3)
    args.cheap_reps = args.cheap_reps or (2 if quick else max(5, args.reps))
    args.warmup = args.warmup if args.warmup is not None else (0 if quick else 1)
    args.n1 = args.n1 or (20 if quick else 200)
    args.n2 = args.n2 or (120 if quick else 2200)
    args.n1_expensive, args.n2_expensive = (2, 12) if quick else (20, 220)
    args.n1_very, args.n2_very = (2, 4) if quick else (4, 24)
    args.mixed_duration = 2 if quick else max(args.duration, 2)
    mem_first, mem_total, mem_distinct = (2_000, 20_000, 2_000) if quick else (10_000, 1_000_000, 100_000)
    out_dir = ROOT / "target" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = args.out or (out_dir / "BENCHMARKS.md" if quick else ROOT / "BENCHMARKS.md")
    # The chart of the committed results lives in docs/bench/; any other goes beside its
    # markdown file.
    if markdown.resolve() == (ROOT / "BENCHMARKS.md").resolve():
        svg = ROOT / "docs" / "bench" / "cpu-per-request.svg"
    else:
        svg = markdown.with_name(markdown.stem + "-cpu.svg")
    grind_dir = out_dir / "callgrind"
    grind_dir.mkdir(exist_ok=True)
    if not SERVER.exists():
        raise BenchFailure(f"{SERVER} is missing: build it with cargo build --release --example failure_lab")

    cases = cpu_cases()
    for c in cases:
        c.reps = args.cheap_reps if c.cheap else args.reps
    grind = [] if args.no_callgrind else grind_cases()
    mixed_reps = args.reps
    rounds = max(c.reps for c in cases)
    plan = []
    for rep in range(rounds):
        for c in cases:
            if rep < c.reps:
                plan.append(("cpu", c, rep))
        if rep < mixed_reps:
            plan.append(("mixed", None, rep))
    plan.append(("memory", None, 0))
    plan += [("grind", g, 0) for g in grind]

    if args.render_only:
        saved = json.loads(args.render_only.read_text())
        for c in cases:
            c.results = saved["cases"][c.key]
        for g in grind:
            g.per_request, g.totals = saved["grind"].get(g.key, (None, ()))
        grind = [g for g in grind if g.per_request is not None]
        vars(args).update(saved["args"])
        return finish(args, cases, grind, saved["mixed"], saved["memory"], saved["started"],
                      saved["elapsed"], saved["loads"], markdown, svg)

    started = time.time()
    t0 = time.monotonic()
    loads = [load_average()]
    mixed, memory = [], None
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        work = Path(tmp)
        for i, (kind, case, rep) in enumerate(plan, 1):
            prefix = f"[{i}/{len(plan)}]"
            if kind == "cpu":
                print(f"{prefix} {case.title()} rep {rep + 1}/{case.reps} …", end=" ", flush=True)
                r = measure_cpu(case, args.duration, args.warmup, work)
                case.results.append(r)
                extra = f", {r['stderr_per_request']:,.0f} B stderr/req" if case.path == "/panic" else ""
                print(f"{r['rps']:,.0f} req/s, {fmt_us(r['cpu_us'])} µs CPU/req{extra}", flush=True)
            elif kind == "mixed":
                print(f"{prefix} faultline mixed 70/25/5 -c{MIXED_CONNECTIONS} rep {rep + 1}/{mixed_reps} …",
                      end=" ", flush=True)
                m = measure_mixed(args.mixed_duration, work)
                mixed.append(m)
                print(f"{m['rps']:,.0f} req/s, {fmt_us(m['cpu_us'])} µs CPU/req, sent {m['sent']:,}, "
                      f"ledger {m['ledger_finished']:,}: {'reconciled' if m['reconciled'] else 'MISMATCH'}",
                      flush=True)
            elif kind == "memory":
                print(f"{prefix} faultline memory: {mem_first:,} then {mem_total:,} failures over "
                      f"{mem_distinct:,} paths …", end=" ", flush=True)
                memory = measure_memory(mem_first, mem_total, mem_distinct, work)
                print(f"RSS {memory['rss_first'] / MIB:.1f} MiB after {memory['failures_first']:,}, "
                      f"{memory['rss_total'] / MIB:.1f} MiB after {memory['failures_total']:,}", flush=True)
            else:
                n1, n2 = ((args.n1_very, args.n2_very) if case.very_expensive
                          else (args.n1_expensive, args.n2_expensive) if case.expensive
                          else (args.n1, args.n2))
                print(f"{prefix} callgrind {case.title()} N={n1},{n2} …", end=" ", flush=True)
                measure_grind(case, n1, n2, grind_dir, work)
                print(f"{case.per_request:,.0f} instructions/req", flush=True)
            loads.append(load_average())

    elapsed = time.monotonic() - t0
    saved = {
        "args": {k: v for k, v in vars(args).items() if isinstance(v, (int, float, bool, str))},
        "cases": {c.key: c.results for c in cases},
        "grind": {g.key: (g.per_request, g.totals) for g in grind},
        "mixed": mixed, "memory": memory, "started": started, "elapsed": elapsed, "loads": loads,
    }
    results = out_dir / ("results-quick.json" if quick else "results.json")
    results.write_text(json.dumps(saved, indent=1))
    print(f"results saved in {results}")
    return finish(args, cases, grind, mixed, memory, started, elapsed, loads, markdown, svg)


def finish(args, cases, grind, mixed, memory, started, elapsed, loads, markdown: Path,
           svg: Path) -> int:
    targets = evaluate({c.key: c for c in cases}, {g.key: g for g in grind}, mixed, memory)
    svg.parent.mkdir(parents=True, exist_ok=True)
    write_svg(svg, cases, median([m["cpu_us"] for m in mixed]) if mixed else None)
    svg_ref = os.path.relpath(svg, markdown.parent)
    text = report(args, cases, grind, mixed, memory, targets, started, elapsed, loads, svg_ref)
    splice(markdown, text)
    print()
    print(text.replace(BEGIN_MARK, "").replace(END_MARK, "").strip())
    print()
    print(f"wrote {markdown} and {svg}; total elapsed {elapsed:.0f} s")
    if not all(m["reconciled"] for m in mixed):
        print("FAILED: the ledger's totals do not match what wrk sent", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchFailure as failure:
        print(f"\nFAILED: {failure}", file=sys.stderr)
        sys.exit(1)
