# shellcheck shell=bash disable=SC2034 # BUILD_FLAGS, FLEET_ARGS and HOOKLOAD are for the script
# The start and the end of every fleet script that runs webhook-ingest nodes; sourced
# first, never run. It sources pg.sh and ingest.sh, moves to the workspace root, and gives:
#
#   fleet_begin USAGE PATTERN [ARGS...]
#                        parses the script's ARGS: `--release` sets BUILD_FLAGS=(--release)
#                        (empty otherwise); every other one must match the extended regular
#                        expression PATTERN (none is allowed when PATTERN is empty) and is left
#                        in FLEET_ARGS; a wrong one prints `usage: SCRIPT USAGE` and exits 1.
#                        Then makes the run's work directory (FLEET_WORK, also INGEST_WORK),
#                        arms the exit trap below and builds the service (INGEST_BIN).
#   fleet_require TOOL...
#                        the missing-tool check (proc.sh's require) as this script
#   fleet_watch PID      a background job of the script, killed by the exit trap unless
#   fleet_wait PID       has waited for it first; returns the job's exit status
#
# The exit trap, whatever the status: kills the watched jobs and waits for them, stops every
# node and PostgreSQL by PID; on failure shows the end of the logs and the errors the
# nodes logged; removes the work directory; exits with the script's status.

FLEET_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The script's name, without .sh: the prefix of every line it prints.
FLEET_NAME=$(basename "$0" .sh)
cd "$FLEET_DIR/../.." || exit 1
source "$FLEET_DIR/pg.sh"
source "$FLEET_DIR/ingest.sh"

HOOKLOAD=(python3 "$FLEET_DIR/hookload.py")
# On failure, this many lines of each log, and this many of the errors the nodes logged.
FLEET_FAILURE_LOG_LINES=10
FLEET_WATCHED=()

fleet_begin() {
    local usage=$1 pattern=$2 arg
    shift 2
    BUILD_FLAGS=() FLEET_ARGS=()
    for arg in "$@"; do
        if [[ $arg == --release ]]; then
            BUILD_FLAGS=(--release)
        elif [[ -n $pattern && $arg =~ ^($pattern)$ ]]; then
            FLEET_ARGS+=("$arg")
        else
            echo "usage: $FLEET_NAME.sh $usage" >&2
            exit 1
        fi
    done
    FLEET_WORK=$(mktemp -d "${TMPDIR:-/tmp}/faultline-$FLEET_NAME.XXXXXX")
    INGEST_WORK=$FLEET_WORK
    trap _fleet_cleanup EXIT
    ingest_build "${BUILD_FLAGS[@]}"
}

fleet_require() {
    require "$FLEET_NAME" "$@"
}

fleet_watch() {
    FLEET_WATCHED+=("$1")
}

fleet_wait() {
    local pid=$1 status=0 kept=() other
    wait "$pid" || status=$?
    for other in "${FLEET_WATCHED[@]}"; do
        [[ $other == "$pid" ]] || kept+=("$other")
    done
    FLEET_WATCHED=("${kept[@]}")
    return "$status"
}

_fleet_cleanup() {
    local status=$? pid
    for pid in "${FLEET_WATCHED[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${FLEET_WATCHED[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    ingest_stop_all
    pg_stop || echo "$FLEET_NAME: postgres did not stop" >&2
    if ((status != 0)); then
        _fleet_show_failure
    fi
    rm -rf "$FLEET_WORK"
    exit "$status"
}

# The nodes' logs are $FLEET_WORK/NAME.log; PostgreSQL's, when it ran, pg/server.log.
# The database password is blanked out of what is shown: PostgreSQL logs a failed statement
# whole, and pg-tls.sh fails precisely when the password reached a log.
_fleet_show_failure() {
    echo "$FLEET_NAME: failed; the logs end:" >&2
    tail -n "$FLEET_FAILURE_LOG_LINES" "$FLEET_WORK"/*.log "$FLEET_WORK/pg/server.log" 2>/dev/null |
        _fleet_redact >&2 || true
    echo "$FLEET_NAME: the errors and warnings the nodes logged:" >&2
    grep -h -E ' (ERROR|WARN) ' "$FLEET_WORK"/*.log 2>/dev/null |
        tail -n "$FLEET_FAILURE_LOG_LINES" | _fleet_redact >&2 || true
}

_fleet_redact() {
    if [[ -n ${PG_PASSWORD:-} ]]; then
        sed "s/$PG_PASSWORD/[password]/g"
    else
        cat
    fi
}
