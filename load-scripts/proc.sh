# shellcheck shell=bash
# The servers the load scripts start: a port to give one, and waiting until it is ready;
# sourced, never run.
#
#   free_port                   prints a TCP port of 127.0.0.1 that was free a moment ago
#   wait_for PID SECONDS CMD... runs CMD every 0.1 s until it succeeds; returns 1 as soon as
#                               process PID has exited, or once SECONDS of tries have failed

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
