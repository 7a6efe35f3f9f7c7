#!/usr/bin/env bash
# Deliveries stored per second by one node, on each store, at 1, 8 and 64 concurrent
# senders: the figure that says when one SQLite file is no longer enough. Then the spool's
# row: deliveries acknowledged (202 queued, flushed to disk) per second by the PostgreSQL
# node with its database stopped.
#
# Each level sends DELIVERIES fresh pushes (1 to 5 commits each, the five providers in turn)
# over keep-alive connections from python3 threads to a fresh store, and counts the 201s.
# The client is a Python process on the same 2-core machine, so the figures are what this
# machine sustains end to end, not the service's ceiling. Everything it starts is stopped by
# PID.
#
# usage: load-scripts/fleet/throughput.sh [--release] [DELIVERIES]   (default 300 per level)
# needs: cargo, python3, Debian's postgresql package.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SENDERS=(1 8 64)
fleet_begin '[--release] [DELIVERIES]' '[0-9]+' "$@"
work=$FLEET_WORK
deliveries=300
((${#FLEET_ARGS[@]} == 0)) || deliveries=${FLEET_ARGS[-1]}
pg_start "$work"
declare -A rate=()
for store in sqlite postgres; do
    db=$work/throughput.db
    [[ $store == postgres ]] && db=$PG_URL
    ingest_start "$store" "$db"
    url=$(ingest_url "$store")
    "${HOOKLOAD[@]}" setup "$url" "$work/$store.env"
    for senders in "${SENDERS[@]}"; do
        line=$("${HOOKLOAD[@]}" storm "$work/$store.env" "$work/$store.$senders.log" \
            "tp-$store-$senders" "$deliveries" "$senders" "$url")
        echo "throughput: $store: $line"
        stored=$(sed -n 's/.* \([0-9]*\) stored, .*/\1/p' <<<"$line")
        ((stored == deliveries)) || { echo "throughput: $store lost deliveries" >&2; exit 1; }
        rate[$store.$senders]=$(sed -n 's/.*: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$line")
    done
    [[ $store == postgres ]] || ingest_kill "$store" TERM
done
# The spool row: the same node with PostgreSQL stopped. Its inboxes were seen, so each
# delivery is verified, written to the spool and flushed before its 202 queued.
pg_stop
for senders in "${SENDERS[@]}"; do
    line=$("${HOOKLOAD[@]}" storm "$work/postgres.env" "$work/spool.$senders.log" \
        "tp-spool-$senders" "$deliveries" "$senders" "$url")
    echo "throughput: spool (postgres down): $line"
    acked=$(sed -n 's/.* \([0-9]*\) acknowledged in .*/\1/p' <<<"$line")
    ((acked == deliveries)) || { echo "throughput: the spool refused deliveries" >&2; exit 1; }
    rate[spool.$senders]=$(sed -n 's/.*: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$line")
done
ingest_kill postgres TERM
echo
echo "| store | 1 sender | 8 senders | 64 senders |"
echo "|---|---|---|---|"
for store in sqlite postgres spool; do
    echo "| $store | ${rate[$store.1]}/s | ${rate[$store.8]}/s | ${rate[$store.64]}/s |"
done
