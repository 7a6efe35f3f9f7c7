#!/usr/bin/env bash
# A fleet of three failure-lab instances scraped by a real Prometheus server on 127.0.0.1.
#
# Sends a known mixed load spread across the instances, then asks Prometheus's HTTP API for
# sum(faultline_requests_started_total), sum(faultline_requests_total) and the per-outcome
# sums, and exits non-zero unless they equal what was sent and reconcile (started minus the
# outcomes is what is in flight: each instance's scrape). This is how a service outgrows one machine: Prometheus aggregates the
# instances' ledgers; faultline keeps no cluster state of its own.
#
# usage: load-scripts/fleet/fleet.sh [--release]
# needs: cargo, curl, python3 (to find free ports), prometheus and promtool (Debian package
# 'prometheus'). It installs nothing: it says what is missing and how to install it.
set -euo pipefail
FLEET_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$FLEET_DIR/../.."
source "$FLEET_DIR/lab.sh"

INSTANCES=3
# Give Prometheus this long to scrape what the load left behind before calling it a mismatch.
SETTLE_TIMEOUT_S=30

lab_check_tools fleet
lab_build "$@"

lab_begin fleet

lab_start "$INSTANCES"
ports=("${LAB_PORTS[@]}")
echo "fleet: instances on ports ${ports[*]}"
prom_start

# The load: instance i gets a different mix, so a wrong sum cannot pass by symmetry.
declare -A sent=([ok]=0 [handled]=0 [rejected]=0 [panicked]=0)
jobs_pids=()
for i in $(seq 0 $((INSTANCES - 1))); do
    port=${ports[$i]}
    n_ok=$((200 + 50 * i)) n_handled=$((60 + 7 * i)) n_missing=$((30 + 3 * i)) n_panic=$((10 + i))
    lab_send "$port" /ok "$n_ok" 200 & jobs_pids+=("$!")
    lab_send "$port" /handled "$n_handled" 422 & jobs_pids+=("$!")
    lab_send "$port" "/missing/$i" "$n_missing" 404 & jobs_pids+=("$!")
    lab_send "$port" /panic "$n_panic" 500 & jobs_pids+=("$!")
    sent[ok]=$((sent[ok] + n_ok))
    sent[handled]=$((sent[handled] + n_handled))
    sent[rejected]=$((sent[rejected] + n_missing))
    sent[panicked]=$((sent[panicked] + n_panic))
done
for pid in "${jobs_pids[@]}"; do
    wait "$pid"
done
total=$((sent[ok] + sent[handled] + sent[rejected] + sent[panicked]))
echo "fleet: sent $total requests (ok ${sent[ok]}, handled ${sent[handled]}, rejected ${sent[rejected]}, panicked ${sent[panicked]})"

# Every query of one check is evaluated at the same instant ($at), so that a scrape landing
# between two of them cannot make the sums disagree with the scrape count.
at=
query() { # PromQL -> the single value of the result vector at $at, or empty
    prom_query "$1" "$at"
}

# Every scrape of /metrics passes the layer too and is counted ok once it has finished, so a
# target's latest sample includes all its earlier scrapes: subtract (scrapes - 1) per target.
scrapes_before_latest='sum(count_over_time(up{job="faultline"}[1h])) - count(up{job="faultline"})'
# The reconciliation of docs/operations.md: started minus the outcomes is what is in flight,
# and once the load is over that is each target's scrape, in flight while it is answered.
targets_up='count(up{job="faultline"} == 1)'
unfinished_but_scrapes='(sum(faultline_requests_started_total) - sum(faultline_requests_total)) - count(up{job="faultline"} == 1)'
deadline=$((SECONDS + SETTLE_TIMEOUT_S))
while true; do
    sleep "$LAB_SCRAPE_INTERVAL_S"
    at=$(date +%s.%N)
    scraped=$(query "$scrapes_before_latest")
    got_total=$(query 'sum(faultline_requests_total)')
    got_started=$(query 'sum(faultline_requests_started_total)')
    up=$(query "$targets_up")
    unfinished=$(query "$unfinished_but_scrapes")
    in_flight=$(query 'sum(faultline_in_flight)')
    ok=true
    declare -A got=()
    for outcome in ok handled rejected panicked service_error aborted cancelled; do
        got[$outcome]=$(query "sum(faultline_requests_total{outcome=\"$outcome\"})")
    done
    [[ -n "$scraped" && -n "$got_total" && -n "$got_started" && -n "$up" && -n "$unfinished" && -n "$in_flight" ]] || ok=false
    if $ok; then
        scraped=${scraped%.*} got_total=${got_total%.*} got_started=${got_started%.*}
        up=${up%.*} unfinished=${unfinished%.*} in_flight=${in_flight%.*}
        [[ $((got_total - scraped)) -eq $total ]] || ok=false
        # Started: every request sent, every earlier scrape, and each target's latest.
        [[ $((got_started - scraped - up)) -eq $total ]] || ok=false
        [[ $up -eq $INSTANCES && $unfinished -eq 0 && $in_flight -eq $up ]] || ok=false
        [[ $((${got[ok]%.*} - scraped)) -eq ${sent[ok]} ]] || ok=false
        for outcome in handled rejected panicked; do
            [[ ${got[$outcome]%.*} -eq ${sent[$outcome]} ]] || ok=false
        done
        for outcome in service_error aborted cancelled; do
            [[ ${got[$outcome]%.*} -eq 0 ]] || ok=false
        done
    fi
    if $ok; then
        break
    fi
    if ((SECONDS > deadline)); then
        echo "fleet: MISMATCH after ${SETTLE_TIMEOUT_S}s: sum=$got_total started=$got_started scrapes=$scraped sent=$total" >&2
        echo "  targets up $up, started - outcomes - targets up = $unfinished, in flight $in_flight" >&2
        for outcome in "${!got[@]}"; do echo "  $outcome: prometheus ${got[$outcome]} sent ${sent[$outcome]:-0}" >&2; done
        exit 1
    fi
done

# The exposition itself must pass Prometheus's own linter.
curl -fsS "http://127.0.0.1:${ports[0]}/metrics" >"$LAB_WORK/exposition.txt"
if ! promtool check metrics <"$LAB_WORK/exposition.txt"; then
    echo "fleet: promtool check metrics failed on the exposition" >&2
    exit 1
fi
echo "fleet: promtool check metrics: clean"

at=$(date +%s.%N)
failures=$(query 'sum(faultline_reports_total)')
echo "fleet: prometheus agrees: sum(faultline_requests_total) = $got_total = $total sent + $scraped scrapes"
echo "fleet: per outcome: ok ${got[ok]%.*} (- $scraped scrapes), handled ${got[handled]}, rejected ${got[rejected]}, panicked ${got[panicked]}"
echo "fleet: sum(faultline_requests_started_total) = $got_started = $total sent + $scraped scrapes + $up in flight;" \
    "started - outcomes = $((got_started - got_total)) = sum(faultline_in_flight) = $in_flight, one scrape per target"
echo "fleet: failure reports (written + suppressed) across the fleet: $failures"
[[ ${failures%.*} -eq $((sent[handled] + sent[rejected] + sent[panicked])) ]] || {
    echo "fleet: MISMATCH: reports $failures != failures sent" >&2
    exit 1
}
echo "fleet: OK"
