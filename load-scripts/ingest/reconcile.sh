#!/usr/bin/env bash
# reconcile.sh begin   records the service's /metrics and store counts, and clears the tallies
# reconcile.sh         checks every tally since `begin` against the deltas of /metrics and of
#                      the store, prints the table, exits non-zero on any mismatch
#
# Nothing but the load scripts may talk to the service between the two, or the counts differ
# (which is the point). reconcile.py lists the checks.
source "$(dirname "$0")/lib.sh"

case ${1:-} in
    begin) mode=begin ;;
    '') mode=check ;;
    *) die "usage: reconcile.sh [begin]" ;;
esac
load_env
export INSTANCE_ID API_KEY
exec python3 "$LOAD_DIR/reconcile.py" "$mode" "$FAULTLINE_URL" "$FAULTLINE_RESULTS"
