"""The failure lab's server processes and the tools that load them: wrk, sequential
keep-alive requests, and the ledger read through /metrics. Everything talks to 127.0.0.1."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")

# wrk's shape for the CPU rows, as in the reference figures, and for the mixed row.
THREADS = 2
CONNECTIONS = 32
MIXED_CONNECTIONS = 256
# How long a server may take to accept connections before the run fails.
START_TIMEOUT_S = 15.0
START_TIMEOUT_VALGRIND_S = 120.0


class BenchFailure(Exception):
    """A real failure: the run exits non-zero. Missed targets are not failures."""


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


class Lab:
    """Starts failure lab servers from one binary, with their stderr logs in one directory."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary = binary
        self.workdir = workdir

    def start(self, mode: str, backtrace: bool = False, valgrind_out: Path | None = None) -> Server:
        return Server(self.binary, mode, backtrace, self.workdir, valgrind_out)


class Server:
    """A failure lab process on 127.0.0.1; stopped by its PID only."""

    def __init__(self, binary: Path, mode: str, backtrace: bool, workdir: Path,
                 valgrind_out: Path | None = None):
        self.port = free_port()
        self.stderr_path = workdir / f"stderr-{self.port}.log"
        command = [str(binary), "--port", str(self.port), "--mode", mode]
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
