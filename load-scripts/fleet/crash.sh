#!/usr/bin/env bash
# A node killed with SIGKILL mid push storm, on SQLite and on PostgreSQL, loses nothing it
# answered and stores nothing by halves (crash.py says how).
#
# usage: load-scripts/fleet/crash.sh [--release] [sqlite|postgres ...]
# needs: cargo, python3, Debian's postgresql package for the PostgreSQL run.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/crash.py "$@"
