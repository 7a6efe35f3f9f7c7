"""What one run of the harness does: Settings, built once from the command line and never
changed afterwards."""

from __future__ import annotations

import argparse
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DESCRIPTION = "The side-by-side benchmark of the failure lab's modes; run through bench.sh."

# The settings a results file records, in this order. --render-only reads them back, so that
# the report describes the run that measured, not the one that renders.
RECORDED = ("quick", "duration", "reps", "cheap_reps", "warmup", "n1", "n2", "no_callgrind",
            "argv", "commit", "dirty", "n1_expensive", "n2_expensive", "n1_very", "n2_very",
            "mixed_duration")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=DESCRIPTION)
    p.add_argument("--quick", action="store_true",
                   help="tiny durations and counts (CI): every mode and row, about a minute")
    p.add_argument("--duration", type=float, help="seconds of wrk per repetition (10)")
    p.add_argument("--reps", type=int, help="repetitions of the expensive rows (3)")
    p.add_argument("--cheap-reps", type=int, help="repetitions of the cheap rows (5)")
    p.add_argument("--warmup", type=float, help="seconds of warm-up per server (1)")
    p.add_argument("--n1", type=int, help="callgrind N1 (200)")
    p.add_argument("--n2", type=int, help="callgrind N2 (2200)")
    p.add_argument("--no-callgrind", action="store_true", help="skip the callgrind rows")
    p.add_argument("--render-only", type=Path, metavar="RESULTS_JSON",
                   help="measure nothing: rewrite the report and chart from a saved results file")
    p.add_argument("--out", type=Path, help="the markdown file to write (BENCHMARKS.md; "
                   "target/bench/BENCHMARKS.md with --quick)")
    return p


@dataclass(frozen=True)
class Settings:
    # Recorded in the results file (see RECORDED).
    quick: bool
    duration: float
    reps: int
    cheap_reps: int
    warmup: float
    n1: int
    n2: int
    no_callgrind: bool
    argv: str
    commit: str
    dirty: bool
    n1_expensive: int
    n2_expensive: int
    n1_very: int
    n2_very: int
    mixed_duration: float
    # Only for this run.
    render_only: Path | None
    mem_first: int
    mem_total: int
    mem_distinct: int
    # The failure lab binary; bench.sh builds it and says where.
    server: Path | None
    out_dir: Path
    grind_dir: Path
    results: Path
    markdown: Path
    svg: Path

    @classmethod
    def from_args(cls, args: argparse.Namespace, argv: list[str],
                  recorded: dict | None = None) -> Settings:
        """The settings of this command line; with `recorded` (a results file's), the recorded
        ones replace it, as --render-only wants."""
        values = derived(args, argv)
        if recorded:
            values.update((k, v) for k, v in recorded.items() if k in RECORDED)
            # Rows that were never measured have nothing to show, and --no-callgrind leaves
            # the callgrind rows out of the report.
            values["no_callgrind"] = args.no_callgrind or bool(recorded.get("no_callgrind"))
        return cls(**values)

    def recorded(self) -> dict:
        return {name: getattr(self, name) for name in RECORDED}


def derived(args: argparse.Namespace, argv: list[str]) -> dict:
    """Every setting, from the command line and its defaults (small ones with --quick)."""
    quick = args.quick
    duration = args.duration or (1 if quick else 10)
    reps = args.reps or (1 if quick else 3)
    mem_first, mem_total, mem_distinct = (2_000, 20_000, 2_000) if quick else (10_000, 1_000_000, 100_000)
    out_dir = ROOT / "target" / "bench"
    markdown = args.out or (out_dir / "BENCHMARKS.md" if quick else ROOT / "BENCHMARKS.md")
    commit, dirty = work_tree()
    return dict(
        quick=quick, duration=duration, reps=reps,
        cheap_reps=args.cheap_reps or (2 if quick else max(5, reps)),
        warmup=args.warmup if args.warmup is not None else (0 if quick else 1),
        n1=args.n1 or (20 if quick else 200), n2=args.n2 or (120 if quick else 2200),
        no_callgrind=args.no_callgrind, argv=" ".join(argv), commit=commit, dirty=dirty,
        n1_expensive=2 if quick else 20, n2_expensive=12 if quick else 220,
        n1_very=2 if quick else 4, n2_very=4 if quick else 24,
        mixed_duration=2 if quick else max(duration, 2),
        render_only=args.render_only,
        mem_first=mem_first, mem_total=mem_total, mem_distinct=mem_distinct,
        server=Path(os.environ["FAILURE_LAB_BIN"]) if os.environ.get("FAILURE_LAB_BIN") else None,
        out_dir=out_dir, grind_dir=out_dir / "callgrind",
        results=out_dir / ("results-quick.json" if quick else "results.json"),
        markdown=markdown, svg=chart_path(markdown),
    )


def chart_path(markdown: Path) -> Path:
    """The chart of the committed results lives in docs/bench/; any other goes beside its
    markdown file."""
    if markdown.resolve() == (ROOT / "BENCHMARKS.md").resolve():
        return ROOT / "docs" / "bench" / "cpu-per-request.svg"
    return markdown.with_name(markdown.stem + "-cpu.svg")


def work_tree() -> tuple[str, bool]:
    """What was measured: the commit of the work tree when the run starts, and whether src/
    had uncommitted changes."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                                capture_output=True, text=True).stdout.strip())
    return commit, dirty
