#!/usr/bin/env bash
# Crash safety, shown: a node killed with SIGKILL in the middle of a parallel push storm
# loses nothing it answered, and stores nothing by halves.
#
# For each store (SQLite, then a throwaway PostgreSQL): starts a node, sends a storm of
# pushes from parallel senders, kills the node with SIGKILL once part of the storm is
# answered, restarts it on the same store and port while the storm goes on, and then checks
# that every delivery answered 2xx is stored once with all its commits, that every stored
# delivery is whole, and that resending every delivery answers "duplicate" for exactly the
# stored ones (and stores the rest, whole). Everything it starts is stopped by PID.
#
# usage: load-scripts/fleet/crash.sh [--release] [sqlite|postgres ...]
# needs: cargo, python3, Debian's postgresql package for the PostgreSQL run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The storm: enough deliveries that the kill lands with many in flight, few enough for CI.
STORM_DELIVERIES=1500
STORM_SENDERS=16
# The kill comes once this many answers are in: well inside the storm.
KILL_AFTER=400
# How long the storm may take to reach KILL_AFTER answers before the run is called stuck.
KILL_WAIT_SECS=120

fleet_begin '[--release] [sqlite|postgres ...]' 'sqlite|postgres' "$@"
work=$FLEET_WORK
stores=(sqlite postgres)
((${#FLEET_ARGS[@]} == 0)) || stores=("${FLEET_ARGS[@]}")

# The store's delivery rows, as hookload.py reads them.
rows() { # store db out
    if [[ $1 == sqlite ]]; then
        "${HOOKLOAD[@]}" rows "$2" >"$3"
    else
        pg_sql "COPY ($("${HOOKLOAD[@]}" rows-sql)) TO STDOUT" >"$3"
    fi
}

crash_run() {
    local store=$1 db name=crash-$1
    if [[ $store == sqlite ]]; then
        db=$work/crash.db
    else
        pg_start "$work"
        db=$PG_URL
    fi
    ingest_start "$name" "$db"
    local port=${INGEST_PORT[$name]} url
    url=$(ingest_url "$name")
    "${HOOKLOAD[@]}" setup "$url" "$work/$store.env"
    local log=$work/$store.storm
    : >"$log"
    "${HOOKLOAD[@]}" storm "$work/$store.env" "$log" "storm-$store" "$STORM_DELIVERIES" \
        "$STORM_SENDERS" "$url" &
    local storm_pid=$!
    fleet_watch "$storm_pid"
    local waited=0
    until (($(wc -l <"$log") >= KILL_AFTER)); do
        ((waited++ < KILL_WAIT_SECS * 20)) || { echo "crash: the storm is stuck" >&2; return 1; }
        sleep 0.05
    done
    ingest_kill "$name" KILL
    echo "crash: $store: SIGKILL after $(wc -l <"$log") answers; restarting on port $port"
    ingest_start "$name" "$db" "$port"
    fleet_wait "$storm_pid"
    # What the store could not take at once was spooled (202 queued): drained first.
    "${HOOKLOAD[@]}" drained "$url"
    rows "$store" "$db" "$work/$store.rows"
    "${HOOKLOAD[@]}" reconcile-crash "$work/$store.env" "$log" "$work/$store.rows" "$url"
    rows "$store" "$db" "$work/$store.rows"
    "${HOOKLOAD[@]}" reconcile-complete "$log" "$work/$store.rows"
    ingest_kill "$name" TERM
    pg_stop
    echo "crash: $store: OK"
}

for store in "${stores[@]}"; do
    crash_run "$store"
done
echo "crash: OK"
