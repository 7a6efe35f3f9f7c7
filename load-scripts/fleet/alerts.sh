#!/usr/bin/env bash
# The alert rules of deploy/prometheus/ in a real Prometheus, end to end (alerts.py says how):
# a burst of 5xx answers to one route pages for that route and no other.
#
# usage: load-scripts/fleet/alerts.sh [--release]
# needs: cargo, python3, prometheus and promtool (Debian package 'prometheus'). It installs
# nothing: it says what is missing and how to install it.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/alerts.py "$@"
