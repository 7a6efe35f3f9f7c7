#!/usr/bin/env bash
# Hostile traffic against the webhook ingestion service, with short limits: thousands of
# stalled heads and hundreds of stalled bodies while signed pushes and /health probes go on;
# every stalled connection closed in time, the pushes served meanwhile, the gauge back to its
# baseline, every total reconciled, a clean SIGTERM (hostile.py says how). Prints the figures.
#
#   load-scripts/ingest/hostile.sh                     # debug build (CI runs this)
#   CI_PROFILE=release load-scripts/ingest/hostile.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/ingest/hostile.py "$@"
