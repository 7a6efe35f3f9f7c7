"""Deliveries acknowledged per second by the reference service (every 2xx fsynced first, with
group commit) and by a hand-written axum + rusqlite receiver (one transaction per delivery) at
synchronous=NORMAL and FULL, side by side in one run: wrk on the same machine, signed GitHub
pushes of 1 to 5 commits from a pre-signed list with fresh delivery ids, a fresh server and
database per run, the targets alternating within each repetition. After each run every
delivery acknowledged is looked up in the store; one missing fails the run. A missed target is
reported, never a failure.

With --postgres the run is the service on PostgreSQL instead (one durable server for the run,
a fresh database per target run), beside the service on SQLite, with the WAL flushes and the
commits PostgreSQL counted per acknowledged delivery; --write then rewrites the PostgreSQL
section.

With --trace every run also records each delivery's latency (wrk's script) and what the
service's store did (its `store_trace` events), and the report draws both per 100 ms for the
repetition with the median p99 (`ingest_trace.py`); --only names the targets to run.

usage: ingest.py --service BIN --plain BIN [--today BIN] [--quick] [--duration S] [--reps|--runs N]
                 [--levels 1,16,64] [--postgres] [--trace] [--only T,T] [--write FILE]"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from receivers import Receiver
from ingest_trace import client as traced_latencies, picture, server as traced_steps
from ingest_report import (BEGIN, END, PG_BEGIN, PG_END, TRACE_BEGIN, TRACE_END, commit,
                           render, render_postgres, render_traces, write_section)
from harness.postgres import PgServer, SETTINGS as PG_SETTINGS
from harness.procs import Failure as BenchFailure, exit_on_sigterm
from harness.signing import hex_signature

HERE = Path(__file__).resolve().parent
# Bodies in the pre-signed list per second of a run: every request sends a push of its own,
# since the service stores the same signed bytes under another delivery id once (a replay),
# and this is above the fastest receiver's rate on the 2-core machines these figures come
# from (the hand-written one at 64 connections, about 43,000/s). The list is signed before
# the run, so the client spends no CPU on an HMAC during it.
SIGNED_PER_SECOND = 60_000
# wrk's threads: one per core of the 2-core machines these figures come from.
WRK_THREADS = 2
# Longer than any answer can take; wrk counts a request past it as a timeout error.
WRK_TIMEOUT = "10s"


def push(n: int) -> bytes:
    """The n-th push of the list: GitHub's shape, 1 to 5 commits."""
    commits = [{
        "id": hashlib.sha1(f"{n}.{i}".encode()).hexdigest(),
        "message": f"change {i} of push {n}: tighten the parser",
        "timestamp": "2026-11-29T10:00:00Z",
        "author": {"name": "Ada Lovelace", "email": "ada@example.com"},
    } for i in range(1 + n % 5)]
    return json.dumps({
        "ref": "refs/heads/main",
        "repository": {"full_name": "bench/widgets"},
        "commits": commits,
    }, separators=(",", ":")).encode()


def signed_list(path: Path, url_path: str, secret: str, count: int) -> None:
    with open(path, "w") as out:
        for n in range(count):
            body = push(n)
            tag = hex_signature(secret, body)
            out.write(f"{url_path}\tsha256={tag}\t{body.decode()}\n")


def targets(service: str, plain: str, today: str | None) -> list[dict]:
    """The receivers of a run, in the order they alternate; `today` is an earlier build of the
    service, for a row of what it did before."""
    earlier = [{"name": "today", "kind": "service", "bin": today, "args": [],
                "title": "an earlier build of the service (`--today BIN`)"}] if today else []
    return earlier + [
        {"name": "service", "kind": "service", "bin": service, "args": [],
         "title": "this service (fsync before every 2xx, group commit)"},
        {"name": "plain-normal", "kind": "plain", "bin": plain,
         "args": ["--synchronous", "normal"],
         "title": "hand-written, `synchronous=NORMAL` (no fsync per delivery)"},
        {"name": "plain-full", "kind": "plain", "bin": plain, "args": ["--synchronous", "full"],
         "title": "hand-written, `synchronous=FULL` (an fsync per delivery)"},
        {"name": "service-normal", "kind": "service", "bin": service,
         "args": ["--sqlite-sync", "normal"],
         "title": "this service at `--sqlite-sync normal` (group commit, no fsync)"},
    ]


def postgres_targets(service: str, today: str | None) -> list[dict]:
    """The service on PostgreSQL (and an earlier build of it, `today`, for a row of what it did
    before), and the service on SQLite beside them for a reference on the same disk."""
    earlier = [{"name": "today-pg", "kind": "service", "bin": today, "args": [],
                "store": "postgres",
                "title": "the service before group commit on PostgreSQL (a transaction per "
                         "delivery)"}] if today else []
    return earlier + [
        {"name": "service-pg", "kind": "service", "bin": service, "args": [],
         "store": "postgres",
         "title": "this service on PostgreSQL (group commit: a transaction per batch)"},
        {"name": "service", "kind": "service", "bin": service, "args": [],
         "title": "this service on SQLite (fsync before every 2xx, group commit)"},
    ]


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run_one(target: dict, connections: int, duration: float, work: Path, run_id: str,
            pg: PgServer | None, traced: bool = False) -> dict:
    """One wrk run on a fresh server; every acknowledged delivery checked in the store. When
    `traced`, the run's picture (`ingest_trace.picture`) is in its result's `trace`."""
    work.mkdir()
    server = Receiver(target, work, pg, traced)
    latency_file = work / "latency.txt"
    trace_env = {"INGEST_TRACE": str(latency_file)} if traced else {}
    try:
        signed_list(work / "signed.txt", server.path, server.secret,
                    int(duration * SIGNED_PER_SECOND))
        acked_file = work / "acked.txt"
        cpu0 = server.cpu_seconds()
        threads = min(WRK_THREADS, connections)
        wrk = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{connections}",
             f"-d{duration}s", "--timeout", WRK_TIMEOUT, "-s", str(HERE / "ingest.lua"),
             f"http://127.0.0.1:{server.port}", "--", str(work / "signed.txt"), run_id,
             str(threads)],
            capture_output=True, text=True,
            env={**os.environ, "INGEST_ACKED": str(acked_file), **trace_env})
        cpu = server.cpu_seconds() - cpu0
        if wrk.returncode != 0:
            raise BenchFailure(f"wrk failed ({wrk.returncode}): {wrk.stderr[-500:]} {wrk.stdout[-500:]}")
    finally:
        server.stop()
    wal = server.wal() if target.get("store") == "postgres" else None
    lines = acked_file.read_text().split("\n")
    summary = dict(kv.split("=") for kv in lines[-2].split()[1:])
    acked = lines[:-2]
    if len(acked) != int(summary["acked"]) or len(set(acked)) != len(acked):
        raise BenchFailure(f"{target['name']}: the acknowledged list is not what wrk counted")
    if int(summary["replayed"]):
        raise BenchFailure(f"{target['name']} at {connections}: the pre-signed list ran out, "
                           f"{summary['replayed']} pushes sent twice; raise SIGNED_PER_SECOND")
    missing = set(acked) - server.stored()
    if missing:
        raise BenchFailure(f"{target['name']} at {connections}: {len(missing)} of {len(acked)} "
                           f"acknowledged deliveries are not in the store, e.g. {min(missing)}")
    seconds = int(summary["duration_us"]) / 1e6
    trace = {}
    if traced:
        title = f"{target['title']}, {connections} connections, run {run_id}"
        latencies = traced_latencies(latency_file)
        trace["trace"] = picture(title, latencies, traced_steps(server.log()))
        took = sorted(t for _, t in latencies)
        trace["traced_p99_ms"] = took[int(0.99 * len(took))] / 1000 if took else 0
    per_delivery = {f"{k}_per": v / max(1, len(acked)) for k, v in (wal or {}).items()}
    return {**per_delivery, **trace,
        "target": target["name"], "connections": connections, "acked": len(acked),
        "rate": len(acked) / seconds, "p50_ms": int(summary["p50_us"]) / 1000,
        "p99_ms": int(summary["p99_us"]) / 1000, "non2xx": int(summary["non2xx"]),
        "errors": int(summary["errors"]),
        "cpu_us": cpu * 1e6 / max(1, len(acked)), "seconds": seconds,
    }


def settings(args: argparse.Namespace) -> str:
    """The options of the run that shape its figures, as the table states them."""
    said = ["--quick"] if args.quick else [f"--duration {args.duration}", f"--reps {args.reps}"]
    said.append(f"--levels {args.levels}")
    if args.today:
        said.append("--today BIN")
    if args.postgres:
        said.append("--postgres")
    if args.only:
        said.append(f"--only {args.only}")
    if args.trace:
        said.append("--trace")
    return " ".join(said)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--service")
    parser.add_argument("--plain")
    parser.add_argument("--render-only", metavar="RESULTS",
                        help="rewrite the table from a results file without measuring")
    parser.add_argument("--today", help="an earlier build of the service, run beside the others")
    parser.add_argument("--quick", action="store_true", help="1 s per run, 1 repetition")
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--reps", "--runs", dest="reps", type=int, default=3,
                        help="repetitions of every run (each cell: median, min–max)")
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--postgres", action="store_true",
                        help="the service on PostgreSQL beside the service on SQLite")
    parser.add_argument("--trace", action="store_true",
                        help="record latency per delivery and the store's steps; draw them")
    parser.add_argument("--only", help="the targets to run, by name (service,plain-normal)")
    parser.add_argument("--write", help="the markdown file whose ingest section is rewritten")
    parser.add_argument("--results", default="target/bench/ingest.json")
    args = parser.parse_args()
    # A CI timeout's SIGTERM runs the finally clauses: every server and PostgreSQL stop.
    exit_on_sigterm("ingest.py")
    if args.render_only:
        report(json.loads(Path(args.render_only).read_text()), args.write)
        return 0
    if not (args.service and args.plain):
        parser.error("--service and --plain name the two receivers")
    if args.quick:
        args.duration, args.reps = 1, 1
    levels = [int(n) for n in args.levels.split(",")]
    plan = postgres_targets(args.service, args.today) if args.postgres else targets(
        args.service, args.plain, args.today)
    if args.only:
        plan = [t for t in plan if t["name"] in args.only.split(",")]
    loads = [load_average()]
    started, t0 = time.time(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="faultline-ingest-") as tmp:
        pg = PgServer(Path(tmp)) if args.postgres else None
        try:
            runs = measure(args, plan, levels, Path(tmp), pg, loads)
        finally:
            if pg:
                pg.stop()
    results = {"started": started, "took_s": time.monotonic() - t0, "loads": loads,
               "duration": args.duration, "reps": args.reps, "levels": levels,
               "targets": plan, "runs": runs, "command": settings(args), "commit": commit(),
               "postgres": PG_SETTINGS if args.postgres else None}
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(json.dumps(results, indent=1))
    report(results, args.write)
    return 0


def report(results: dict, write: str | None) -> None:
    """Prints the table, and rewrites its section of `write` when given."""
    on_postgres = bool(results.get("postgres"))
    traced = any("trace" in r for r in results["runs"])
    table = (render_postgres(results) if on_postgres
             else render_traces(results) if traced else render(results))
    print(table)
    if write:
        section = ((PG_BEGIN, PG_END) if on_postgres else (TRACE_BEGIN, TRACE_END) if traced
                   else (BEGIN, END))
        write_section(Path(write), table, *section)


def measure(args: argparse.Namespace, plan: list[dict], levels: list[int], tmp: Path,
            pg: PgServer | None, loads: list[float]) -> list[dict]:
    """Every run of the plan: repetitions, then levels, then the targets alternating."""
    runs = []
    steps = args.reps * len(levels) * len(plan)
    step = 0
    for rep in range(args.reps):
        for connections in levels:
            for target in plan:
                step += 1
                work = tmp / f"{step}-{target['name']}-{connections}"
                r = run_one(target, connections, args.duration, work, f"r{step}", pg,
                            args.trace)
                r["rep"] = rep
                runs.append(r)
                loads.append(load_average())
                r["load"] = loads[-1]
                print(f"[{step}/{steps}] {target['name']} c={connections}: "
                      f"{r['rate']:,.0f} acknowledged/s, p99 {r['p99_ms']:.1f} ms, "
                      f"{r['cpu_us']:.0f} µs CPU/delivery, {r['acked']} acknowledged, all "
                      f"stored; non-2xx {r['non2xx']}, errors {r['errors']}{wal_said(r)}"
                      f"{traced_said(r)}",
                      flush=True)
    return runs


def traced_said(r: dict) -> str:
    if "traced_p99_ms" not in r:
        return ""
    return f"; p99 of the traced latencies {r['traced_p99_ms']:.1f} ms"


def wal_said(r: dict) -> str:
    if "wal_sync_per" not in r:
        return ""
    return (f"; per delivery {r['wal_sync_per']:.3f} WAL flushes, {r['wal_write_per']:.3f} "
            f"WAL writes, {r['xact_commit_per']:.2f} commits, {r['pg_cpu_us_per']:.0f} µs "
            "PostgreSQL CPU")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchFailure as failure:
        print(f"ingest: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
