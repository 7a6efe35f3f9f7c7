# shellcheck shell=bash
# The servers the load scripts start: a port to give one, and waiting until it is ready;
# sourced, never run.
#
#   free_port                   prints a TCP port of 127.0.0.1 that was free a moment ago
#   wait_for PID SECONDS CMD... runs CMD every 0.1 s until it succeeds; returns 1 as soon as
#                               process PID has exited, or once SECONDS of tries have failed
#   require NAME TOOL...        exits 1, saying so as script NAME, unless every TOOL is on PATH
#   scratch NAME                makes $work, a scratch directory removed at exit, when the
#                               server whose PID the script sets in $pid is stopped too; then
#                               `fail MSG...` says "NAME: MSG" with the server's output
#                               ($work/stdout, $work/stderr) and exits 1

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
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

require() {
    local name=$1 tool
    shift
    for tool in "$@"; do
        command -v "$tool" >/dev/null || {
            echo "$name: $tool is required (.ci/setup installs it)" >&2
            exit 1
        }
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
