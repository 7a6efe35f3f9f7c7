#!/usr/bin/env bash
# The alert rules of deploy/prometheus/ in a real Prometheus, end to end.
#
# Starts three failure-lab instances and a Prometheus on 127.0.0.1 that scrapes them and
# evaluates deploy/prometheus/rules/faultline.yml itself (not a copy), both every second. Then
# alerts.py sends a burst of 5xx answers to one route and checks through Prometheus's alerts
# API that FaultlineFastBurn is pending or firing for that route and no other: not for a route
# whose handler answers as many 4xx (the client's mistakes), nor for one with only 404s, nor
# for a route failing completely under the traffic guard, nor for the healthy one; that
# FaultlinePanics is active for the panics; and that the annotations name the route and the
# failure code. What counts as a failure alerts.py models on its own, from the answers. `for: 2m` keeps the fast burn pending for the first two minutes,
# which is as far as this check waits.
#
# usage: load-scripts/fleet/alerts.sh [--release]
# needs: cargo, curl, python3, prometheus and promtool (Debian package 'prometheus'). It
# installs nothing: it says what is missing and how to install it.
set -euo pipefail
FLEET_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$FLEET_DIR/../.."
source "$FLEET_DIR/lab.sh"

INSTANCES=3
RULES=$PWD/deploy/prometheus/rules/faultline.yml

lab_check_tools alerts
promtool check rules "$RULES" >/dev/null
lab_build "$@"

lab_begin alerts

lab_start "$INSTANCES"
PROM_RULES=("$RULES")
prom_start
echo "alerts: instances on ports ${LAB_PORTS[*]}; Prometheus on $PROM_URL evaluates $RULES"
python3 "$FLEET_DIR/alerts.py" "$PROM_URL" "$RULES" "${LAB_PORTS[@]/#/127.0.0.1:}"
