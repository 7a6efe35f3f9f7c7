#!/usr/bin/env bash
# The Alertmanager configuration, checked: amtool accepts it; every severity the rules give
# reaches the receiver this file means for it; every alert the inhibitions name exists in the
# rules; then a real Alertmanager on 127.0.0.1 is sent a set of alerts and asked which it
# mutes: a fast burn mutes the slow and steady burns of its own job and route, and nothing of
# another route or job.
#
# usage: deploy/alertmanager/check.sh
# needs: amtool and prometheus-alertmanager (Debian package 'prometheus-alertmanager'), curl, python3.
# It installs nothing.
set -euo pipefail
cd "$(dirname "$0")"

# Debian names the server prometheus-alertmanager.
for tool in amtool prometheus-alertmanager curl python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "check: $tool not found; install with: apt-get install prometheus-alertmanager curl python3" >&2
        exit 1
    }
done

config=alertmanager.yml
# How long Alertmanager may take to start, and its inhibitor to learn of the alerts posted.
START_TIMEOUT_S=30
SETTLE_TIMEOUT_S=10
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

work=$(mktemp -d)
pid=
cleanup() {
    if [[ -n $pid ]]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# free_port and wait_for, as the load scripts start their servers.
source ../../load-scripts/proc.sh
port=$(free_port)
# No cluster: this instance gossips with nobody.
prometheus-alertmanager --config.file="$config" --storage.path="$work" \
    --web.listen-address="127.0.0.1:$port" --cluster.listen-address= \
    --log.level=warn >"$work/alertmanager.log" 2>&1 &
pid=$!
url=http://127.0.0.1:$port
if ! wait_for "$pid" "$START_TIMEOUT_S" curl -fs -o /dev/null "$url/-/ready"; then
    echo "check: alertmanager did not start" >&2
    cat "$work/alertmanager.log" >&2
    exit 1
fi

python3 - "$url" "$SETTLE_TIMEOUT_S" <<'PY'
import json
import sys
import time
import urllib.request

url = sys.argv[1]
# (alertname, severity, job, route) -> whether Alertmanager must mute it.
cases = {
    ("FaultlineFastBurn", "page", "ingest", "/hook"): False,
    ("FaultlineSlowBurn", "page", "ingest", "/hook"): True,
    ("FaultlineSteadyBurn", "ticket", "ingest", "/hook"): True,
    # Another route of the same job: its slow burn is its own page; it mutes its steady burn.
    ("FaultlineSlowBurn", "page", "ingest", "/other"): False,
    ("FaultlineSteadyBurn", "ticket", "ingest", "/other"): True,
    # The same route in another job: not the fast burn's business.
    ("FaultlineSteadyBurn", "ticket", "api", "/hook"): False,
    # Other alerts are never muted by a burn.
    ("FaultlineDeliveriesRefused", "ticket", "ingest", "/hook"): False,
}
alerts = [
    {"labels": {"alertname": a, "severity": s, "job": j, "route": r}}
    for (a, s, j, r) in cases
]
request = urllib.request.Request(
    url + "/api/v2/alerts", data=json.dumps(alerts).encode(), method="POST",
    headers={"content-type": "application/json"})
urllib.request.urlopen(request, timeout=10).read()



def muted_now():
    with urllib.request.urlopen(url + "/api/v2/alerts?inhibited=true", timeout=10) as response:
        got = json.load(response)
    return {
        (a["labels"]["alertname"], a["labels"]["severity"], a["labels"]["job"], a["labels"]["route"]):
            bool(a["status"]["inhibitedBy"])
        for a in got
    }


# The inhibitor learns of a source alert a moment after it is posted: wait, within a bound,
# for every alert that must be muted to be, then judge every case on that answer.
deadline = time.monotonic() + float(sys.argv[2])
while True:
    seen = muted_now()
    if all(seen.get(key) for key, muted in cases.items() if muted) or time.monotonic() > deadline:
        break
    time.sleep(0.1)
wrong = [(key, muted, seen.get(key)) for key, muted in cases.items() if seen.get(key) != muted]
for key, want, have in wrong:
    print(f"check: {key}: muted should be {want}, Alertmanager says {have}", file=sys.stderr)
if wrong:
    sys.exit(1)
muted = sum(cases.values())
print(f"check: alertmanager mutes {muted} of {len(cases)} alerts, as the inhibitions mean")
PY
echo "check: alertmanager.yml valid, $(wc -w <<<"$alerts") alerts routed by severity, inhibitions proven live"
