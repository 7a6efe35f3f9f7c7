"""The side-by-side benchmark of the failure lab's modes; run through bench.sh.

Every (mode, route) case runs in a fresh server process per repetition, cases alternate
(A B C … A B C …) so that machine drift falls on all of them alike, and the server's CPU time
comes from /proc/PID/stat before and after each wrk run. Instructions per request come from
callgrind: two runs of N1 and N2 sequential keep-alive requests, divided by N2 - N1 so that
start-up cancels out. The results are printed and written into BENCHMARKS.md between the
markers, with an SVG chart beside it.

The modules, each using only those before it: settings (the command line), lab (servers, wrk,
/metrics), measure (the cases and their measurements), report (targets, tables,
BENCHMARKS.md), chart (the SVG), run (the plan and its progress lines), and this entry.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from chart import write_svg
from lab import BenchFailure
from measure import Results, cpu_cases, grind_cases
from report import BEGIN_MARK, END_MARK, evaluate, median, report, splice
from run import measure_all
from settings import Settings, parser

from harness.procs import exit_on_sigterm  # noqa: E402 (lab puts the harness on the path)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    # A CI timeout's SIGTERM runs the finally clauses: every lab server stops.
    exit_on_sigterm("bench.py")
    saved = json.loads(args.render_only.read_text()) if args.render_only else None
    settings = Settings.from_args(args, argv, saved["args"] if saved else None)
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    settings.grind_dir.mkdir(exist_ok=True)
    if not settings.render_only:
        check_server(settings.server)
    cases = cpu_cases(settings.cheap_reps, settings.reps)
    grind = [] if settings.no_callgrind else grind_cases()
    if saved:
        return finish(settings, Results.from_saved(saved, cases, grind))
    results = measure_all(settings, cases, grind)
    settings.results.write_text(json.dumps(results.saved(settings.recorded()), indent=1))
    print(f"results saved in {settings.results}")
    return finish(settings, results)


def check_server(server: Path | None) -> None:
    if server is None:
        raise BenchFailure("FAILURE_LAB_BIN is not set: run the harness through "
                           "load-scripts/bench/bench.sh, which builds the failure lab")
    if not server.exists():
        raise BenchFailure(f"{server} is missing: load-scripts/bench/bench.sh builds it")


def finish(settings: Settings, results: Results) -> int:
    """Writes the chart and the report, prints the report; fails if the mixed load did not
    reconcile."""
    targets = evaluate(results)
    svg, markdown = settings.svg, settings.markdown
    svg.parent.mkdir(parents=True, exist_ok=True)
    write_svg(svg, results.cases, median([m["cpu_us"] for m in results.mixed]) if results.mixed else None)
    text = report(settings, results, targets, os.path.relpath(svg, markdown.parent))
    splice(markdown, text)
    print()
    print(text.replace(BEGIN_MARK, "").replace(END_MARK, "").strip())
    print()
    print(f"wrote {markdown} and {svg}; total elapsed {results.elapsed:.0f} s")
    if not all(m["reconciled"] for m in results.mixed):
        print("FAILED: the ledger's totals do not match what wrk sent", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchFailure as failure:
        print(f"\nFAILED: {failure}", file=sys.stderr)
        sys.exit(1)
