#!/usr/bin/env bash
# Hostile traffic against the webhook ingestion service on 127.0.0.1, with short limits set
# by flags: a few thousand connections that send half a request head and stall, a few
# hundred that stall in their body, and, while they stall, signed pushes and /health probes.
# Checks that
#   - every push is stored, answered 201, each within the header timeout (had the stalls
#     held the service, a push would wait that long for a free connection);
#   - every stalled connection is closed within its limit (and a little slack), every
#     stalled body answered 408 body-timeout;
#   - the open-connection gauge returns to its baseline;
#   - the ledger and the store reconcile with what was sent (reconcile.sh): the stalled
#     bodies are counted as 408s, the stalled heads, never requests, not at all;
#   - on SIGTERM the service exits cleanly, and its final ledger counts exactly the requests
#     of the last scrape (which reconcile.sh and the gauge loop account for) and that scrape
#     itself: every outcome, `started`, nothing in flight, consistent.
# Prints the figures. Exits non-zero on any failure. Needs bash, curl and python3.
#
#   load-scripts/ingest/hostile.sh                     # debug build (CI runs this)
#   CI_PROFILE=release load-scripts/ingest/hostile.sh
set -euo pipefail
LOAD_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$LOAD_DIR/../.."
source "$LOAD_DIR/service.sh"

STALLED_HEADS=3000
STALLED_BODIES=300
# The service's limits for this run: short, so the run takes seconds, not minutes.
HEADER_TIMEOUT_SECS=4
BODY_TIMEOUT_SECS=4
REQUEST_TIMEOUT_SECS=6
SHUTDOWN_TIMEOUT_SECS=5
# Above every connection of the run, so no push waits for a stalled client's slot.
MAX_CONNECTIONS=6000
# Descriptors each process needs: the stalled connections and some room.
DESCRIPTORS=8192
# How much later than its limit a stalled connection may be seen closed: the service accepts
# thousands of connections at once and the client watches them all, on a loaded machine.
CLOSE_SLACK_SECS=2
# The pushes and probes sent while the connections stall.
PUSH_COPIES=4
PUSHES_PER_COPY=50
PROBES_PER_COPY=60
# Scrapes while waiting for the gauge to return to its baseline, 0.1 s apart.
MAX_GAUGE_SCRAPES=100

began=$(date +%s%N)
require hostile.sh curl
if (($(ulimit -n) < DESCRIPTORS)); then
    ulimit -n "$DESCRIPTORS" 2>/dev/null ||
        { echo "hostile.sh: needs $DESCRIPTORS descriptors; ulimit -Hn is $(ulimit -Hn)" >&2; exit 1; }
fi

build_service
work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-hostile.XXXXXX")
stall_pid=
cleanup() {
    local status=$?
    [[ -z $stall_pid ]] || kill "$stall_pid" 2>/dev/null || true
    stop_service
    ((status == 0)) || show_service_log hostile.sh "$work"
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT

echo "== start"
start_service "$work" --db "$work/ingest.db" \
    --header-timeout "${HEADER_TIMEOUT_SECS}s" --body-timeout "${BODY_TIMEOUT_SECS}s" \
    --request-timeout "${REQUEST_TIMEOUT_SECS}s" --shutdown-timeout "${SHUTDOWN_TIMEOUT_SECS}s" \
    --max-connections "$MAX_CONNECTIONS"
echo "server $SERVER_PID on 127.0.0.1:$SERVER_PORT"
export FAULTLINE_URL=http://127.0.0.1:$SERVER_PORT
export FAULTLINE_ENV=$work/env
export FAULTLINE_RESULTS=$work/results
export LATENCY_LOG=$work/latency
source "$LOAD_DIR/lib.sh"

# The open-connection gauge, read by a scrape whose own connection it counts. The scrape is
# kept: the final ledger must count exactly what the last one saw, and that scrape.
open_gauge() {
    local metrics
    metrics=$(curl -sf --max-time "$CURL_MAX_TIME" "$FAULTLINE_URL/metrics") || die "no /metrics"
    printf '%s\n' "$metrics" >"$work/last-scrape"
    metrics=$(harness value "$work/last-scrape" webhook_ingest_open_connections)
    [[ $metrics != none ]] || die "no open-connection gauge"
    printf '%s' "$metrics"
}

# An outcome's count in the last scrape, or `none`.
scraped() {
    harness value "$work/last-scrape" "faultline_requests_total{outcome=\"$1\"}"
}

"$LOAD_DIR/setup.sh" >/dev/null
load_env
gauge_baseline=$(open_gauge)
"$LOAD_DIR/reconcile.sh" begin

echo "== stall: $STALLED_HEADS heads and $STALLED_BODIES bodies, and pushes meanwhile"
ready=$work/stall.ready
python3 "$LOAD_DIR/stall.py" "$SERVER_PORT" "/api/$INSTANCE_ID/inboxes/$GITHUB_INBOX/commits" \
    "$STALLED_HEADS" "$STALLED_BODIES" "$ready" $((CURL_MAX_TIME * 3)) >"$work/stall.out" &
stall_pid=$!
while [[ ! -e $ready ]]; do
    kill -0 "$stall_pid" 2>/dev/null || die "the stall script ended before it had opened all"
    sleep 0.05
done
"$LOAD_DIR/runner.sh" "$PUSH_COPIES" "post-github-push.sh $PUSHES_PER_COPY" \
    "probe-health.sh $PROBES_PER_COPY" >"$work/runner.out" ||
    { cat "$work/runner.out"; die "the pushes during the stall failed"; }
wait "$stall_pid" || die "the stall script failed"
stall_pid=
declare -A STALL=()
while read -r name value; do
    STALL[$name]=$value
done <"$work/stall.out"

# The stalled bodies' answers, as a scenario's tally, for reconcile.sh to check against the
# ledger's 408 body-timeout series.
answered_408=${STALL[body_status_408]:-0}
{
    printf 'count stall-body 408 body-timeout %s\n' "$answered_408"
    printf 'commits stall-body 0\n'
    printf 'unexpected stall-body %s\n' $((STALLED_BODIES - answered_408))
    printf 'unsent stall-body 0\n'
} >"$FAULTLINE_RESULTS/tallies/stall-body"

echo "== reconcile"
"$LOAD_DIR/reconcile.sh"

failures=0
fail() {
    echo "hostile.sh: $*" >&2
    failures=$((failures + 1))
}

# One scenario's figures from the latency log: how many requests it sent, how many were
# answered before the last stalled connection closed, and the median and the slowest of those
# in milliseconds.
latency() {
    local script=$1 before_us=$2 total during
    local -a ms
    total=$(awk -v s="$script" '$2 == s' "$LATENCY_LOG" | wc -l)
    mapfile -t ms < <(awk -v s="$script" -v before="$before_us" \
        '$2 == s && $1 <= before { printf "%d\n", $4 * 1000 }' "$LATENCY_LOG" | sort -n)
    during=${#ms[@]}
    if ((during == 0)); then
        echo "$total 0 0 0"
    else
        echo "$total $during ${ms[(during - 1) / 2]} ${ms[during - 1]}"
    fi
}
last_close_us=${STALL[last_close_us]}
read -r pushes pushes_during push_median push_max < <(latency post-github-push "$last_close_us")
read -r probes probes_during probe_median probe_max < <(latency probe-health "$last_close_us")

stalled=$((STALLED_HEADS + STALLED_BODIES))
((STALL[opened] == stalled)) || fail "opened ${STALL[opened]} of $stalled stalled connections"
((STALL[closed] == STALL[opened])) || fail "the service kept $((STALL[opened] - STALL[closed])) stalled connections open"
((STALL[head_close_max_ms] <= (HEADER_TIMEOUT_SECS + CLOSE_SLACK_SECS) * 1000)) ||
    fail "a stalled head was closed after ${STALL[head_close_max_ms]} ms"
((STALL[body_close_max_ms] <= (BODY_TIMEOUT_SECS + CLOSE_SLACK_SECS) * 1000)) ||
    fail "a stalled body was closed after ${STALL[body_close_max_ms]} ms"
((answered_408 == STALLED_BODIES)) || fail "$answered_408 of $STALLED_BODIES stalled bodies answered 408"
((push_max <= HEADER_TIMEOUT_SECS * 1000)) || fail "a push waited $push_max ms"
((pushes_during > 0)) || fail "no push was answered while the connections stalled"

gauge=
for ((i = 0; i < MAX_GAUGE_SCRAPES; i++)); do
    gauge=$(open_gauge)
    ((gauge == gauge_baseline)) && break
    sleep 0.1
done
((gauge == gauge_baseline)) || fail "open connections: $gauge, baseline $gauge_baseline"

echo "== SIGTERM"
stop_service
((SERVER_STATUS == 0)) || fail "the service exited with $SERVER_STATUS after SIGTERM"
final=$(grep 'final ledger' "$work/server.log" || true)
# Nothing reached the service after the last gauge scrape, which was in flight as it was
# rendered: the final ledger is that scrape's counts, and the scrape itself, one more ok.
finished=0
for outcome in ok handled rejected service_error panicked aborted cancelled; do
    want=$(scraped "$outcome")
    [[ $outcome == ok && $want != none ]] && want=$((want + 1))
    if [[ $final =~ [[:space:]]$outcome=([0-9]+) ]]; then
        ((BASH_REMATCH[1] == want)) ||
            fail "final ledger: $outcome=${BASH_REMATCH[1]}, the last scrape and itself: $want"
        finished=$((finished + BASH_REMATCH[1]))
    else
        fail "no $outcome in the final ledger: $final"
    fi
done
[[ $final =~ [[:space:]]started=([0-9]+) ]] && ((BASH_REMATCH[1] == finished)) ||
    fail "final ledger: started is not the $finished finished: $final"
[[ $final == *'in_flight=0 consistent=true' ]] || fail "final ledger not settled or not consistent: $final"

echo "| figure | value |"
echo "|---|---|"
echo "| stalled connections opened (heads + bodies) | ${STALL[opened]} ($STALLED_HEADS + $STALLED_BODIES) in ${STALL[open_secs]} s |"
echo "| stalled connections closed by the service | ${STALL[closed]} |"
echo "| time to close a stalled head: median, max (limit ${HEADER_TIMEOUT_SECS} s) | ${STALL[head_close_median_ms]} ms, ${STALL[head_close_max_ms]} ms |"
echo "| time to close a stalled body: median, max (limit ${BODY_TIMEOUT_SECS} s) | ${STALL[body_close_median_ms]} ms, ${STALL[body_close_max_ms]} ms |"
echo "| stalled bodies answered 408 body-timeout | $answered_408 |"
echo "| pushes stored (201) during the stall, in all | $pushes_during, $pushes |"
echo "| push latency during the stall: median, max | $push_median ms, $push_max ms |"
echo "| /health latency during the stall: median, max | $probe_median ms, $probe_max ms ($probes_during of $probes probes) |"
echo "| open-connection gauge: baseline, after | $gauge_baseline, $gauge |"
echo "| final ledger | ${final#*final ledger } |"
((failures == 0)) || exit 1
elapsed=$((($(date +%s%N) - began) / 1000000))
printf 'hostile.sh: passed in %d.%03ds\n' $((elapsed / 1000)) $((elapsed % 1000))
