"""The plan of one run and its progress lines: every (mode, route) case runs in a fresh server
process per repetition, and the cases alternate (A B C … A B C …) so that machine drift falls
on all of them alike; then the memory row and the callgrind rows."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from lab import MIXED_CONNECTIONS, Lab, load_average
from measure import (MIB, Case, GrindCase, Results, measure_cpu, measure_grind, measure_memory,
                     measure_mixed)
from report import fmt_us
from settings import Settings


def plan(cases: list[Case], grind: list[GrindCase], mixed_reps: int) -> list[tuple]:
    """(kind, case, repetition) steps in the order they run."""
    steps = []
    for rep in range(max(c.reps for c in cases)):
        for c in cases:
            if rep < c.reps:
                steps.append(("cpu", c, rep))
        if rep < mixed_reps:
            steps.append(("mixed", None, rep))
    steps.append(("memory", None, 0))
    steps += [("grind", g, 0) for g in grind]
    return steps


def measure_all(settings: Settings, cases: list[Case], grind: list[GrindCase]) -> Results:
    """Runs the plan, printing a line per step."""
    steps = plan(cases, grind, settings.reps)
    started = time.time()
    t0 = time.monotonic()
    loads = [load_average()]
    mixed, memory = [], None
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        lab = Lab(settings.server, Path(tmp))
        for i, (kind, case, rep) in enumerate(steps, 1):
            prefix = f"[{i}/{len(steps)}]"
            if kind == "cpu":
                cpu_step(settings, lab, prefix, case, rep)
            elif kind == "mixed":
                mixed.append(mixed_step(settings, lab, prefix, rep))
            elif kind == "memory":
                memory = memory_step(settings, lab, prefix)
            else:
                grind_step(settings, lab, prefix, case)
            loads.append(load_average())
    return Results(cases, grind, mixed, memory, started, time.monotonic() - t0, loads)


def cpu_step(settings: Settings, lab: Lab, prefix: str, case: Case, rep: int) -> None:
    print(f"{prefix} {case.title()} rep {rep + 1}/{case.reps} …", end=" ", flush=True)
    r = measure_cpu(lab, case, settings.duration, settings.warmup)
    case.results.append(r)
    extra = f", {r['stderr_per_request']:,.0f} B stderr/req" if case.path == "/panic" else ""
    print(f"{r['rps']:,.0f} req/s, {fmt_us(r['cpu_us'])} µs CPU/req{extra}", flush=True)


def mixed_step(settings: Settings, lab: Lab, prefix: str, rep: int) -> dict:
    print(f"{prefix} faultline mixed 70/25/5 -c{MIXED_CONNECTIONS} rep {rep + 1}/{settings.reps} …",
          end=" ", flush=True)
    m = measure_mixed(lab, settings.mixed_duration)
    print(f"{m['rps']:,.0f} req/s, {fmt_us(m['cpu_us'])} µs CPU/req, sent {m['sent']:,}, "
          f"ledger {m['ledger_finished']:,}: {'reconciled' if m['reconciled'] else 'MISMATCH'}",
          flush=True)
    return m


def memory_step(settings: Settings, lab: Lab, prefix: str) -> dict:
    s = settings
    print(f"{prefix} faultline memory: {s.mem_first:,} then {s.mem_total:,} failures over "
          f"{s.mem_distinct:,} paths …", end=" ", flush=True)
    memory = measure_memory(lab, s.mem_first, s.mem_total, s.mem_distinct)
    print(f"RSS {memory['rss_first'] / MIB:.1f} MiB after {memory['failures_first']:,}, "
          f"{memory['rss_total'] / MIB:.1f} MiB after {memory['failures_total']:,}", flush=True)
    return memory


def grind_step(settings: Settings, lab: Lab, prefix: str, case: GrindCase) -> None:
    s = settings
    n1, n2 = ((s.n1_very, s.n2_very) if case.very_expensive
              else (s.n1_expensive, s.n2_expensive) if case.expensive
              else (s.n1, s.n2))
    print(f"{prefix} callgrind {case.title()} N={n1},{n2} …", end=" ", flush=True)
    measure_grind(lab, case, n1, n2, s.grind_dir)
    print(f"{case.per_request:,.0f} instructions/req", flush=True)
