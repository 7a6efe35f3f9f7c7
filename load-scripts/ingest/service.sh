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

# The two halves of a start, so that several nodes can start at the same moment:
# service_launch BIN DIR NAME PORT [ARGS...] starts BIN on PORT (0: a free one) of 127.0.0.1
# with its own spool DIR/NAME.spool (kept across its restarts) and ARGS, stdout to
# DIR/NAME.out and logs appended to DIR/NAME.log, without RUST_BACKTRACE (the service runs as
# in production, and no backtrace capture this shell may ask for weighs on its figures); sets
# SERVICE_PID. service_wait DIR NAME PID: once it printed its address, sets SERVICE_PORT;
# otherwise says why and returns 1.
service_launch() {
    local bin=$1 dir=$2 name=$3 port=$4
    shift 4
    : >"$dir/$name.out"
    env -u RUST_BACKTRACE "$bin" --port "$port" --spool "$dir/$name.spool" "$@" \
        >"$dir/$name.out" 2>>"$dir/$name.log" &
    SERVICE_PID=$!
}

service_wait() {
    local dir=$1 name=$2 pid=$3
    SERVICE_PORT=
    wait_for "$pid" "$STARTUP_TIMEOUT_SECS" _service_port_printed "$dir/$name.out" && return 0
    if kill -0 "$pid" 2>/dev/null; then
        echo "$name printed no address; its log ends:" >&2
    else
        echo "$name exited; its log ends:" >&2
    fi
    tail -n 20 "$dir/$name.log" >&2
    return 1
}

# Sets SERVICE_PORT from the address the server printed in FILE, if it has.
_service_port_printed() {
    [[ -s $1 && $(<"$1") =~ listening\ on\ 127\.0\.0\.1:([0-9]+) ]] || return 1
    SERVICE_PORT=${BASH_REMATCH[1]}
}

# start_service DIR [ARGS...]: $SERVICE_BIN as `server` in DIR (service_launch) with ARGS; once
# it prints its address, sets SERVER_PID and SERVER_PORT.
start_service() {
    local dir=$1
    shift
    service_launch "$SERVICE_BIN" "$dir" server 0 "$@"
    SERVER_PID=$SERVICE_PID
    service_wait "$dir" server "$SERVER_PID" || return 1
    SERVER_PORT=$SERVICE_PORT
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
