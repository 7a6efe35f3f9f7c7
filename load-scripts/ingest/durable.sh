#!/usr/bin/env bash
# Every acknowledged delivery is on disk before its answer leaves, read from the service's
# own system calls under strace: the store (201), the unverified and the main spool while
# the database is unreachable (202 queued), and the store at --sqlite-sync normal, which the
# check must catch (durable.py says how). Needs strace.
#
#   load-scripts/ingest/durable.sh          # every mode; debug build: reuses what `cargo test` compiled
#   load-scripts/ingest/durable.sh store    # one mode (store, spool, known, weakened)
#   CI_PROFILE=release load-scripts/ingest/durable.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/ingest/durable.py "$@"
