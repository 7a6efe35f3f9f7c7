# shellcheck shell=bash disable=SC2034 # PG_URL and the like are for the sourcing script
# A throwaway PostgreSQL server for the fleet scripts (harness/postgres.py); sourced, never run.
#
#   pg_start WORKDIR   a fresh server in WORKDIR/pg on 127.0.0.1 and a free port, with a
#                      password for the `ingest` role; sets PG_URL, PG_PASSWORD, PG_PORT, PG_PID
#                      and PG_DIR
#   pg_stop            stops it by its PID (fast shutdown), waiting until it is gone
#   pg_restart         pg_stop, then the same server on the same data directory and port
#   pg_sql SQL         runs SQL on the database, prints unaligned rows
#
# Needs Debian's `postgresql` package (binaries under /usr/lib/postgresql/<version>/bin) and
# runuser when run as root.

source "$(dirname "${BASH_SOURCE[0]}")/../proc.sh"

PG_DB=ingest
PG_USER=ingest
PG_WORK=

pg_start() {
    local assignments
    assignments=$(harness postgres start "$1") || return 1
    eval "$assignments"
    PG_WORK=$1
}

pg_stop() {
    [[ -n $PG_WORK && -n ${PG_PID:-} ]] || return 0
    harness postgres stop "$PG_WORK"
    PG_PID=
}

pg_restart() {
    local assignments
    pg_stop
    assignments=$(harness postgres restart "$PG_WORK") || return 1
    eval "$assignments"
}

pg_sql() {
    harness postgres sql "$PG_WORK" "$1"
}
