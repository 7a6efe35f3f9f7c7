"""Ports and server processes: a server is started, waited for until it listens, and always
stopped by its own PID, never by a name."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

CLK_TCK = os.sysconf("SC_CLK_TCK")
# A cold debug binary on a busy 2-core machine can take a few seconds to print its address;
# far longer means it will not start.
START_TIMEOUT_S = 30.0
# A graceful stop drains what the server holds; far longer than that means it hangs.
STOP_TIMEOUT_S = 30.0
# What every server of this repository prints first once it accepts connections.
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


class Failure(Exception):
    """A real failure of a run: its script exits non-zero."""


def exit_on_sigterm(name: str) -> None:
    """Makes a SIGTERM (a CI timeout's) end script `name` as an exception would, with status
    143: its `finally` clauses and `with` blocks run, so every server it started is stopped
    by its PID. Python's default ends the process at once and leaves them running."""
    def stop(*_):
        print(f"{name}: stopped by SIGTERM", file=sys.stderr)
        sys.exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)


def sigint_as_default() -> None:
    """Given to `Popen` as `preexec_fn`: the child takes SIGINT's default action back. A script
    started as a background job (`cmd &` in a shell without job control, `nohup`) runs with
    SIGINT ignored, and every child inherits that; a child stopped by SIGINT (valgrind writing
    its profile, wrk, a postmaster's fast shutdown) would then never stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago, for a server that takes no port 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(backtrace: bool = False, **extra: str) -> dict:
    """The environment of a server: RUST_BACKTRACE cleared on purpose (a server runs as in
    production, and no backtrace capture weighs on its figures) unless `backtrace` asks for it."""
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)
    env.pop("RUST_LIB_BACKTRACE", None)
    if backtrace:
        env["RUST_BACKTRACE"] = "1"
    env.update(extra)
    return env


def wait_until(check: Callable[[], object], timeout_s: float, what: str,
               alive: Callable[[], bool] = lambda: True, pause_s: float = 0.05):
    """Calls `check` until it returns something true, and returns that; fails once `alive`
    says the process behind it has gone, or after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if not alive():
            raise Failure(f"{what}: the process exited")
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not after {timeout_s:.0f}s")
        time.sleep(pause_s)


class Server:
    """One server process, its stdout in WORK/NAME.out and its stderr in WORK/NAME.log.

    `port` is what it printed in its `listening on 127.0.0.1:PORT` line, or, given a `port`,
    that port once it accepts connections; then its stdout may go to /dev/null (`quiet`): a
    server whose log lines are its stdout still formats and writes every one, and no disk
    fills up under a benchmark's load."""

    def __init__(self, name: str, argv: list, work: Path, env: dict | None = None,
                 port: int | None = None, quiet: bool = False,
                 timeout_s: float = START_TIMEOUT_S, stop_signal: int = signal.SIGTERM,
                 stop_timeout_s: float = STOP_TIMEOUT_S, keep_log: bool = True):
        self.name, self.work, self.stop_signal = name, Path(work), stop_signal
        # A benchmark's servers leave no log behind: many runs of panics on stderr fill a disk.
        self.keep_log = keep_log
        self.stop_timeout_s = stop_timeout_s
        self.out_path, self.log_path = self.work / f"{name}.out", self.work / f"{name}.log"
        self.out = open(os.devnull if quiet else self.out_path, "w+")
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen([str(a) for a in argv], stdout=self.out,
                                        stderr=self.log, env=env or server_env(),
                                        preexec_fn=sigint_as_default)
        self.pid = self.process.pid
        self.returncode = None
        try:
            if port is None:
                self.port = int(wait_until(self._printed_port, timeout_s,
                                           f"{name} printing its address", self.alive))
            else:
                self.port = port
                wait_until(lambda: self.accepts(), timeout_s, f"{name} accepting on {port}",
                           self.alive)
        except Failure as failure:
            # Read before the stop, which closes the log (and may delete it).
            tail = self.log_tail()
            self.stop()
            raise Failure(f"{failure}; its log ends: {tail}") from None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _printed_port(self) -> int | None:
        self.out.seek(0)
        found = LISTENING.search(self.out.read())
        return int(found.group(1)) if found else None

    def accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 2000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def log_bytes(self) -> int:
        """How much the server has written to its stderr so far."""
        self.log.flush()
        return self.log_path.stat().st_size

    def cpu_seconds(self) -> float:
        """User and system CPU time of the process so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise Failure("no VmRSS in /proc status")

    def signal(self, signum: int) -> None:
        if self.alive():
            os.kill(self.pid, signum)

    def stop(self, signum: int | None = None, timeout_s: float | None = None) -> int:
        """`signum` (the server's stop signal by default) to its PID, and a wait; SIGKILL, and
        a failure, only if it hangs. Returns its exit status; stopping twice is harmless."""
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        if self.alive():
            os.kill(self.pid, self.stop_signal if signum is None else signum)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise Failure(f"{self.name} did not stop within {timeout_s:.0f}s")
        self.returncode = self.process.wait()
        for stream in (self.out, self.log):
            stream.close()
        if not self.keep_log:
            self.log_path.unlink(missing_ok=True)
        return self.returncode


class Servers:
    """The servers of a run, every one stopped by its PID when the run ends, however it ends:
    `with Servers() as servers: lab = servers.add(lab.start(...))`."""

    def __init__(self):
        self.running: list = []

    def add(self, server):
        self.running.append(server)
        return server

    def __enter__(self) -> "Servers":
        return self

    def __exit__(self, *_) -> None:
        # The last started first: a proxy before its upstream, Prometheus before its targets.
        failures = []
        for server in reversed(self.running):
            try:
                server.stop()
            except Failure as failure:
                failures.append(str(failure))
        self.running.clear()
        if failures:
            raise Failure("; ".join(failures))


def start_together(starts: list) -> list:
    """Calls every function of `starts` (each starts a server and returns it once it listens)
    at the same moment, on threads of their own; their servers in order. When one fails, the
    others that started are stopped by their PID and the failure is raised."""
    results: list = [None] * len(starts)

    def start(i):
        try:
            results[i] = starts[i]()
        except Exception as failure:  # noqa: BLE001 (raised below, once all have returned)
            results[i] = failure

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(starts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failures = [r for r in results if isinstance(r, Exception)]
    if failures:
        for server in results:
            if not isinstance(server, Exception):
                server.stop()
        raise failures[0]
    return results
