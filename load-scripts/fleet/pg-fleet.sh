#!/usr/bin/env bash
# Three webhook-ingest nodes on one real PostgreSQL, every delivery and ledger reconciled,
# then PostgreSQL stopped under them (pg_fleet.py says how).
#
# usage: load-scripts/fleet/pg-fleet.sh [--release]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/pg_fleet.py "$@"
