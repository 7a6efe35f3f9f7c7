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
set -euo pipefail

cd "$(dirname "$0")/../.."

install_missing() {
    local missing=()
    command -v wrk >/dev/null || missing+=(wrk)
    command -v valgrind >/dev/null || missing+=(valgrind)
    if ((${#missing[@]})); then
        echo "installing ${missing[*]} with apt-get"
        local sudo=""
        [[ $(id -u) -eq 0 ]] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
}

install_missing
cargo build --release --example failure_lab
exec python3 load-scripts/bench/bench.py "$@"
