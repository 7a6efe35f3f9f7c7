#!/usr/bin/env bash
# Crash safety, shown: an instance killed with SIGKILL in the middle of a parallel push storm
# loses nothing it answered, and stores nothing by halves.
#
# For each store (SQLite, then a throwaway PostgreSQL): starts an instance, sends a storm of
# pushes from parallel senders, kills the instance with SIGKILL once part of the storm is
# answered, restarts it on the same store and port while the storm goes on, and then checks
# that every delivery answered 2xx is stored once with all its commits, that every stored
# delivery is whole, and that resending every delivery answers "duplicate" for exactly the
# stored ones (and stores the rest, whole). Everything it starts is stopped by PID.
#
# usage: load-scripts/fleet/crash.sh [--release] [sqlite|postgres ...]
# needs: cargo, python3, Debian's postgresql package for the PostgreSQL run.
set -euo pipefail
FLEET_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$FLEET_DIR/../.."
source "$FLEET_DIR/pg.sh"
source "$FLEET_DIR/ingest.sh"

HOOKLOAD=(python3 "$FLEET_DIR/hookload.py")
# The storm: enough deliveries that the kill lands with many in flight, few enough for CI.
STORM_DELIVERIES=1500
STORM_SENDERS=16
# The kill comes once this many answers are in: well inside the storm.
KILL_AFTER=400
# How long the storm may take to reach KILL_AFTER answers before the run is called stuck.
KILL_WAIT_SECS=120

build_flags=()
stores=()
for arg in "$@"; do
    case $arg in
        --release) build_flags=(--release) ;;
        sqlite | postgres) stores+=("$arg") ;;
        *) echo "usage: crash.sh [--release] [sqlite|postgres ...]" >&2; exit 1 ;;
    esac
done
((${#stores[@]})) || stores=(sqlite postgres)

work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-crash.XXXXXX")
INGEST_WORK=$work
storm_pid=
cleanup() {
    local status=$?
    [[ -n $storm_pid ]] && kill "$storm_pid" 2>/dev/null
    ingest_stop_all
    pg_stop
    if ((status != 0)); then
        echo "crash: failed; the instance's log ends:" >&2
        tail -n 10 "$work"/*.log >&2 2>/dev/null || true
        echo "crash: the errors the instances logged:" >&2
        grep -h ' ERROR ' "$work"/*.log | tail -n 5 >&2 || true
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

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
    storm_pid=$!
    local waited=0
    until (($(wc -l <"$log") >= KILL_AFTER)); do
        ((waited++ < KILL_WAIT_SECS * 20)) || { echo "crash: the storm is stuck" >&2; return 1; }
        sleep 0.05
    done
    ingest_kill "$name" KILL
    echo "crash: $store: SIGKILL after $(wc -l <"$log") answers; restarting on port $port"
    ingest_start "$name" "$db" "$port"
    wait "$storm_pid"
    storm_pid=
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

ingest_build "${build_flags[@]}"
for store in "${stores[@]}"; do
    crash_run "$store"
done
echo "crash: OK"
