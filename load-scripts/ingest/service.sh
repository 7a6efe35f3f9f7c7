# shellcheck shell=bash disable=SC2034
# What load-scripts/fleet/ingest.sh still takes from the shell to start its nodes
# (WEBHOOK_INGEST_BUILD, WEBHOOK_INGEST_PATH, service_launch, service_wait); sourced by it
# alone, never run. Every other script starts the service through harness/ingest.py. This
# file goes when fleet/ingest.sh does.

source "$(dirname "${BASH_SOURCE[0]}")/../proc.sh"

# The build; add --release for a release build.
WEBHOOK_INGEST_BUILD=(cargo build -p webhook-ingest)
# The binary, inside the target directory's profile folder (debug/ or release/).
WEBHOOK_INGEST_PATH=webhook-ingest
# The server prints its address within a second; a cold debug binary on a busy machine can
# take a few.
STARTUP_TIMEOUT_SECS=30

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
