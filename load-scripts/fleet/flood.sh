#!/usr/bin/env bash
# PostgreSQL stopped, made-up large pushes to unknown inboxes, a SIGKILL restart, then the
# real senders acknowledged and stored, nothing else (flood.py says how).
#
# usage: load-scripts/fleet/flood.sh [--release]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/flood.py "$@"
