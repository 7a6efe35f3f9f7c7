#!/usr/bin/env bash
# Every node down while GitHub and GitLab send pushes: catch-up asks for each once, each is
# stored once (catchup.py says how); then each planted bug must be caught, for each provider.
#
# usage: load-scripts/fleet/catchup.sh [--release] [sqlite|postgres ...] [github|gitlab] [plant=NAME]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/catchup.py "$@"
