"""WAL frames per delivery: the pages a delivery's commit writes, each one frame of the WAL
written, checksummed, fsynced and later checkpointed, for the reference service's SQLite
schema against the hand-written receiver's (`benches/plain-receiver`).

Not the binaries: Python's own SQLite runs each store's statements on a file of its own, the
service's schema made by its migrations as `src/store/sqlite/schema.rs` (and `catchup.rs`)
hold them, its statements those of `store/sqlite/deliveries.rs` and `replays.rs`
(`take_for_delivery`), the receiver's those of `benches/plain-receiver/src/main.rs`. Each
delivery is one transaction of a fresh delivery id and COMMITS commits; WARM deliveries
first, so that the b-trees have their depth, then the WAL is emptied and N more are
counted by its length, with automatic checkpoints off.

usage: wal_frames.py [--deliveries N] [--warm N] [--commits K]"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SQLITE_SRC = ROOT / "examples/webhook-ingest/src/store/sqlite"
PAGE = 4096
FRAME = PAGE + 24
WAL_HEADER = 32
INBOX = "ib_0123456789abcdef0123456789abcdef"
DIGEST = "dg_0123456789abcdef0123456789abcdef"
INSTANCE = "in_0123456789abcdef0123456789abcdef"


def migrations() -> list[str]:
    """The service's migrations, in order, as the Rust source holds them."""
    schema = (SQLITE_SRC / "schema.rs").read_text()
    catchup = (SQLITE_SRC / "catchup.rs").read_text()

    def const(text: str, name: str) -> str:
        found = re.search(r"const " + name + r': &str = "(.*?)";\n', text, re.S)
        if found is None:
            raise SystemExit(f"wal_frames: no migration {name} in the source")
        return found.group(1)

    listed = re.search(r"MIGRATIONS: \[&str; \d+\] = \[(.*?)\];", schema, re.S)
    if listed is None:
        raise SystemExit("wal_frames: no MIGRATIONS in schema.rs")
    names = [n.strip().rstrip(",") for n in listed.group(1).splitlines() if n.strip()]
    return [const(catchup, "CATCHUP") if n.endswith("CATCHUP") else const(schema, n)
            for n in names]


def service(c: sqlite3.Connection, commits: int, replay_key: bool) -> None:
    delivery = str(uuid.uuid4())
    c.execute("BEGIN")
    if replay_key:
        c.execute("INSERT INTO replays (key, until_ms, taken, inbox_id, delivery_id) "
                  "VALUES (?, 9223372036854775807, 1, ?, ?) ON CONFLICT (key) DO NOTHING",
                  (os.urandom(32), INBOX, delivery))
    c.execute("INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count, "
              "received_at) VALUES (?, ?, ?, ?, '2026-12-04T10:00:00.000Z') "
              "ON CONFLICT (inbox_id, delivery_id) DO NOTHING",
              (INBOX, delivery, INSTANCE, commits))
    for _ in range(commits):
        c.execute("INSERT INTO commits (instance_id, digest_id, inbox_id, delivery_id, sha, "
                  "message, author, timestamp, repository, branch) "
                  "VALUES (?, ?, ?, ?, ?, 'Fix the thing', 'Some Author', "
                  "'2026-12-04T10:00:00Z', 'acme/widgets', 'main')",
                  (INSTANCE, DIGEST, INBOX, delivery, os.urandom(20).hex()))
    c.execute("COMMIT")


def receiver(c: sqlite3.Connection, commits: int) -> None:
    delivery = str(uuid.uuid4())
    c.execute("BEGIN")
    c.execute("INSERT OR IGNORE INTO deliveries (delivery_id, repository, branch) "
              "VALUES (?, 'acme/widgets', 'main')", (delivery,))
    for _ in range(commits):
        c.execute("INSERT INTO commits (delivery_id, sha, message, author, timestamp) "
                  "VALUES (?, ?, 'Fix the thing', 'Some Author', '2026-12-04T10:00:00Z')",
                  (delivery, os.urandom(20).hex()))
    c.execute("COMMIT")


def frames(kind: str, args: argparse.Namespace, work: Path) -> float:
    path = work / f"{kind}.db"
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode = WAL")
    c.execute("PRAGMA wal_autocheckpoint = 0")
    if kind == "receiver":
        c.executescript(
            "CREATE TABLE deliveries (delivery_id TEXT PRIMARY KEY, repository TEXT NOT NULL,"
            " branch TEXT NOT NULL);"
            "CREATE TABLE commits (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " delivery_id TEXT NOT NULL, sha TEXT NOT NULL, message TEXT, author TEXT,"
            " timestamp TEXT);")

        def one() -> None:
            receiver(c, args.commits)
    else:
        c.execute("PRAGMA foreign_keys = ON")
        for migration in migrations():
            c.executescript(migration)
        c.execute("INSERT INTO instances (id, key_hash) VALUES (?, x'00')", (INSTANCE,))
        c.execute("INSERT INTO digests (id, instance_id, description) VALUES (?, ?, 'd')",
                  (DIGEST, INSTANCE))
        c.execute("INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret) "
                  "VALUES (?, ?, ?, 'github', 'n', 's')", (INBOX, INSTANCE, DIGEST))
        keyed = kind == "service"

        def one() -> None:
            service(c, args.commits, keyed)
    for _ in range(args.warm):
        one()
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for _ in range(args.deliveries):
        one()
    wal = os.path.getsize(f"{path}-wal")
    c.close()
    return (wal - WAL_HEADER) / FRAME / args.deliveries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--warm", type=int, default=3000)
    parser.add_argument("--commits", type=int, default=3)
    args = parser.parse_args()
    plural = "" if args.commits == 1 else "s"
    print(f"SQLite {sqlite3.sqlite_version}, {args.commits} commit{plural} per delivery, "
          f"{args.deliveries} deliveries counted after {args.warm}:")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, said in (("service", "the service"),
                           ("service-unkeyed", "the service without its replay key's row"),
                           ("receiver", "the hand-written receiver")):
            print(f"  {said}: {frames(kind, args, Path(tmp)):.2f} WAL frames per delivery")


if __name__ == "__main__":
    main()
