"""A throwaway PostgreSQL server: initdb in a directory of the run (owned by the `postgres`
user when we are root, since PostgreSQL refuses to run as root), the superuser over the Unix
socket only, the service's role over TCP on 127.0.0.1 with a password, as a production
database would ask. Durable as shipped, and said so on the command line. Stopped by the
postmaster's PID (fast shutdown).

In a Python script it is a `PgServer`; a shell script starts, restarts and stops it with
`python3 -m harness postgres …`, which keeps what a later call needs in WORK/pg/server.json."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
from pathlib import Path

from .procs import Failure, free_port, sigint_as_default, wait_until
from .tools import POSTGRESQL_ROOT, postgresql_bins

ROLE = "ingest"
# The database a shell script's PG_URL names (a Python script makes one per run instead).
DATABASE = "ingest"
# A cold start on a loaded 2-core machine takes seconds; far longer means it will not start.
START_TIMEOUT_S = 60.0
# A fast shutdown ends the sessions and writes a checkpoint; far longer means it hangs.
STOP_TIMEOUT_S = 60.0
# What the figures depend on, stated on the command line rather than left to the defaults:
# every commit waits for its WAL flush (the service refuses to call itself durable without),
# and the pool of every node of a run fits.
SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "shared_buffers": "128MB",
    "max_connections": "200",
}


def bin_dir() -> Path:
    """The newest version's server binaries that Debian installed."""
    found = postgresql_bins()
    if not found:
        raise Failure(f"no PostgreSQL under {POSTGRESQL_ROOT}/*/bin; "
                      "install with: apt-get install postgresql")
    return found[-1]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


class PgServer:
    """One server in WORK/pg; `database()` makes a fresh database per run of a target."""

    def __init__(self, work: Path, fresh: bool = True):
        self.bin = bin_dir()
        self.dir = Path(work) / "pg"
        self.root = os.getuid() == 0
        self.proc = None
        self.serial = 0
        state = self.dir / "server.json"
        if not fresh:
            saved = json.loads(state.read_text())
            self.port, self.password, self.pid = saved["port"], saved["password"], saved["pid"]
            return
        self.dir.mkdir(parents=True)
        if self.root:
            os.chmod(work, 0o755)
            shutil.chown(self.dir, "postgres", "postgres")
        self.port = free_port()
        self.password = "pw-" + secrets.token_hex(12)
        self._owner([self.bin / "initdb", "-D", self.dir / "data", "-U", "postgres",
                     "--auth-local=peer", "--auth-host=scram-sha-256", "-E", "UTF8"])
        self.launch()
        try:
            self.sql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{self.password}'")
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """The URL of the shell scripts' database (`DATABASE`)."""
        return f"postgres://{ROLE}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    def save(self) -> None:
        (self.dir / "server.json").write_text(json.dumps(
            {"port": self.port, "password": self.password, "pid": self.pid}))

    def _as_owner(self, argv: list) -> list[str]:
        argv = [str(a) for a in argv]
        return ["runuser", "-u", "postgres", "--", *argv] if self.root else argv

    def _owner(self, argv: list) -> str:
        done = subprocess.run(self._as_owner(argv), capture_output=True, text=True)
        if done.returncode != 0:
            raise Failure(f"{Path(str(argv[0])).name} failed: {done.stderr[-1000:]}")
        return done.stdout

    def launch(self) -> None:
        """Starts the server on its data directory and port; returns once it accepts
        connections, with `pid` the postmaster's own (the one to signal)."""
        argv = [self.bin / "postgres", "-D", self.dir / "data", "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}"]
        for name, value in SETTINGS.items():
            argv += ["-c", f"{name}={value}"]
        with open(self.dir / "server.log", "a") as log:
            self.proc = subprocess.Popen(self._as_owner(argv), stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=sigint_as_default)

        def ready():
            return subprocess.run(self._as_owner([self.bin / "pg_isready", "-q", "-h", self.dir,
                                                  "-p", str(self.port)])).returncode == 0

        try:
            wait_until(ready, START_TIMEOUT_S, "postgres accepting connections",
                       lambda: self.proc.poll() is None, pause_s=0.1)
        except Failure as failure:
            if self.proc.poll() is None:
                self.proc.kill()
            raise Failure(f"{failure}: {(self.dir / 'server.log').read_text()[-1000:]}") from None
        self.pid = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])

    def sql(self, query: str, db: str = "postgres") -> list[list[str]]:
        """Rows of `query` run as the superuser over the Unix socket."""
        out = self._owner([self.bin / "psql", "-h", self.dir, "-p", str(self.port), "-U",
                           "postgres", "-d", db, "-qAt", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                           "-c", query])
        return [line.split("\t") for line in out.splitlines()]

    def database(self, name: str | None = None) -> tuple[str, str]:
        """A fresh database owned by the service's role (`name`, or a new one): its name and
        its URL."""
        if name is None:
            self.serial += 1
            name = f"ingest_{self.serial}"
        self.sql(f"CREATE DATABASE {name} OWNER {ROLE}")
        return name, f"postgres://{ROLE}:{self.password}@127.0.0.1:{self.port}/{name}"

    def wait_idle(self, db: str) -> None:
        """Until no session of `db` is left: the service closed its pool, but the backends
        exit (and report their counts) a moment later."""
        wait_until(lambda: self.sql(f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'")
                   == [["0"]], STOP_TIMEOUT_S, f"the sessions of {db} ending")

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
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat.parent.name == str(self.pid):
                total += sum(int(f) for f in fields[11:15])
            elif fields[1] == str(self.pid):
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """SIGINT to the postmaster by its PID (fast shutdown), and a wait until it is gone."""
        if self.pid is None or _gone(self.pid):
            self.pid = None
            return
        os.kill(self.pid, signal.SIGINT)
        try:
            wait_until(lambda: _gone(self.pid) and (self.proc is None or self.proc.poll() is not None),
                       STOP_TIMEOUT_S, "postgres stopping", pause_s=0.05)
        except Failure:
            os.kill(self.pid, signal.SIGQUIT)
            raise Failure("postgres did not stop on SIGINT") from None
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.wait(STOP_TIMEOUT_S)
        self.pid = None
