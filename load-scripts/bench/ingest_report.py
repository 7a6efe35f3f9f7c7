"""The ingestion benchmark's table, from its raw results: medians over repetitions, the
paired ratio against the hand-written receiver at synchronous=NORMAL, and the targets."""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path

BEGIN = "<!-- ingest:begin (written by load-scripts/bench/ingest.sh; edits inside are lost) -->"
END = "<!-- ingest:end -->"
# The targets: at or above the hand-written NORMAL receiver at these levels, and this
# p99 at the highest level.
RATIO_LEVELS = (16, 64)
P99_TARGET_MS = 10.0
P99_LEVEL = 64


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cell(runs: list[dict]) -> str:
    rates = [r["rate"] for r in runs]
    p99 = median([r["p99_ms"] for r in runs])
    spread = f" ({min(rates):,.0f}–{max(rates):,.0f})" if len(rates) > 1 else ""
    return f"{median(rates):,.0f}/s{spread}, p99 {p99:.1f} ms, {median([r['cpu_us'] for r in runs]):.0f} µs CPU"


def ratios(results: dict, level: int) -> list[float]:
    """service / plain-normal per repetition: the two ran next to each other."""
    by = {(r["target"], r["rep"]): r for r in results["runs"] if r["connections"] == level}
    return [by[("service", rep)]["rate"] / by[("plain-normal", rep)]["rate"]
            for rep in range(results["reps"])
            if ("service", rep) in by and ("plain-normal", rep) in by]


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def render(results: dict) -> str:
    levels = results["levels"]
    runs = results["runs"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(results["started"]))
    loads = results["loads"]
    lines = [
        f"Run of {when}, commit `{results.get('commit') or commit()}`, 2 cores, `ingest.sh {results['command']}`: "
        f"wrk -t2 for {results['duration']:g} s per run, {results['reps']} repetitions, a fresh "
        f"server and SQLite file per run, the targets alternating. Took "
        f"{results['took_s'] / 60:.1f} min; the 1-minute load average ran from "
        f"{min(loads):.1f} to {max(loads):.1f}. Each cell: median acknowledged deliveries/s "
        f"(min–max), median p99, median server CPU per acknowledged delivery. Every "
        f"acknowledged delivery of every run was found in its store afterwards.",
        "",
        "| receiver | " + " | ".join(f"{n} connection{'s' if n > 1 else ''}" for n in levels) + " |",
        "|---|" + "---|" * len(levels),
    ]
    for target in results["targets"]:
        cells = [cell([r for r in runs if r["target"] == target["name"] and r["connections"] == n])
                 for n in levels]
        lines.append(f"| {target['title']} | " + " | ".join(cells) + " |")
    ratio_cells = []
    for n in levels:
        rs = ratios(results, n)
        ratio_cells.append(f"{median(rs):.2f}× ({', '.join(f'{r:.2f}' for r in rs)})" if rs else "–")
    lines.append("| this service ÷ hand-written NORMAL, per repetition | " + " | ".join(ratio_cells) + " |")
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
    p99 = [r["p99_ms"] for r in results["runs"]
           if r["target"] == "service" and r["connections"] == P99_LEVEL]
    if p99:
        met = "met" if median(p99) <= P99_TARGET_MS else "missed"
        out.append(f"- p99 at {P99_LEVEL} connections: {median(p99):.1f} ms "
                   f"(target ≤ {P99_TARGET_MS:g} ms): {met}")
    return out


def write_section(path: Path, table: str) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} … {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n\n{table}\n\n{END}{tail}")
