"""The two receivers the ingestion benchmark compares, each started fresh on its own SQLite
file: the reference service (`webhook-ingest`) and the hand-written one (`plain-receiver`); and
the service on a fresh database of a PostgreSQL server (harness.postgres) for the targets whose
store is `postgres`. Each knows how to make an inbox, what URL path its deliveries go to, and
how to read back the delivery ids it stored. Servers come from the harness (harness.procs,
harness.ingest), started without RUST_BACKTRACE: the receivers run as in production."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest  # noqa: E402
from harness.procs import Server, server_env  # noqa: E402

# The log filter of a traced run: the service's usual logs and its store's trace
# (`store/sqlite/trace.rs`).
TRACE_FILTER = "info,store_trace=trace"

# The secret the hand-written receiver checks: it has no inboxes of its own.
PLAIN_SECRET = "plain-receiver-bench-secret"


class Receiver:
    """One server process of one target, on a fresh database in `work`."""

    def __init__(self, target: dict, work: Path, pg=None, traced: bool = False,
                 wrap: list | None = None, timeout_s: float | None = None):
        """`wrap` runs the server under another program (callgrind), given `timeout_s` to
        start and to stop."""
        self.target, self.work, self.pg = target, work, pg
        slow = {"timeout_s": timeout_s, "stop_timeout_s": timeout_s} if timeout_s else {}
        self.db = work / "store.db"
        location = str(self.db)
        if target.get("store") == "postgres":
            self.pg_db, location = pg.database()
            self.wal_before = pg.wal_counters(self.pg_db)
            self.wal_before["pg_cpu_us"] = pg.cpu_seconds() * 1e6
        args = ["--db", location] + target["args"]
        if target["kind"] == "service":
            log_env = server_env(RUST_LOG=TRACE_FILTER) if traced else None
            self.server = ingest.start(target["bin"], work, args, name="server",
                                       spool=work / "spool", env=log_env, wrap=wrap, **slow)
            try:
                env = ingest.setup(self.server.url, ["github"], "bench")
            except BaseException:
                self.server.stop()
                raise
            self.path, self.secret = ingest.hook_path(env, "github"), env["inboxes"]["github"]["secret"]
        else:
            self.server = Server("server", [*(wrap or []), target["bin"], "--port", 0, *args,
                                            "--secret", PLAIN_SECRET], work, **slow)
            self.path, self.secret = "/hook", PLAIN_SECRET
        self.port = self.server.port

    def log(self) -> Path:
        """The server's stderr, kept in its work directory."""
        return self.server.log_path

    def cpu_seconds(self) -> float:
        return self.server.cpu_seconds()

    def stop(self) -> None:
        """SIGTERM by PID, and a wait; SIGKILL, and a failure, only if it hangs."""
        self.server.stop()

    def wal(self) -> dict[str, int]:
        """On PostgreSQL, once stopped: the WAL flushes and writes of the server and the commits
        of this run's database since it was made (its setup's few included)."""
        self.pg.wait_idle(self.pg_db)
        after = self.pg.wal_counters(self.pg_db)
        after["pg_cpu_us"] = self.pg.cpu_seconds() * 1e6
        return {k: after[k] - self.wal_before[k] for k in after}

    def stored(self) -> set[str]:
        """Delivery ids in the store, read once the server has stopped; a PostgreSQL database
        is dropped once read."""
        if self.target.get("store") == "postgres":
            rows = self.pg.sql("SELECT delivery_id FROM deliveries", self.pg_db)
            self.pg.drop(self.pg_db)
            return {row[0] for row in rows}
        with sqlite3.connect(self.db) as db:
            return {row[0] for row in db.execute("SELECT delivery_id FROM deliveries")}
