#!/usr/bin/env bash
# Deliveries stored per second by one node, on each store, at 1, 8 and 64 senders, and
# the spool's row (throughput.py says how).
#
# usage: load-scripts/fleet/throughput.sh [--release] [DELIVERIES]   (default 300 per level)
# needs: cargo, python3, Debian's postgresql package.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/throughput.py "$@"
