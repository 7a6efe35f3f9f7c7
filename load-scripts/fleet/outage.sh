#!/usr/bin/env bash
# PostgreSQL stopped mid push storm, a node killed meanwhile: nothing acknowledged is lost
# (outage.py says how).
#
# usage: load-scripts/fleet/outage.sh [--release]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/outage.py "$@"
