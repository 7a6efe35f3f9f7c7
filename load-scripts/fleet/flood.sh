#!/usr/bin/env bash
# The spool only real senders fill, measured as the hole was found: one node on a
# throwaway PostgreSQL, its inboxes made and known; PostgreSQL stopped; 60 made-up pushes of
# 4 MiB at once to instances and inboxes that never existed (none may get a 2xx: each is past
# the per-body cap); then 160 of 512 KiB (the unverified bound takes what fits, the rest get
# 503 with Retry-After); the node killed with SIGKILL and restarted on its spool with the
# database still down (it still knows the inboxes; 60 more made-up pushes all get 503: what
# the bound holds still counts); then 30 signed pushes of the real senders to the known
# inboxes, all 202 queued. PostgreSQL back: the real deliveries are stored, nothing else.
# Everything it starts is stopped by PID.
#
# usage: load-scripts/fleet/flood.sh [--release]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

FLOOD=(python3 "$FLEET_DIR/flood.py")
# As measured on main: 60 pushes of 4 MiB, each past the 1 MiB per-body cap.
LARGE=60
LARGE_BYTES=$((4 << 20))
# Under the cap: the bound (64 MiB, the default) takes 127 of these, not 160.
SMALL=160
SMALL_BYTES=$((512 << 10))
UNVERIFIED_BOUND=$((64 << 20))
REAL_PER_PROVIDER=6

fleet_begin '[--release]' '' "$@"
work=$FLEET_WORK

pg_start "$work"
ingest_start f1 "$PG_URL"
url=$(ingest_url f1)
echo "flood: one node $url on postgres :$PG_PORT"
"${HOOKLOAD[@]}" setup "$url" "$work/env.json"
"${FLOOD[@]}" wait-known "$work/env.json" "$url"
pg_stop
echo "flood: postgres stopped"

"${FLOOD[@]}" flood "$url" 0 "$LARGE" "$LARGE_BYTES" none
"${FLOOD[@]}" flood "$url" 1000 "$SMALL" "$SMALL_BYTES" "fill:$UNVERIFIED_BOUND"
echo "flood: the spool directory holds $(du -sb "$work/f1.spool" | cut -f1) B"

port=${INGEST_PORT[f1]}
ingest_kill f1 KILL
echo "flood: f1 killed with SIGKILL while the database is down; restarting it on its spool"
ingest_start f1 "$PG_URL" "$port"
"${FLOOD[@]}" wait-known "$work/env.json" "$url"
"${FLOOD[@]}" flood "$url" 2000 "$LARGE" "$SMALL_BYTES" none
"${FLOOD[@]}" real "$work/env.json" "$url" "$REAL_PER_PROVIDER"
echo "flood: the spool directory holds $(du -sb "$work/f1.spool" | cut -f1) B"

pg_restart
echo "flood: postgres back"
"${HOOKLOAD[@]}" drained "$url"
pg_sql "COPY ($("${HOOKLOAD[@]}" rows-sql)) TO STDOUT" >"$work/rows.tsv"
"${FLOOD[@]}" stored "$work/rows.tsv" "$REAL_PER_PROVIDER"
echo "flood: OK"
