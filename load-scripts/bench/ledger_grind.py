"""Instructions per request of every row of the in-process ledger bench, under callgrind.

The bench's `--grind ROW N` mode sends N requests to one row from one thread, untimed. Each
row runs twice, with N1 and N2 requests, and (total(N2) - total(N1)) / (N2 - N1) is its
instructions per request: start-up, the thread it spawns and the ledger checks cancel out.
Callgrind counts are deterministic, so the ratios this prints decide what the noisy
nanosecond figures of `cargo bench --bench ledger` cannot. Prints a markdown table."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from measure import callgrind_total

# Requests per row of the two runs; --quick divides them by ten.
N1 = 1_000
N2 = 11_000
# The exit code of the bench past its last row.
NO_SUCH_ROW = 3


def bench_binary(features: list[str]) -> Path:
    """Builds the ledger bench and returns its executable."""
    command = ["cargo", "bench", "--bench", "ledger", "--no-run", "--message-format=json"]
    if features:
        command += ["--features", ",".join(features)]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable") \
                and message["target"]["name"] == "ledger":
            return Path(message["executable"])
    raise SystemExit("ledger_grind.py: cargo built no ledger bench executable")


def grind(binary: Path, row: int, requests: int, out: Path) -> tuple[str, int] | None:
    """The row's name and the callgrind total of `requests` requests; None past the last row."""
    out.unlink(missing_ok=True)
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
         str(binary), "--grind", str(row), str(requests)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode == NO_SUCH_ROW:
        return None
    if run.returncode != 0:
        raise SystemExit(f"ledger_grind.py: row {row} failed:\n{run.stderr[-2000:]}")
    return run.stdout.strip(), callgrind_total(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N1 and N2 divided by ten (CI)")
    parser.add_argument("--features", default="", help="features to build the bench with")
    args = parser.parse_args()
    n1, n2 = (N1 // 10, N2 // 10) if args.quick else (N1, N2)
    binary = bench_binary([f for f in args.features.split(",") if f])
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as work:
        row = 0
        while (first := grind(binary, row, n1, Path(work) / "n1.out")) is not None:
            name, total1 = first
            _, total2 = grind(binary, row, n2, Path(work) / "n2.out")
            rows.append((name, (total2 - total1) / (n2 - n1)))
            print(f"{name}: {rows[-1][1]:,.0f}", file=sys.stderr, flush=True)
            row += 1
    print(f"Instructions per request in process (callgrind, one thread; "
          f"(total({n2:,}) − total({n1:,})) / {n2 - n1:,}):\n")
    print("| row | instructions per request | × bare row of its family | × `CatchPanicLayer` row |")
    print("|---|---:|---:|---:|")
    # The rows come in families of three (bare, CatchPanicLayer, FaultLayer); rows past the
    # last whole family (the metrics facade's, with that feature) have no ratios.
    for i, (name, per) in enumerate(rows):
        family = rows[i - i % 3: i - i % 3 + 3]
        if len(family) == 3:
            print(f"| {name} | {per:,.0f} | {per / family[0][1]:.2f}× | {per / family[1][1]:.2f}× |")
        else:
            print(f"| {name} | {per:,.0f} | – | – |")


if __name__ == "__main__":
    main()
