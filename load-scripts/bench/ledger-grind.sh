#!/usr/bin/env bash
# Instructions per request of every row of the in-process ledger bench (`cargo bench --bench
# ledger`), counted by callgrind: the deterministic side of that bench's nanosecond figures.
#
#   load-scripts/bench/ledger-grind.sh          # 1,000 and 11,000 requests per row, about 3 minutes
#   load-scripts/bench/ledger-grind.sh --quick  # 100 and 1,100 (CI)
#
# Needs cargo, python3 and valgrind; installs nothing. Prints a markdown table.
set -euo pipefail

cd "$(dirname "$0")/../.."

source load-scripts/proc.sh
require ledger-grind.sh valgrind
# RUST_BACKTRACE is cleared on purpose: no row panics, and the figures must not depend on it.
unset RUST_BACKTRACE RUST_LIB_BACKTRACE
exec python3 load-scripts/bench/ledger_grind.py "$@"
