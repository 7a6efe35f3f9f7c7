"""The report: the targets and whether they were met, the markdown tables, and BENCHMARKS.md
rewritten between its markers."""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from lab import CONNECTIONS, MIXED_CONNECTIONS, THREADS
from measure import MIB, MIXED_QUIET_S, Case, Results
from settings import Settings

# Matched to the letter in BENCHMARKS.md files already written, so they stay as they are, old
# path of bench.sh included.
BEGIN_MARK = "<!-- bench:begin (written by load-scripts/bench.sh; edits inside are lost) -->"
END_MARK = "<!-- bench:end -->"

# The pairs of the paired-deltas table, each as (case, the case it is compared against).
PAIRS = [("faultline /ok", "bare /ok"), ("catch-panic /ok", "bare /ok"),
         ("naive /ok", "bare /ok"), ("faultline /handled", "bare /ok"),
         ("faultline /handled", "bare /handled"), ("faultline /panic", "bare /ok"),
         ("faultline /panic bt", "bare /ok"), ("faultline /panic", "catch-panic /panic"),
         ("naive /handled", "faultline /handled"),
         ("faultline /huge", "faultline /small")]


def median(values):
    return statistics.median(values) if values else float("nan")


def fmt_us(us: float) -> str:
    if math.isnan(us):
        return "–"
    if us >= 100:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None or math.isnan(ratio):
        return "–"
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.2f}"


def fmt_k(instructions: float | None) -> str:
    if instructions is None:
        return "–"
    if instructions >= 1e6:
        return f"{instructions / 1e6:.2f}M"
    return f"{instructions / 1e3:.1f}k"


@dataclass
class Target:
    name: str
    measured: str
    met: bool | None  # None: not measured

    def mark(self) -> str:
        return {True: "met", False: "**missed**", None: "not measured"}[self.met]


def paired(a: Case, b: Case, fn) -> list[float]:
    return [fn(x["cpu_us"], y["cpu_us"]) for x, y in zip(a.results, b.results)]


def ratio_target(name: str, value: float | None, limit: float, unit: str = "×") -> Target:
    if value is None or math.isnan(value):
        return Target(name, "–", None)
    return Target(name, f"{value:.2f}{unit}", value <= limit)


def evaluate(results: Results) -> list[Target]:
    cases = {c.key: c for c in results.cases}
    ins = {g.key: g.per_request for g in results.grind}
    base_ins = ins.get("bare /ok")
    t = []

    def ins_ratio(key):
        return ins[key] / base_ins if base_ins and ins.get(key) else None

    # CPU ratios are medians of paired ratios: the two runs of a pair ran back to back, so
    # they share the machine's state far more than the medians of all repetitions do.
    def paired_ratio(a, b):
        return median(paired(cases[a], cases[b], lambda x, y: x / y))

    t.append(ratio_target("/ok faultline ≤ 1.03 × bare /ok, instructions", ins_ratio("faultline /ok"), 1.03))
    deltas = paired(cases["faultline /ok"], cases["bare /ok"], lambda x, y: x - y)
    d = median(deltas)
    t.append(Target("/ok faultline − bare paired CPU delta ≤ +0.5 µs",
                    f"{d:+.2f} µs (pairs {', '.join(f'{x:+.2f}' for x in deltas)})", d <= 0.5))
    t.append(ratio_target("/handled faultline ≤ 1.25 × bare /ok, instructions", ins_ratio("faultline /handled"), 1.25))
    t.append(ratio_target("/handled faultline ≤ 1.15 × bare /ok, CPU (paired)",
                          paired_ratio("faultline /handled", "bare /ok"), 1.15))
    naive_x = paired_ratio("naive /handled", "faultline /handled")
    t.append(Target("/handled naive ≥ 300 × faultline, CPU (paired)", f"{naive_x:,.0f}×", naive_x >= 300))
    t.append(ratio_target("/panic faultline ≤ 5.6 × bare /ok, instructions", ins_ratio("faultline /panic"), 5.6))
    t.append(ratio_target("/panic faultline RUST_BACKTRACE=1 ≤ 5.6 × bare /ok, instructions", ins_ratio("faultline /panic bt"), 5.6))
    t.append(ratio_target("/panic faultline ≤ 2 × bare /ok, CPU (paired)",
                          paired_ratio("faultline /panic", "bare /ok"), 2.0))
    t.append(ratio_target("/panic faultline RUST_BACKTRACE=1 ≤ 2 × bare /ok, CPU (paired)",
                          paired_ratio("faultline /panic bt", "bare /ok"), 2.0))
    err = max(r["stderr_per_request"] for k in ("faultline /panic", "faultline /panic bt") for r in cases[k].results)
    t.append(Target("/panic faultline: 0 bytes on stderr, with and without RUST_BACKTRACE=1", f"{err:.1f} B/panic", err == 0))
    t.append(ratio_target("/huge ≤ 1.2 × /small, CPU (paired)",
                          paired_ratio("faultline /huge", "faultline /small"), 1.2))
    if ins.get("faultline /huge") and ins.get("faultline /small"):
        t.append(ratio_target("/huge ≤ 1.2 × /small, instructions", ins["faultline /huge"] / ins["faultline /small"], 1.2))
    return t + load_targets(results)


def load_targets(results: Results) -> list[Target]:
    """The targets of the memory row and the mixed load."""
    t = []
    memory, mixed = results.memory, results.mixed
    if memory:
        growth = (memory["rss_total"] - memory["rss_first"]) / MIB
        t.append(Target(f"RSS after {memory['failures_total']:,} failures ≤ RSS after {memory['failures_first']:,} + 5 MB",
                        f"{growth:+.2f} MiB", growth <= 5))
    ok = all(m["reconciled"] for m in mixed)
    t.append(Target("mixed load: ledger totals == requests wrk sent, every repetition",
                    "; ".join(f"{m['ledger_finished']:,} = {m['sent']:,}" if m["reconciled"]
                              else f"{m['ledger_finished']:,} ≠ {m['sent']:,}" for m in mixed), ok))
    return t


def report(settings: Settings, results: Results, targets: list[Target], svg_name: str) -> str:
    """The generated section of BENCHMARKS.md, markers included."""
    by_key = {c.key: c for c in results.cases}
    g_by_key = {g.key: g for g in results.grind}
    base_cpu = median([r["cpu_us"] for r in by_key["bare /ok"].results])
    base_ins = g_by_key["bare /ok"].per_request if "bare /ok" in g_by_key else None
    lines = [BEGIN_MARK, ""]
    lines += run_description(settings, results)
    lines.append(f"![server CPU µs per request by route and mode]({svg_name})")
    lines.append("")
    lines += cpu_table(results, base_cpu, base_ins)
    lines += paired_table(by_key)
    lines += grind_table(settings, results, base_ins)
    if results.mixed:
        lines += mixed_table(settings, results.mixed)
    if results.memory:
        lines += memory_table(results.memory)
    lines += targets_table(targets)
    lines.append(END_MARK)
    return "\n".join(lines)


def run_description(settings: Settings, results: Results) -> list[str]:
    """When, what and how it ran, and how noisy the machine was."""
    s = settings
    lines = [f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(results.started))}, commit "
             f"`{s.commit}`{' with uncommitted changes in src/' if s.dirty else ''}, "
             f"{os.cpu_count()} cores, `bench.sh {s.argv or '(defaults)'}`: "
             f"wrk -t{THREADS} -c{CONNECTIONS} for {s.duration:g} s per repetition after a "
             f"{s.warmup:g} s warm-up, a fresh server process per repetition, cases "
             f"alternating; {s.cheap_reps} repetitions for the cheap paths, {s.reps} for "
             f"the expensive ones (naive, catch-panic with RUST_BACKTRACE=1). Took "
             f"{results.elapsed / 60:.1f} min.", ""]
    spreads = []
    for c in results.cases:
        v = [r["cpu_us"] for r in c.results]
        if len(v) > 1:
            spreads.append((max(v) - min(v)) / median(v))
    loads = results.loads
    lines.append(f"Noise: the 1-minute load average ran from {min(loads):.1f} to {max(loads):.1f} "
                 f"on {os.cpu_count()} cores during the run (other work on the machine). The spread "
                 f"(max − min) / median of CPU µs per request over repetitions was "
                 f"{100 * median(spreads):.0f}% at the median row and {100 * max(spreads):.0f}% at "
                 f"the worst; the callgrind instruction counts do not depend on it.")
    lines.append("")
    lines.append("RUST_BACKTRACE is removed from every server's environment except the rows marked "
                 "`RUST_BACKTRACE=1`, where it is set to 1. Server stdout (the log lines) goes to "
                 "/dev/null.")
    lines.append("")
    return lines


def cpu_table(results: Results, base_cpu: float, base_ins: float | None) -> list[str]:
    g_by_key = {g.key: g for g in results.grind}
    lines = ["| route | mode | reps | req/s | CPU µs/req (median) | min–max | × bare /ok CPU "
             "| instructions/req | × bare /ok instr | stderr B/req |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in results.cases:
        cpu = [r["cpu_us"] for r in c.results]
        m = median(cpu)
        g = g_by_key.get(c.key)
        ins = g.per_request if g else None
        route = c.path + (" RUST_BACKTRACE=1" if c.backtrace else "")
        stderr = median([r["stderr_per_request"] for r in c.results])
        lines.append(
            f"| {route} | {c.mode} | {len(cpu)} | {median([r['rps'] for r in c.results]):,.0f} "
            f"| {fmt_us(m)} | {fmt_us(min(cpu))}–{fmt_us(max(cpu))} | {fmt_ratio(m / base_cpu)} "
            f"| {fmt_k(ins)} | {fmt_ratio(ins / base_ins) if ins and base_ins else '–'} "
            f"| {stderr:,.0f} |")
    lines.append("")
    return lines


def paired_table(by_key: dict[str, Case]) -> list[str]:
    lines = ["Paired deltas (repetition i of one case against repetition i of the other; "
             "each pair ran back to back, in fresh processes):",
             "",
             "| pair | CPU µs/req deltas | median delta | median ratio |",
             "|---|---|---:|---:|"]
    for a, b in PAIRS:
        ds = paired(by_key[a], by_key[b], lambda x, y: x - y)
        rs = paired(by_key[a], by_key[b], lambda x, y: x / y)
        lines.append(f"| {a} − {b} | {', '.join(f'{d:+.2f}' for d in ds)} | {median(ds):+.2f} "
                     f"| {fmt_ratio(median(rs))} |")
    lines.append("")
    return lines


def grind_table(settings: Settings, results: Results, base_ins: float | None) -> list[str]:
    s = settings
    lines = [f"Instructions per request under callgrind (release build, sequential requests on "
             f"one keep-alive connection, (total(N₂) − total(N₁)) / (N₂ − N₁); N₁ = "
             f"{s.n1}, N₂ = {s.n2}; {s.n1_expensive}/{s.n2_expensive} for catch-panic with "
             f"RUST_BACKTRACE=1 and {s.n1_very}/{s.n2_very} for naive, whose requests cost "
             f"too much to run thousands under callgrind):",
             "",
             "| case | N₁ | total(N₁) | N₂ | total(N₂) | instructions/req | × bare /ok |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for g in results.grind:
        if g.per_request is None:
            continue
        n1, t1, n2, t2 = g.totals
        lines.append(f"| {g.title()} | {n1} | {t1:,} | {n2} | {t2:,} | {g.per_request:,.0f} "
                     f"| {fmt_ratio(g.per_request / base_ins)} |")
    lines.append("")
    return lines


def mixed_table(settings: Settings, mixed: list[dict]) -> list[str]:
    lines = [f"Mixed webhook-like load (70% /ok, 25% /handled, 5% /panic) under faultline, "
             f"wrk -t{THREADS} -c{MIXED_CONNECTIONS}, {settings.mixed_duration:g} s of which the last "
             f"{MIXED_QUIET_S} s sends nothing (so that no request is cut off when wrk "
             f"ends; req/s is over the sending window), "
             f"reconciled against the ledger's totals read through /metrics before and "
             f"after (the scrapes subtracted):",
             "",
             "| rep | req/s | CPU µs/req | sent (ok/handled/panic) | ledger finished "
             "(ok/handled/panicked/cancelled/other) | in flight after | reconciled |",
             "|---:|---:|---:|---|---|---:|---|"]
    for i, m in enumerate(mixed, 1):
        lines.append(
            f"| {i} | {m['rps']:,.0f} | {fmt_us(m['cpu_us'])} | {m['sent']:,} "
            f"({m['sent_ok']:,}/{m['sent_handled']:,}/{m['sent_panic']:,}) "
            f"| {m['ledger_finished']:,} ({m['ledger_ok']:,}/{m['ledger_handled']:,}/"
            f"{m['ledger_panicked']:,}/{m['ledger_cancelled']:,}/{m['ledger_other']:,}) "
            f"| {m['in_flight_after']} | {'yes' if m['reconciled'] else '**no**'} |")
    lines.append("")
    return lines


def memory_table(memory: dict) -> list[str]:
    return [f"Memory: one faultline server, failing requests (404, `GET /miss/<n>`) over "
            f"{memory['distinct']:,} distinct raw paths:",
            "",
            "| after | failures (ledger) | RSS |",
            "|---|---:|---:|",
            f"| start | 0 | {memory['rss_start'] / MIB:.1f} MiB |",
            f"| first batch | {memory['failures_first']:,} | {memory['rss_first'] / MIB:.1f} MiB |",
            f"| all | {memory['failures_total']:,} | {memory['rss_total'] / MIB:.1f} MiB |",
            "",
            f"Failure series in the exposition at the end: {memory['series']}.",
            ""]


def targets_table(targets: list[Target]) -> list[str]:
    lines = ["Targets (a miss is reported, not a failure of the run; CPU ratios are the medians "
             "of the paired ratios above, instruction ratios come from callgrind):",
             "",
             "| target | measured | |",
             "|---|---|---|"]
    for t in targets:
        lines.append(f"| {t.name} | {t.measured} | {t.mark()} |")
    lines.append("")
    return lines


def splice(markdown: Path, generated: str) -> None:
    """Replaces what lies between the markers, keeping the hand-written rest of the file."""
    if markdown.exists():
        text = markdown.read_text()
        if BEGIN_MARK in text and END_MARK in text:
            head, rest = text.split(BEGIN_MARK, 1)
            tail = rest.split(END_MARK, 1)[1]
            markdown.write_text(head + generated + tail)
            return
        markdown.write_text(text.rstrip() + "\n\n" + generated + "\n")
        return
    markdown.write_text("# Benchmarks\n\n" + generated + "\n")
