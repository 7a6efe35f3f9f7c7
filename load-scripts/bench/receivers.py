"""The two receivers the ingestion benchmark compares, each started fresh on its own SQLite
file: the reference service (`webhook-ingest`) and the hand-written one (`plain-receiver`); and
the service on a fresh database of a PostgreSQL server (`pgserver.py`) for the targets whose
store is `postgres`. Each knows how to make an inbox, what URL path its deliveries go to, and
how to read back the delivery ids it stored."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
# A release binary prints its address within a second; a loaded machine may take a few.
START_TIMEOUT_S = 30.0
# A graceful stop drains the writer's queue; far longer than that means it hangs.
STOP_TIMEOUT_S = 30.0
# The secret the hand-written receiver checks: it has no inboxes of its own.
PLAIN_SECRET = "plain-receiver-bench-secret"


class BenchFailure(Exception):
    """A real failure: the run exits non-zero. A missed target is not one."""


def server_env() -> dict:
    """Without RUST_BACKTRACE: the receivers run as in production."""
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)
    env.pop("RUST_LIB_BACKTRACE", None)
    return env


class Receiver:
    """One server process of one target, on a fresh database in `work`."""

    def __init__(self, target: dict, work: Path, pg=None):
        self.target, self.work, self.pg = target, work, pg
        self.db = work / "store.db"
        location = str(self.db)
        if target.get("store") == "postgres":
            self.pg_db, location = pg.database()
            self.wal_before = pg.wal_counters(self.pg_db)
            self.wal_before["pg_cpu_us"] = pg.cpu_seconds() * 1e6
        argv = [target["bin"], "--port", "0", "--db", location] + target["args"]
        if target["kind"] == "service":
            argv += ["--spool", str(work / "spool")]
        else:
            argv += ["--secret", PLAIN_SECRET]
        self.out = open(work / "server.out", "w+")
        self.log = open(work / "server.log", "w")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=self.log, env=server_env())
        self.port = self._wait_for_port()
        self.path, self.secret = self._inbox()

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchFailure(f"{self.target['name']} exited: {self.stderr_tail()}")
            self.out.seek(0)
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.out.read())
            if found:
                return int(found.group(1))
            time.sleep(0.05)
        raise BenchFailure(f"{self.target['name']} printed no address")

    def stderr_tail(self) -> str:
        return (self.work / "server.log").read_text()[-2000:]

    def _post(self, path: str, body: dict | None, key: str | None = None) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        conn.request("POST", path, json.dumps(body) if body is not None else None, headers)
        answer = conn.getresponse()
        text = answer.read()
        conn.close()
        if answer.status != 201:
            raise BenchFailure(f"POST {path}: {answer.status} {text[:200]!r}")
        return json.loads(text)

    def _inbox(self) -> tuple[str, str]:
        """The path deliveries go to, and the secret they are signed with."""
        if self.target["kind"] == "plain":
            return "/hook", PLAIN_SECRET
        instance = self._post("/api/instances", None)
        key, iid = instance["api_key"], instance["id"]
        digest = self._post(f"/api/{iid}/digests", {"description": "bench"}, key)
        inbox = self._post(f"/api/{iid}/digests/{digest['id']}/inboxes",
                           {"vcs": "github", "name": "bench/widgets"}, key)
        return f"/api/{iid}/inboxes/{inbox['id']}/commits", inbox["secret"]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self) -> None:
        """SIGTERM by PID, and a wait; SIGKILL only if it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise BenchFailure(f"{self.target['name']} did not stop on SIGTERM")
        self.out.close()
        self.log.close()

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
