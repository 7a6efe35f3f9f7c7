#!/usr/bin/env bash
# A fleet of three failure-lab nodes scraped by a real Prometheus server on 127.0.0.1,
# every total reconciled through Prometheus's API (fleet.py says how).
#
# usage: load-scripts/fleet/fleet.sh [--release]
# needs: cargo, python3, prometheus and promtool (Debian package 'prometheus'). It installs
# nothing: it says what is missing and how to install it.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/fleet.py "$@"
