#!/usr/bin/env bash
# No real delivery lost behind a proxy that keeps its connections: nginx (upstream keepalive
# 16) in front of examples/webhook-intake's `Verified` GitHub route. Parallel clients
# interleave forged deliveries with large bodies, refused before their bodies are read, and
# real signed ones (keep_alive.py). Every real delivery must be answered 200 and every forged
# one 401 or 400, nginx's error log must show no upstream connection lost, and the ledger on
# /metrics must count each request exactly once. Stops both servers by their PIDs; exits
# non-zero on any failure.
#
#   load-scripts/verifiers/keep-alive.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh

require keep-alive.sh nginx

cargo build -q -p webhook-intake
exec python3 load-scripts/verifiers/keep_alive.py target/debug/webhook-intake
