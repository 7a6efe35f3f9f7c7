#!/usr/bin/env bash
# Every acknowledged delivery is on disk before its answer leaves, read from the service's
# own system calls: the service runs under strace while parallel connections send signed
# pushes, and durable.py matches each answer against the fsync that must come between its
# request and it. Three runs: the store (201), the spool with its database unreachable
# (202 queued), and the store at --sqlite-sync normal, which the check must catch.
#
#   load-scripts/webhook/durable.sh     # debug build: reuses what `cargo test` compiled
#   CI_PROFILE=release load-scripts/webhook/durable.sh
set -euo pipefail
LOAD_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$LOAD_DIR/../.."
source "$LOAD_DIR/service.sh"
for tool in strace python3; do
    command -v "$tool" >/dev/null || { echo "durable: $tool is required (apt-get install $tool)" >&2; exit 1; }
done
build_service
work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-durable.XXXXXX")
# durable.py stops the servers it starts; what is left to remove is the directory.
trap 'rm -rf "$work"' EXIT
for mode in store spool weakened; do
    python3 "$LOAD_DIR/durable.py" "$mode" "$SERVICE_BIN" "$work/$mode"
done
echo "durable: ok"
