#!/usr/bin/env bash
# The side-by-side benchmark: faultline against bare axum, tower-http's CatchPanicLayer and
# naive error handling, in one run. Writes BENCHMARKS.md (between its markers) and an SVG chart.
#
#   load-scripts/bench/bench.sh          # the full run: 10 s per repetition, about 25 minutes
#   load-scripts/bench/bench.sh --quick  # every mode and row with tiny durations and counts (CI)
#   load-scripts/bench/bench.sh --help   # --duration, --reps, --cheap-reps, --n1, --n2, …
#
# It exits non-zero only on a real failure (a server that does not start, a reconciliation
# mismatch, a tool that fails), never on a missed target.
#
# Needs cargo, python3, wrk and valgrind. It installs nothing: when a tool is missing it says
# so and how to install it. The harness itself is bench.py and the modules beside it; the wrk
# scripts mixed.lua and distinct_paths.lua drive the mixed and memory rows.
set -euo pipefail

cd "$(dirname "$0")/../.."

# How the failure lab is built and where cargo puts it: the one place to change when it moves.
# bench.py finds it through FAILURE_LAB_BIN.
LAB_BUILD=(cargo build --release -p failure-lab)
export FAILURE_LAB_BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/failure-lab

source load-scripts/proc.sh
require bench.sh wrk valgrind
"${LAB_BUILD[@]}"
exec python3 load-scripts/bench/bench.py "$@"
