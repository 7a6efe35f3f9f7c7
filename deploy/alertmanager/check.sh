#!/usr/bin/env bash
# The Alertmanager configuration, checked: amtool accepts it; every severity the rules give
# reaches the receiver this file means for it; every alert the inhibitions name exists in the
# rules; then a real Alertmanager on 127.0.0.1 is sent a set of alerts and asked which it
# mutes: a fast burn mutes the slow and steady burns of its own job and route, and nothing of
# another route or job.
#
# usage: deploy/alertmanager/check.sh
# needs: amtool and prometheus-alertmanager (Debian package 'prometheus-alertmanager'), python3.
# It installs nothing.
set -euo pipefail
cd "$(dirname "$0")"

# Debian names the server prometheus-alertmanager.
for tool in amtool prometheus-alertmanager python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "check: $tool not found; install with: apt-get install prometheus-alertmanager python3" >&2
        exit 1
    }
done

config=alertmanager.yml
rules=../prometheus/rules/faultline.yml
amtool check-config "$config" >/dev/null

# Each alert of the rules, with its severity, routed to the receiver named after it.
alerts=$(sed -n 's/^ *- alert: //p' "$rules")
severities=$(sed -n 's/^ *severity: "\(.*\)"$/\1/p' "$rules")
[[ $(wc -w <<<"$alerts") -eq $(wc -w <<<"$severities") ]] || {
    echo "check: $rules: not one severity per alert" >&2
    exit 1
}
paste <(tr ' ' '\n' <<<"$alerts") <(tr ' ' '\n' <<<"$severities") | while read -r alert severity; do
    amtool config routes test --config.file="$config" --verify.receivers="$severity" \
        alertname="$alert" severity="$severity" job=any route=/any >/dev/null 2>&1 || {
        echo "check: $alert (severity $severity) does not reach the receiver '$severity'" >&2
        exit 1
    }
done

# The inhibitions name alerts that exist: a rename in the rules must not silently void them.
for named in $(grep -o 'Faultline[A-Za-z]*' "$config" | sort -u); do
    grep -qx "$named" <<<"$alerts" || {
        echo "check: $config names $named, which $rules does not define" >&2
        exit 1
    }
done

# A real Alertmanager, started and stopped by its PID as the load scripts start their servers.
PYTHONPATH=../../load-scripts python3 inhibitions.py "$config"
echo "check: alertmanager.yml valid, $(wc -w <<<"$alerts") alerts routed by severity, inhibitions proven live"
