"""A throwaway PostgreSQL server for the ingestion benchmark, as load-scripts/fleet/pg.sh makes
one: initdb in a directory of the run (owned by the `postgres` user when we are root, since
PostgreSQL refuses to run as root), the superuser over the Unix socket only, the service's role
over TCP on 127.0.0.1 with a password. Durable as shipped, and said so on the command line:
fsync and synchronous_commit on. Each target run gets a database of its own, dropped after its
deliveries were checked. Stopped by its PID (fast shutdown)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from receivers import BenchFailure

ROLE = "ingest"
# A cold start on a loaded 2-core machine takes seconds; far longer means it will not start.
START_TIMEOUT_S = 60.0
# A fast shutdown ends the sessions and writes a checkpoint; far longer means it hangs.
STOP_TIMEOUT_S = 60.0
# What the figures depend on, stated on the command line rather than left to the defaults:
# every commit waits for its WAL flush (the service refuses to call itself durable without),
# and the pool of every target fits.
SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "shared_buffers": "128MB",
    "max_connections": "200",
}


def bin_dir() -> Path:
    """Debian's server binaries, newest version first."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: [int(x) for x in p.parent.parent.name.split(".")])
    if not found:
        raise BenchFailure("no PostgreSQL under /usr/lib/postgresql/*/bin; "
                           "install with: apt-get install postgresql")
    return found[-1].parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One server for the whole run; `database()` makes a fresh database per target run."""

    def __init__(self, work: Path):
        self.bin = bin_dir()
        self.dir = work / "pg"
        self.dir.mkdir(parents=True)
        self.root = os.getuid() == 0
        if self.root:
            os.chmod(work, 0o755)
            shutil.chown(self.dir, "postgres", "postgres")
        self.port = free_port()
        self.password = "pw-" + secrets.token_hex(12)
        self._owner([self.bin / "initdb", "-D", self.dir / "data", "-U", "postgres",
                     "--auth-local=peer", "--auth-host=scram-sha-256", "-E", "UTF8"])
        argv = [self.bin / "postgres", "-D", self.dir / "data", "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}"]
        for name, value in SETTINGS.items():
            argv += ["-c", f"{name}={value}"]
        self.log = open(self.dir / "server.log", "w")
        self.proc = subprocess.Popen(self._as_owner(argv), stdout=self.log, stderr=self.log)
        self._wait_ready()
        self.sql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{self.password}'")
        self.serial = 0

    def _as_owner(self, argv: list) -> list[str]:
        argv = [str(a) for a in argv]
        return ["runuser", "-u", "postgres", "--", *argv] if self.root else argv

    def _owner(self, argv: list) -> str:
        done = subprocess.run(self._as_owner(argv), capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchFailure(f"{argv[0]} failed: {done.stderr[-1000:]}")
        return done.stdout

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchFailure(f"postgres exited: {(self.dir / 'server.log').read_text()[-1000:]}")
            ready = subprocess.run(self._as_owner([self.bin / "pg_isready", "-q", "-h", self.dir,
                                                   "-p", str(self.port)]))
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise BenchFailure("postgres did not accept connections")

    def sql(self, query: str, db: str = "postgres") -> list[list[str]]:
        """Rows of `query` run as the superuser over the Unix socket."""
        out = self._owner([self.bin / "psql", "-h", self.dir, "-p", str(self.port), "-U",
                           "postgres", "-d", db, "-qAt", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                           "-c", query])
        return [line.split("\t") for line in out.splitlines()]

    def database(self) -> tuple[str, str]:
        """A fresh database owned by the service's role: its name and its URL."""
        self.serial += 1
        name = f"ingest_{self.serial}"
        self.sql(f"CREATE DATABASE {name} OWNER {ROLE}")
        return name, f"postgres://{ROLE}:{self.password}@127.0.0.1:{self.port}/{name}"

    def wait_idle(self, db: str) -> None:
        """Until no session of `db` is left: the service closed its pool, but the backends
        exit (and report their counts) a moment later."""
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while self.sql(f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'") != [["0"]]:
            if time.monotonic() > deadline:
                raise BenchFailure(f"sessions of {db} outlived the service")
            time.sleep(0.05)

    def drop(self, name: str) -> None:
        self.sql(f"DROP DATABASE {name}")

    def wal_counters(self, db: str) -> dict[str, int]:
        """The server's WAL flushes and writes so far, and the commits of database `db`. Read
        once the service has stopped: a backend reports its counts when it exits."""
        (wal_sync, wal_write), = self.sql("SELECT wal_sync, wal_write FROM pg_stat_wal")
        (commits,), = self.sql("SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database "
                               f"WHERE datname = '{db}'")
        return {"wal_sync": int(wal_sync), "wal_write": int(wal_write),
                "xact_commit": int(commits)}

    def cpu_seconds(self) -> float:
        """CPU time of the postmaster, of its live processes, and of those it has reaped
        (the sessions of a stopped service)."""
        pid = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat.parent.name == str(pid):
                total += sum(int(f) for f in fields[11:15])
            elif fields[1] == str(pid):
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """SIGINT to the postmaster by its PID (fast shutdown), and a wait."""
        if self.proc.poll() is None:
            pid = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGINT)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGQUIT)
                self.proc.wait()
                raise BenchFailure("postgres did not stop on SIGINT")
        self.log.close()
