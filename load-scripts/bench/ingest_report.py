"""The ingestion benchmark's tables, from its raw results: medians over repetitions, the
paired ratio against the hand-written receiver at synchronous=NORMAL, and the targets; for a
--postgres run, the WAL flushes and commits PostgreSQL counted per acknowledged delivery."""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path

BEGIN = "<!-- ingest:begin (written by load-scripts/bench/ingest.sh; edits inside are lost) -->"
END = "<!-- ingest:end -->"
PG_BEGIN = ("<!-- ingest-postgres:begin (written by load-scripts/bench/ingest.sh --postgres; "
            "edits inside are lost) -->")
PG_END = "<!-- ingest-postgres:end -->"
# The targets: at or above the hand-written NORMAL receiver at these levels, and this
# p99 at the highest level.
RATIO_LEVELS = (16, 64)
# And at this level no slower than the service before group commit (`--today`).
BEFORE_LEVEL = 1
P99_TARGET_MS = 10.0
P99_LEVEL = 64


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cell(runs: list[dict]) -> str:
    rates = [r["rate"] for r in runs]
    p99 = median([r["p99_ms"] for r in runs])
    spread = f" ({min(rates):,.0f}–{max(rates):,.0f})" if len(rates) > 1 else ""
    return f"{median(rates):,.0f}/s{spread}, p99 {p99:.1f} ms, {median([r['cpu_us'] for r in runs]):.0f} µs CPU"


def ratios(results: dict, level: int, target: str = "service",
           baseline: str = "plain-normal") -> list[float]:
    """target / baseline per repetition: the two ran next to each other."""
    by = {(r["target"], r["rep"]): r for r in results["runs"] if r["connections"] == level}
    return [by[(target, rep)]["rate"] / by[(baseline, rep)]["rate"]
            for rep in range(results["reps"])
            if (target, rep) in by and (baseline, rep) in by]


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def ratio_cell(rs: list[float]) -> str:
    """A median ratio and its repetitions, or a dash when none ran."""
    return f"{median(rs):.2f}× ({', '.join(f'{r:.2f}' for r in rs)})" if rs else "–"


def took(results: dict) -> str:
    """How long the run took and how loaded the machine was meanwhile."""
    loads = results["loads"]
    return (f"Took {results['took_s'] / 60:.1f} min; the 1-minute load average ran from "
            f"{min(loads):.1f} to {max(loads):.1f}.")


def table_head(levels: list[int]) -> list[str]:
    return ["| receiver | " + " | ".join(f"{n} connection{'s' if n > 1 else ''}" for n in levels)
            + " |", "|---|" + "---|" * len(levels)]


def render(results: dict) -> str:
    levels = results["levels"]
    runs = results["runs"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(results["started"]))
    lines = [
        f"Run of {when}, commit `{results.get('commit') or commit()}`, 2 cores, `ingest.sh {results['command']}`: "
        f"wrk -t2 for {results['duration']:g} s per run, {results['reps']} repetitions, a fresh "
        f"server and SQLite file per run, the targets alternating. {took(results)} "
        f"Each cell: median acknowledged deliveries/s "
        f"(min–max), median p99, median server CPU per acknowledged delivery. Every "
        f"acknowledged delivery of every run was found in its store afterwards.",
        "",
        *table_head(levels),
    ]
    for target in results["targets"]:
        cells = [cell([r for r in runs if r["target"] == target["name"] and r["connections"] == n])
                 for n in levels]
        lines.append(f"| {target['title']} | " + " | ".join(cells) + " |")
    lines.append("| this service ÷ hand-written NORMAL, per repetition | "
                 + " | ".join(ratio_cell(ratios(results, n)) for n in levels) + " |")
    if any(t["name"] == "today" for t in results["targets"]):
        lines.append("| this service ÷ the service before, per repetition | " + " | ".join(
            ratio_cell(ratios(results, n, "service", "today")) for n in levels) + " |")
    lines += ["", *verdicts(results)]
    return "\n".join(lines)


def verdicts(results: dict) -> list[str]:
    out = []
    for n in RATIO_LEVELS:
        rs = ratios(results, n)
        if rs:
            met = "met" if median(rs) >= 1.0 else "missed"
            out.append(f"- at {n} connections: {median(rs):.2f}× the hand-written NORMAL "
                       f"receiver (target ≥ 1.00×): {met}")
    before = ratios(results, BEFORE_LEVEL, "service", "today")
    if before:
        met = "met" if median(before) >= 1.0 else "missed"
        out.append(f"- at {BEFORE_LEVEL} connection: {median(before):.2f}× the service before "
                   f"group commit, which did not fsync (target ≥ 1.00×): {met}")
    p99 = [r["p99_ms"] for r in results["runs"]
           if r["target"] == "service" and r["connections"] == P99_LEVEL]
    if p99:
        met = "met" if median(p99) <= P99_TARGET_MS else "missed"
        out.append(f"- p99 at {P99_LEVEL} connections: {median(p99):.1f} ms "
                   f"(target ≤ {P99_TARGET_MS:g} ms): {met}")
    return out


def wal_cell(runs: list[dict]) -> str:
    """Median WAL flushes and commits per delivery, and so deliveries per flush."""
    syncs = median([r["wal_sync_per"] for r in runs])
    commits = median([r["xact_commit_per"] for r in runs])
    cpu = median([r["pg_cpu_us_per"] for r in runs])
    return (f"{syncs:.2f} WAL flushes ({1 / syncs:.1f} deliveries per flush), {commits:.2f} "
            f"commits, {cpu:.0f} µs PostgreSQL CPU")


def render_postgres(results: dict) -> str:
    levels, runs = results["levels"], results["runs"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(results["started"]))
    config = ", ".join(f"`{k}={v}`" for k, v in results["postgres"].items())
    lines = [
        f"Run of {when}, commit `{results['commit']}`, 2 cores, `ingest.sh {results['command']}`: "
        f"wrk -t2 for {results['duration']:g} s per run, {results['reps']} repetitions, one "
        f"PostgreSQL server for the run ({config}; on the same ext4 disk as the SQLite files), "
        f"a fresh database or SQLite file per run, the targets alternating. {took(results)} "
        f"Cells as in the table above (the service's "
        f"own CPU); on PostgreSQL, per acknowledged delivery, the median WAL flushes "
        f"(`pg_stat_wal.wal_sync`), commits of the run's database "
        f"(`pg_stat_database.xact_commit`, the read-only look-up of the inbox included) and "
        f"CPU of the PostgreSQL server's processes. Every acknowledged delivery of every run "
        f"was found in its store afterwards.",
        "",
        *table_head(levels),
    ]
    for target in results["targets"]:
        at = [[r for r in runs if r["target"] == target["name"] and r["connections"] == n]
              for n in levels]
        lines.append(f"| {target['title']} | " + " | ".join(cell(rs) for rs in at) + " |")
        if target.get("store") == "postgres":
            lines.append("| … PostgreSQL per delivery | " + " | ".join(wal_cell(rs) for rs in at) + " |")
    if any(t["name"] == "today-pg" for t in results["targets"]):
        lines.append("| group commit ÷ a transaction per delivery, per repetition | " + " | ".join(
            ratio_cell(ratios(results, n, "service-pg", "today-pg")) for n in levels) + " |")
    return "\n".join(lines)


def write_section(path: Path, table: str, begin: str = BEGIN, end: str = END) -> None:
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path} has no {begin} … {end} section")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n\n{table}\n\n{end}{tail}")
