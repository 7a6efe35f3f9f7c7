#!/usr/bin/env bash
# Instructions per acknowledged delivery under callgrind: the reference service against the
# hand-written receiver, the deterministic side of ingest.sh's CPU figures (ingest_grind.py).
#
#   load-scripts/bench/ingest-grind.sh [--today BIN] [--top K] [--clients N] [--keep DIR]
#                                                                # 200 and 2,200 deliveries
#   load-scripts/bench/ingest-grind.sh --quick                   # 20 and 220 (CI)
#
# Needs cargo, python3 and valgrind; installs nothing. Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh
require ingest-grind.sh valgrind
# RUST_BACKTRACE is cleared on purpose: no delivery fails, and the figures must not depend on it.
unset RUST_BACKTRACE RUST_LIB_BACKTRACE
cargo build --release --quiet -p webhook-ingest -p plain-receiver
target=${CARGO_TARGET_DIR:-$PWD/target}/release
exec python3 load-scripts/bench/ingest_grind.py --service "$target/webhook-ingest" \
    --plain "$target/plain-receiver" "$@"
