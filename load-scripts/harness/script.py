"""The frame of a load script written in Python: its tools checked, a scratch directory, its
servers stopped by their PIDs however it ends, one line that says it passed (and how long it
took) or why it failed.

    def body(run: script.Run) -> None:
        server = run.add(ingest.start(binary, run.work, [...]))
        run.check(condition, "what went wrong")

    script.main("ci.sh", body, tools=("curl",))
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

from . import tools
from .procs import Failure, Servers, exit_on_sigterm

# How much of each server's log a failure shows: the last lines say why, the rest is noise.
FAILURE_LOG_CHARS = 2000


class Run:
    """One run of a script: `work` (removed at the end), the servers it `add`s (stopped by
    their PIDs at the end) and its `failures`, collected by `check` so that a run can say
    everything that went wrong, not only the first."""

    def __init__(self, name: str, work: Path):
        self.name, self.work = name, work
        self.servers = Servers()
        self.failures: list[str] = []
        # Every server ever added, stopped or not: their logs explain a failure.
        self.started: list = []

    def add(self, server):
        """`server`, stopped by its PID when the run ends (or before, by the script)."""
        self.started.append(server)
        return self.servers.add(server)

    def check(self, holds: bool, failure: str) -> bool:
        """Notes `failure` unless `holds`; the run fails at its end (or at `settle`)."""
        if not holds:
            self.failures.append(failure)
            print(f"{self.name}: {failure}", file=sys.stderr)
        return holds

    def settle(self) -> None:
        """Fails now if any check so far has failed."""
        if self.failures:
            raise Failure(f"{len(self.failures)} checks failed")

    def show_failure(self) -> None:
        """What a failed run shows after its reason: the end of every server's log."""
        for server in self.started:
            print(f"--- {server.name}'s log ends:\n{tail(server.log_path)}", file=sys.stderr)


def parse(argv: list[str], usage: str, pattern: str | None = None) -> tuple[bool, list[str]]:
    """A script's command line: whether it says `--release`, and its other arguments, each
    matching PATTERN; anything else exits with `usage: USAGE`."""
    release, rest = False, []
    for arg in argv:
        if arg == "--release":
            release = True
        elif pattern and re.fullmatch(pattern, arg):
            rest.append(arg)
        else:
            raise SystemExit(f"usage: {usage}")
    return release, rest


def main(name: str, body: Callable[[Run], None], tools_needed: tuple = (),
         install: str = ".ci/setup installs it",
         new_run: Callable[[str, Path], Run] = Run) -> None:
    """Runs `body` as script `name` and exits: 0 with `NAME: passed in S s`; 1 with
    `NAME: WHY` (or the traceback of an error nobody expected) and `run.show_failure()` on a
    failure. The missing-tool check (`tools.require`) comes first: without a tool the script
    fails in CI, or is skipped. `new_run` makes the run (a `Run` of the script's own, for
    one that carries more); what it does (a build) fails the run as the body would."""
    tools.require(name, *tools_needed, install=install)
    # Line by line, so that a failure (on stderr) comes after what led to it, in CI's log too.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    # A run stopped from outside (a CI timeout) still stops its servers on the way out.
    exit_on_sigterm(name)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"faultline-{Path(name).stem}.") as work:
        run = None
        try:
            run = new_run(name, Path(work))
            with run.servers:
                body(run)
            run.settle()
        except Exception as failure:
            # A command run with check=True (a build, an install) that failed is a failure too.
            if isinstance(failure, (Failure, subprocess.CalledProcessError)):
                print(f"{name}: {failure}", file=sys.stderr)
            else:
                traceback.print_exc()
            if run is not None:
                run.show_failure()
            sys.exit(1)
    print(f"{name}: passed in {time.monotonic() - began:.3f}s")


def tail(path: Path) -> str:
    """The end of a log."""
    try:
        return path.read_text(errors="replace")[-FAILURE_LOG_CHARS:]
    except OSError:
        return "(none)"
