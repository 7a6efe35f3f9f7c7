# shellcheck shell=bash
# Nodes of the webhook ingestion service for the fleet scripts; sourced, never run.
#
#   ingest_build [--release]       builds the service; sets INGEST_BIN
#   ingest_start NAME DB [PORT [ARGS...]]
#                                  starts node NAME on store DB (a SQLite path or a
#                                  postgres:// URL) and PORT (default: a free one), with its own
#                                  spool $INGEST_WORK/NAME.spool (kept across its restarts) and
#                                  any further ARGS; waits for its first line; sets
#                                  INGEST_PORT[NAME] and INGEST_PID[NAME]. Its log is appended
#                                  to $INGEST_WORK/NAME.log
#   ingest_launch, ingest_wait     the two halves of ingest_start
#   ingest_start_all DB NAME...    launches every node NAME on DB at the same moment, then
#                                  waits for each; sets INGEST_URLS to their URLs, in order
#   ingest_url NAME                http://127.0.0.1:PORT of node NAME
#   ingest_kill NAME SIGNAL        signals node NAME by its PID and waits for it to exit
#   ingest_stop_all                SIGTERM to every node still running, by PID
#
# INGEST_WORK must name a directory before ingest_start.

source "$(dirname "${BASH_SOURCE[0]}")/../proc.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../ingest/service.sh"

declare -A INGEST_PORT=() INGEST_PID=()

ingest_build() {
    local profile=debug flags=()
    if [[ ${1:-} == --release ]]; then
        profile=release flags=(--release)
    fi
    "${WEBHOOK_INGEST_BUILD[@]}" --quiet "${flags[@]}"
    local target
    target=$(harness target-dir)
    INGEST_BIN=$target/$profile/$WEBHOOK_INGEST_PATH
}

ingest_start() {
    ingest_launch "$@"
    ingest_wait "$1"
}

# The two halves of ingest_start (service.sh's service_launch and service_wait), so that
# several nodes can start at the same moment.
ingest_launch() {
    local name=$1 db=$2 port=${3:-0}
    shift $(($# < 3 ? $# : 3))
    # shellcheck disable=SC2153 # INGEST_WORK is set by the sourcing script
    service_launch "$INGEST_BIN" "$INGEST_WORK" "$name" "$port" --db "$db" "$@"
    INGEST_PID[$name]=$SERVICE_PID
}

ingest_start_all() {
    local db=$1 name
    shift
    for name in "$@"; do
        ingest_launch "$name" "$db"
    done
    INGEST_URLS=()
    for name in "$@"; do
        ingest_wait "$name"
        INGEST_URLS+=("$(ingest_url "$name")")
    done
}

ingest_wait() {
    service_wait "$INGEST_WORK" "$1" "${INGEST_PID[$1]}" || return 1
    INGEST_PORT[$1]=$SERVICE_PORT
}

ingest_url() {
    printf 'http://127.0.0.1:%s' "${INGEST_PORT[$1]}"
}

ingest_kill() {
    local name=$1 signal=$2 pid=${INGEST_PID[$1]:-}
    [[ -n $pid ]] || return 0
    kill "-$signal" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    INGEST_PID[$name]=
}

ingest_stop_all() {
    local name
    for name in "${!INGEST_PID[@]}"; do
        ingest_kill "$name" TERM
    done
}
