"""The seed-shaped scenario scripts of this folder (setup.sh, runner.sh, reconcile.sh), run
from a Python script against one service: the environment they share (FAULTLINE_URL,
FAULTLINE_ENV, FAULTLINE_RESULTS, see lib.sh) points at that service and the run's
directory, and a script that fails fails the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest  # noqa: E402
from harness.procs import Failure  # noqa: E402

HERE = Path(__file__).resolve().parent


class Scenarios:
    """The scenario scripts against the service at `url`, their files in `work`."""

    def __init__(self, url: str, work: Path, **extra: str):
        self.results = work / "results"
        self.env_file = work / "env"
        self.env = dict(os.environ, FAULTLINE_URL=url, FAULTLINE_ENV=str(self.env_file),
                        FAULTLINE_RESULTS=str(self.results), **extra)

    def run(self, script: str, *args: str, quiet: bool = False) -> None:
        """SCRIPT ARGS... from this folder, its output shown (when `quiet`, only if it
        fails); a failure if it exits non-zero."""
        out = subprocess.PIPE if quiet else None
        done = subprocess.run([str(HERE / script), *args], env=self.env, text=True, stdout=out,
                              stderr=subprocess.STDOUT if quiet else None)
        if done.returncode != 0:
            print(done.stdout or "", end="", file=sys.stderr)
            raise Failure(f"{' '.join([script, *args])} exited {done.returncode}")

    def setup(self, quiet: bool = False) -> dict[str, str]:
        """setup.sh: an instance, a digest and an inbox per provider; what it wrote, as the
        scenarios source it (INSTANCE_ID, API_KEY, GITHUB_INBOX, GITHUB_SECRET, …)."""
        self.run("setup.sh", quiet=quiet)
        return ingest.read_shell_env(self.env_file)

    def runner(self, copies: int, *specs: str, quiet: bool = False) -> None:
        """runner.sh COPIES "SCRIPT M"...: the copies at once, their overlap proven."""
        self.run("runner.sh", str(copies), *specs, quiet=quiet)

    def reconcile(self, begin: bool = False) -> None:
        """reconcile.sh [begin]: every tally since `begin` against /metrics and the store."""
        self.run("reconcile.sh", *(["begin"] if begin else []))

    def tally(self, name: str, counts: dict[tuple[int, str], int], unexpected: int) -> None:
        """A tally of requests sent outside the scenarios, for reconcile.sh to check like
        theirs: `counts` by (status, label)."""
        tallies = self.results / "tallies"
        tallies.mkdir(parents=True, exist_ok=True)
        lines = [f"count {name} {status} {label} {n}" for (status, label), n in counts.items()]
        lines += [f"commits {name} 0", f"unexpected {name} {unexpected}", f"unsent {name} 0"]
        (tallies / name).write_text("".join(line + "\n" for line in lines))
