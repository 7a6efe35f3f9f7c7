"""The failure lab's servers (harness.lab) and the tools that load them: wrk, sequential
keep-alive requests, and the ledger read through /metrics. Everything talks to 127.0.0.1."""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import client, lab  # noqa: E402
from harness import metrics as harness_metrics  # noqa: E402
from harness.procs import Failure as BenchFailure, Server  # noqa: E402,F401 (the run's failure)

# wrk's shape for the CPU rows, as in the reference figures, and for the mixed row.
THREADS = 2
CONNECTIONS = 32
MIXED_CONNECTIONS = 256


class Lab:
    """Starts failure lab servers from one binary (harness.lab), with their stderr logs in one
    directory; each on a free port, its log lines (stdout) to /dev/null."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary = binary
        self.workdir = workdir

    def start(self, mode: str, backtrace: bool = False, valgrind_out: Path | None = None) -> Server:
        return lab.start(self.binary, self.workdir, mode=mode, backtrace=backtrace,
                         valgrind_out=valgrind_out, quiet=True, keep_log=False)


def get(server: Server, path: str) -> str:
    status, body = client.get(server.url, path)
    if status != 200:
        raise BenchFailure(f"GET {path} answered {status}")
    return body.decode()


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
    return wrk_figures(done.stdout)


def wrk_figures(out: str) -> dict:
    """What wrk printed: requests, requests per second, errors; and the output itself."""
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


def metrics(server: Server) -> dict:
    """The outcome counters and the in-flight gauge (harness.metrics)."""
    m = harness_metrics.scrape(server.url)
    return {**m.outcomes(), "in_flight": m.in_flight}


def quiescent_metrics(server: Server) -> tuple[dict, int]:
    """Scrapes until only the scrape itself is in flight and `started` reconciles with the
    outcomes; returns the last scrape and how many were made (each finished scrape is an `ok`
    of its own)."""
    m, scrapes = harness_metrics.quiescent(server.url)
    return {**m.outcomes(), "in_flight": m.in_flight}, scrapes
