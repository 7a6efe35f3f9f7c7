#!/usr/bin/env bash
# No push lost while the database is down: three nodes on a throwaway PostgreSQL, each
# with its own spool, take a push storm (some deliveries sent again at once to a second
# node); mid-storm PostgreSQL is stopped for several seconds, one node is killed
# with SIGKILL while it is down and restarted on its spool (with the database still down).
# Once the database is back and the spools are drained, it checks: no 5xx while the
# database was down; every delivery answered 2xx stored once with all its commits; a resend
# of each answered `duplicate`; the ledgers, summed, count every request they answered.
# Everything it starts is stopped by PID.
#
# usage: load-scripts/fleet/outage.sh [--release]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

OUTAGE=(python3 "$FLEET_DIR/outage.py")
NODES=(o1 o2 o3)
# The storm: long enough to hold the outage with seconds to spare on both sides.
STORM_SECS=18
STORM_SENDERS=24
# The outage starts once this many answers are in, and lasts about DOWN_SECS.
DOWN_AFTER=400
DOWN_SECS=5
# How long the storm may take to reach DOWN_AFTER answers before the run is called stuck.
WAIT_SECS=60

fleet_begin '[--release]' '' "$@"
work=$FLEET_WORK

now() { date +%s.%N; }

pg_start "$work"
ingest_start_all "$PG_URL" "${NODES[@]}"
urls=("${INGEST_URLS[@]}")
echo "outage: nodes ${urls[*]} on postgres :$PG_PORT, each with its own spool"
"${HOOKLOAD[@]}" setup "${urls[0]}" "$work/env.json"

log=$work/storm.log
: >"$log"
"${OUTAGE[@]}" storm "$work/env.json" "$log" "$STORM_SECS" "$STORM_SENDERS" "${urls[@]}" &
storm_pid=$!
fleet_watch "$storm_pid"
waited=0
until (($(wc -l <"$log") >= DOWN_AFTER)); do
    ((waited++ < WAIT_SECS * 20)) || { echo "outage: the storm is stuck" >&2; exit 1; }
    sleep 0.05
done

down_from=$(now)
pg_stop
echo "outage: postgres stopped after $(wc -l <"$log") answers"
sleep $((DOWN_SECS / 2))
victim=o2
port=${INGEST_PORT[$victim]}
ingest_kill "$victim" KILL
killed_at=$(now)
echo "outage: $victim killed with SIGKILL while the database is down; restarting it on its spool"
ingest_start "$victim" "$PG_URL" "$port"
sleep $((DOWN_SECS - DOWN_SECS / 2))
pg_restart
down_to=$(now)
echo "outage: postgres back after $(python3 -c "print(f'{$down_to - $down_from:.1f}')")s"
fleet_wait "$storm_pid"
printf '{"down_from": %s, "down_to": %s, "killed": 1, "killed_at": %s}\n' \
    "$down_from" "$down_to" "$killed_at" >"$work/meta.json"

"${OUTAGE[@]}" drained "$work/polls.json" "${urls[@]}"
pg_sql "COPY ($("${HOOKLOAD[@]}" rows-sql)) TO STDOUT" >"$work/rows.tsv"
"${OUTAGE[@]}" reconcile "$work/env.json" "$log" "$work/rows.tsv" "$work/meta.json" \
    "$work/polls.json" "${urls[@]}"
for name in "${NODES[@]}"; do
    grep -h 'spool' "$work/$name.log" | grep -E 'cut|from before' | sed "s/^/outage: $name: /" || true
done
echo "outage: OK"
