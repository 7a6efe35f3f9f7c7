# shellcheck shell=bash
# The shell scripts' door to the harness (load-scripts/harness/); sourced, never run.
#
#   harness COMMAND...          python3 -m harness COMMAND... (see harness/__main__.py)
#   free_port                   prints a TCP port of 127.0.0.1 that was free a moment ago
#   require NAME TOOL...        the missing-tool check: returns when every TOOL is on PATH;
#                               otherwise exits 1 in CI (FAULTLINE_REQUIRE_TOOLS set), or 0
#                               after saying the script was skipped
#   wait_for PID SECONDS CMD... runs CMD every 0.1 s until it succeeds; returns 1 as soon as
#                               process PID has exited, or once SECONDS of tries have failed
#   scratch NAME                makes $work, a scratch directory removed at exit, when the
#                               server whose PID the script sets in $pid is stopped too; then
#                               `fail MSG...` says "NAME: MSG" with the server's output
#                               ($work/stdout, $work/stderr) and exits 1

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

harness() {
    PYTHONPATH=$HARNESS_DIR${PYTHONPATH:+:$PYTHONPATH} python3 -m harness "$@"
}

free_port() {
    harness free-port
}

require() {
    local status=0
    command -v python3 >/dev/null || { echo "$1: python3 is required" >&2; exit 1; }
    harness require "$@" || status=$?
    case $status in
        0) ;;
        3) exit 0 ;;
        *) exit 1 ;;
    esac
}

wait_for() {
    local pid=$1 tries=$(($2 * 10))
    shift 2
    until "$@"; do
        if ! kill -0 "$pid" 2>/dev/null || ((tries-- <= 0)); then
            return 1
        fi
        sleep 0.1
    done
}

scratch() {
    scratch_name=$1
    work=$(mktemp -d)
    pid=
    trap stop_scratch EXIT
}

stop_scratch() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
    rm -rf "$work"
}

fail() {
    local stream
    echo "$scratch_name: $*" >&2
    for stream in stdout stderr; do
        if [[ -s $work/$stream ]]; then
            echo "--- server $stream" >&2 && cat "$work/$stream" >&2
        fi
    done
    exit 1
}
