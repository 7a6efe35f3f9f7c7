# shellcheck shell=bash disable=SC2034
# How the webhook ingestion service is built, where cargo puts it, and how a script starts and
# stops it: the one place to change when the service moves. Sourced by ci.sh, hostile.sh and
# lib.sh, never run.

source "$(dirname "${BASH_SOURCE[0]}")/../proc.sh"

# The build; add --release for a release build.
WEBHOOK_INGEST_BUILD=(cargo build -p webhook-ingest)
# The binary, inside the target directory's profile folder (debug/ or release/).
WEBHOOK_INGEST_PATH=webhook-ingest
# The server prints its address within a second; a cold debug binary on a busy machine can
# take a few.
STARTUP_TIMEOUT_SECS=30

# build_service: builds the service in $CI_PROFILE (debug, the default: it reuses what
# `cargo test` compiled; or release) and sets SERVICE_BIN. Run from the workspace root.
build_service() {
    local profile=${CI_PROFILE:-debug} flags=()
    case $profile in
        debug) ;;
        release) flags=(--release) ;;
        *) echo "CI_PROFILE must be debug or release" >&2; return 1 ;;
    esac
    echo "== build ($profile)"
    "${WEBHOOK_INGEST_BUILD[@]}" "${flags[@]}"
    SERVICE_BIN=${CARGO_TARGET_DIR:-$PWD/target}/$profile/$WEBHOOK_INGEST_PATH
}

# start_service DIR [ARGS...]: starts $SERVICE_BIN on a free port of 127.0.0.1 with ARGS,
# stdout to DIR/server.out and logs to DIR/server.log; once it prints its address, sets
# SERVER_PID and SERVER_PORT.
start_service() {
    local dir=$1
    shift
    # Its own spool in the run's directory, removed with it.
    "$SERVICE_BIN" --port 0 --spool "$dir/spool" "$@" >"$dir/server.out" 2>"$dir/server.log" &
    SERVER_PID=$!
    SERVER_PORT=
    wait_for "$SERVER_PID" "$STARTUP_TIMEOUT_SECS" _service_port_printed "$dir/server.out" &&
        return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "the server printed no address" >&2
    else
        echo "the server exited" >&2
    fi
    return 1
}

# Sets SERVER_PORT from the address the server printed in FILE, if it has.
_service_port_printed() {
    [[ -s $1 && $(<"$1") =~ listening\ on\ 127\.0\.0\.1:([0-9]+) ]] || return 1
    SERVER_PORT=${BASH_REMATCH[1]}
}

# stop_service: SIGTERM to the server start_service started, as an orchestrator would send;
# waits for it to exit and sets SERVER_STATUS to its exit status.
stop_service() {
    SERVER_STATUS=
    if [[ -n ${SERVER_PID:-} ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        SERVER_STATUS=0
        wait "$SERVER_PID" 2>/dev/null || SERVER_STATUS=$?
        SERVER_PID=
    fi
}

# show_service_log NAME DIR: after a failure, says so and shows the end of the server's log.
show_service_log() {
    echo "$1: failed; the server log ends:" >&2
    tail -n 20 "$2/server.log" >&2 2>/dev/null || true
}
