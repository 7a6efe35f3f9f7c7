#!/usr/bin/env bash
# Every acknowledged delivery is on disk before its answer leaves, read from the service's
# own system calls: the service runs under strace while parallel connections send signed
# pushes, and durable.py matches each answer against the fsync that must come between its
# request and it. Four runs: the store (201); with the database unreachable, the unverified
# spool (202 queued to an inbox nobody knows) and the main spool (202 queued to an inbox an
# node restarted during the outage knows from its file); and the store at
# --sqlite-sync normal, which the check must catch. The spool has no weakened setting.
#
#   load-scripts/ingest/durable.sh     # debug build: reuses what `cargo test` compiled
#   CI_PROFILE=release load-scripts/ingest/durable.sh
set -euo pipefail
LOAD_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$LOAD_DIR/../.."
source "$LOAD_DIR/service.sh"
require durable strace
build_service
work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-durable.XXXXXX")
# durable.py stops the servers it starts; what is left to remove is the directory.
trap 'rm -rf "$work"' EXIT
for mode in store spool known weakened; do
    python3 "$LOAD_DIR/durable.py" "$mode" "$SERVICE_BIN" "$work/$mode"
done
echo "durable: ok"
