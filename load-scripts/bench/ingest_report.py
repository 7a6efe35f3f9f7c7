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
TRACE_BEGIN = ("<!-- ingest-trace:begin (written by load-scripts/bench/ingest.sh --trace; edits "
               "inside are lost) -->")
TRACE_END = "<!-- ingest-trace:end -->"
# The targets (issue 31, item 8): at or above the hand-written NORMAL receiver (no fsync) at
# these levels, in the median of the repetitions' paired ratios;
RATIO_LEVELS = (16, 64)
# at this level, at or above the hand-written FULL receiver (an fsync per delivery in place);
FULL_LEVEL = 1
# and at this level a p99 no worse than the NORMAL receiver's in the same repetition.
P99_LEVEL = 64
# Each ratio and the p99 comparison are also given against the service before (`--today`) at
# this level, when it ran.
BEFORE_LEVEL = 1


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cell(runs: list[dict]) -> str:
    rates, p99s = [r["rate"] for r in runs], [r["p99_ms"] for r in runs]
    spread = f" ({min(rates):,.0f}–{max(rates):,.0f})" if len(rates) > 1 else ""
    p99_spread = f" ({min(p99s):.1f}–{max(p99s):.1f})" if len(p99s) > 1 else ""
    return (f"{median(rates):,.0f}/s{spread}, p99 {median(p99s):.1f} ms{p99_spread}, "
            f"{median([r['cpu_us'] for r in runs]):.0f} µs CPU")


def ratios(results: dict, level: int, target: str = "service",
           baseline: str = "plain-normal", field: str = "rate") -> list[float]:
    """target / baseline per repetition (of `field`: the rate, or the p99): the two ran next
    to each other."""
    by = {(r["target"], r["rep"]): r for r in results["runs"] if r["connections"] == level}
    return [by[(target, rep)][field] / by[(baseline, rep)][field]
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
        f"(min–max), median p99 (min–max), median server CPU per acknowledged delivery. Every "
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
    lines.append("| this service ÷ hand-written FULL, per repetition | " + " | ".join(
        ratio_cell(ratios(results, n, "service", "plain-full")) for n in levels) + " |")
    lines.append("| this service's p99 ÷ hand-written NORMAL's p99, per repetition | "
                 + " | ".join(ratio_cell(ratios(results, n, field="p99_ms")) for n in levels)
                 + " |")
    if any(t["name"] == "today" for t in results["targets"]):
        lines.append("| this service ÷ the earlier build, per repetition | " + " | ".join(
            ratio_cell(ratios(results, n, "service", "today")) for n in levels) + " |")
        lines.append("| this service's p99 ÷ the earlier build's p99, per repetition | "
                     + " | ".join(ratio_cell(ratios(results, n, "service", "today", "p99_ms"))
                                  for n in levels) + " |")
    lines += ["", *verdicts(results)]
    return "\n".join(lines)


def verdicts(results: dict) -> list[str]:
    out = []
    full = ratios(results, FULL_LEVEL, "service", "plain-full")
    if full:
        out.append(f"- at {FULL_LEVEL} connection: {median(full):.2f}× the hand-written FULL "
                   f"receiver (target ≥ 1.00×): {met(median(full) >= 1.0)}")
    for n in RATIO_LEVELS:
        rs = ratios(results, n)
        if rs:
            out.append(f"- at {n} connections: {median(rs):.2f}× the hand-written NORMAL "
                       f"receiver (target ≥ 1.00×): {met(median(rs) >= 1.0)}")
    p99 = ratios(results, P99_LEVEL, field="p99_ms")
    if p99:
        out.append(f"- p99 at {P99_LEVEL} connections: {median(p99):.2f}× the hand-written "
                   f"NORMAL receiver's in the same repetition, median (target ≤ 1.00×): "
                   f"{met(median(p99) <= 1.0)}")
    before = ratios(results, BEFORE_LEVEL, "service", "today")
    if before:
        out.append(f"- at {BEFORE_LEVEL} connection: {median(before):.2f}× the earlier build "
                   f"(`--today`)")
    return out


def met(held: bool) -> str:
    return "met" if held else "missed"


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


def render_traces(results: dict) -> str:
    """The table of a traced run, and the picture of each target's run with the median p99
    at each level (`ingest_trace.py`)."""
    lines = [render(results), ""]
    for n in results["levels"]:
        for target in results["targets"]:
            runs = sorted((r for r in results["runs"]
                           if r["target"] == target["name"] and r["connections"] == n
                           and "trace" in r), key=lambda r: r["p99_ms"])
            if runs:
                middle = runs[(len(runs) - 1) // 2]
                traced = middle.get("traced_p99_ms", float("nan"))
                lines += [f"Its run with the median p99 ({middle['p99_ms']:.1f} ms by wrk, "
                          f"{traced:.1f} ms over the traced latencies; load average "
                          f"{middle.get('load', float('nan')):.1f} after it):", "",
                          "```text", middle["trace"], "```", ""]
    return "\n".join(lines).rstrip()


def write_section(path: Path, table: str, begin: str = BEGIN, end: str = END) -> None:
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path} has no {begin} … {end} section")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n\n{table}\n\n{end}{tail}")
