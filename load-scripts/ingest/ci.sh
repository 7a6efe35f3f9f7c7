#!/usr/bin/env bash
# The webhook ingestion service under parallel load, every total reconciled: the harness's
# own checks, then the service on a fresh database and a free port, setup.sh, a classic and
# a mixed run of the scenarios, reconcile.sh, no secret in its log (ci.py says how).
#
#   load-scripts/ingest/ci.sh     # debug build: reuses what `cargo test` compiled
#   CI_PROFILE=release load-scripts/ingest/ci.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/ingest/ci.py "$@"
