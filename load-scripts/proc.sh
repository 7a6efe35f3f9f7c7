# shellcheck shell=bash
# The shell scripts' door to the harness (load-scripts/harness/); sourced, never run.
#
#   harness COMMAND...          python3 -m harness COMMAND... (see harness/__main__.py)
#   require NAME TOOL...        the missing-tool check: returns when every TOOL is on PATH;
#                               otherwise exits 1 in CI (FAULTLINE_REQUIRE_TOOLS set), or 0
#                               after saying the script was skipped

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

harness() {
    PYTHONPATH=$HARNESS_DIR${PYTHONPATH:+:$PYTHONPATH} python3 -m harness "$@"
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
