"""The start and the end of every fleet scenario that runs webhook-ingest nodes; standard
library and the harness only, 127.0.0.1 only.

A scenario is a function of a `Run` and its own arguments; `main` parses the command line
(`--release`, and the scenario's own arguments), checks the tools, builds the service, runs
the scenario in a fresh work directory, and whatever the outcome stops every node and
PostgreSQL by its PID. On failure it shows the end of every log and the errors and warnings
the nodes logged, the database password blanked out (PostgreSQL logs a failed statement
whole, and pg_tls.py fails precisely when the password reached a log).
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest, postgres, script, tools  # noqa: E402
from harness.procs import Server, start_together, wait_until  # noqa: E402

# On failure, this many lines of each log, and this many of the errors the nodes logged.
FAILURE_LOG_LINES = 10
# What a node's log line says when it is an error or a warning.
ERROR_LINE = re.compile(r" (ERROR|WARN) ")


class Run(script.Run):
    """One run of a scenario: a script's run (its work directory, its servers), the service's
    binary and the run's PostgreSQL."""

    def __init__(self, name: str, work: Path, release: bool):
        super().__init__(name, work)
        self.release = release
        self.binary = ingest.build(release=release)
        self.pg: postgres.PgServer | None = None

    def say(self, line: str) -> None:
        print(f"{self.name}: {line}")

    def postgres(self) -> postgres.PgServer:
        """A throwaway PostgreSQL with the scripts' database (its URL is `pg.url`), stopped by
        its PID when the run ends."""
        self.pg = postgres.PgServer(self.work)
        self.servers.add(self.pg)
        self.pg.database(postgres.DATABASE)
        return self.pg

    def sql(self, query: str) -> list[list[str]]:
        """Rows of `query` on the scripts' database."""
        return self.pg.sql(query, postgres.DATABASE)

    def node(self, name: str, db: str, port: int = 0) -> Server:
        """Node NAME on store DB (a SQLite path or a postgres:// URL) and PORT (a free one by
        default) with its own spool, kept across its restarts."""
        return self.add(ingest.start(self.binary, self.work, ["--db", db], name=name,
                                     port=port))

    def nodes(self, db: str, names: list[str]) -> list[Server]:
        """Every node of `names` on DB, launched at the same moment (their migrations race)."""
        return [self.add(s) for s in start_together(
            [lambda name=name: ingest.start(self.binary, self.work, ["--db", db], name=name)
             for name in names])]

    def restart(self, node: Server, db: str) -> Server:
        """NODE (stopped) again, on the same store, port and spool."""
        return self.node(node.name, db, node.port)

    def show_failure(self) -> None:
        """The end of every log and the errors and warnings the nodes logged, the database
        password blanked out."""
        password = self.pg.password if self.pg else None

        def redact(text: str) -> str:
            return text.replace(password, "[password]") if password else text

        # The nodes' logs (NAME.log; a storm's answers are NAME.storm) and PostgreSQL's.
        logs = sorted(self.work.glob("*.log")) + [self.work / "pg" / "server.log"]
        print(f"{self.name}: failed; the logs end:", file=sys.stderr)
        for log in (log for log in logs if log.exists()):
            lines = log.read_text(errors="replace").splitlines()[-FAILURE_LOG_LINES:]
            print(f"==> {log.relative_to(self.work)} <==", file=sys.stderr)
            print(redact("\n".join(lines)), file=sys.stderr)
        print(f"{self.name}: the errors and warnings the nodes logged:", file=sys.stderr)
        errors = [line for log in logs[:-1] for line in log.read_text(errors="replace").splitlines()
                  if ERROR_LINE.search(line)]
        print(redact("\n".join(errors[-FAILURE_LOG_LINES:])), file=sys.stderr)


class Background:
    """FN on a thread of its own (a storm that goes on while the scenario kills a node);
    `join` waits for it and raises what it raised. A daemon thread, so that a run that fails
    meanwhile exits without waiting for it."""

    def __init__(self, fn):
        self.result, self.error = None, None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn):
        try:
            self.result = fn()
        except BaseException as error:  # noqa: B036 (handed to join)
            self.error = error

    def join(self):
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def lines(path: Path) -> int:
    with open(path) as f:
        return sum(1 for _ in f)


def wait_for_lines(path: Path, count: int, timeout_s: float, storm: Background) -> int:
    """Until the log PATH that STORM appends to holds COUNT answers; how many it holds."""
    return wait_until(lambda: lines(path) >= count and lines(path), timeout_s,
                      f"the storm is stuck before {count} answers", storm.thread.is_alive)


# The tool a scenario names when it starts PostgreSQL (its servers are not on PATH).
POSTGRESQL = tools.POSTGRESQL


def main(name: str, scenario, usage: str, pattern: str | None = None,
         need=()) -> None:
    """Runs SCENARIO(run, args) as script NAME (see the module's doc). NEED is the tools it
    needs, or a function of its arguments that says which."""
    release, args = script.parse(sys.argv[1:], usage, pattern)
    script.main(name, lambda run: scenario(run, args),
                tools_needed=tuple(need(args) if callable(need) else need),
                new_run=lambda name, work: Run(name, work, release))
