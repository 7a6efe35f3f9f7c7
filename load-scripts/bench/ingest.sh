#!/usr/bin/env bash
# Deliveries acknowledged per second: the reference service (fsync before every 2xx, group
# commit) against a hand-written axum + rusqlite receiver, side by side in one run; every
# acknowledged delivery is then looked up in its store. See BENCHMARKS.md.
#
# usage: load-scripts/bench/ingest.sh [--quick] [ingest.py options]
#   (no option)  3 repetitions of 5 s at 1, 16 and 64 connections, about 4 minutes;
#                rewrites the ingest section of BENCHMARKS.md
#   --quick      1 s per run, once; leaves BENCHMARKS.md alone (CI: the run completes and
#                every acknowledged delivery is stored; no figure is judged)
#   --postgres   the service on PostgreSQL (one durable server for the run, started and
#                stopped here; Debian's postgresql package) beside the service on SQLite,
#                with PostgreSQL's WAL flushes per delivery; rewrites the PostgreSQL section
#                of BENCHMARKS.md instead (with --quick, nothing)
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh
need=(wrk)
for arg in "$@"; do
    [[ $arg == --postgres ]] && need+=(postgresql)
done
require ingest "${need[@]}"
cargo build --release --quiet -p webhook-ingest -p plain-receiver
target=${CARGO_TARGET_DIR:-$PWD/target}/release
write=(--write BENCHMARKS.md)
for arg in "$@"; do
    [[ $arg == --quick || $arg == --write ]] && write=()
done
exec python3 load-scripts/bench/ingest.py --service "$target/webhook-ingest" \
    --plain "$target/plain-receiver" "${write[@]}" "$@"
