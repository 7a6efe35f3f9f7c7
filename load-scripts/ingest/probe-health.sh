#!/usr/bin/env bash
# M requests to /health, one every PROBE_INTERVAL_SECS (default 0.05): all 200. With
# LATENCY_LOG set (see lib.sh), shows how fast the service answers while something else loads
# it.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=probe-health
EXPECTED="200:-"
PROBE_INTERVAL_SECS=${PROBE_INTERVAL_SECS:-0.05}

copy_begin "${1:-}"
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    request GET /health
    sleep "$PROBE_INTERVAL_SECS"
done
copy_end
