#!/usr/bin/env bash
# reconcile.sh begin   records the service's /metrics and store counts, and clears the tallies
# reconcile.sh         checks every tally since `begin` against the deltas of /metrics and of
#                      the store, prints the table, exits non-zero on any mismatch
#
# Nothing but the load scripts may talk to the service between the two, or the counts differ
# (which is the point). The checks:
#   - every response had a status its scenario expects
#   - requests that reached the ledger == responses tallied, counting reconcile's own
#   - ok == 2xx tallied; handled + rejected == failures tallied; no other outcome moved
#   - each (code, status) failure series moved by exactly what the scripts saw; the ignored
#     events counted moved by the answers `202 ignored`
#   - stored commits == commits in the pushes answered 201; deliveries == pushes answered 201;
#     redeliveries == answers `duplicate`; digests == digests answered 201
source "$(dirname "$0")/lib.sh"

# Scrapes taken while waiting for the last requests to leave the ledger's in-flight count;
# the scripts have all exited, so this is only the server finishing its bookkeeping.
MAX_SETTLE_SCRAPES=50

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/faultline-reconcile.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
load_env
auth=$(secret_header_file Authorization "Bearer $API_KEY")
begin_dir=$FAULTLINE_RESULTS/begin

fetch() {
    local path=$1 out=$2 status
    status=$(curl -s -o "$out" -w '%{http_code}' --max-time "$CURL_MAX_TIME" \
        --connect-timeout "$CURL_CONNECT_TIMEOUT" -H "@$auth" "$FAULTLINE_URL$path") || true
    [[ $status == 200 ]] || die "GET $path answered $status"
}

# Reads an exposition into the associative array named by $2: outcome:NAME, in_flight,
# error:CODE:STATUS (summed over routes), errors (all series).
declare -A BEFORE=() AFTER=()
parse_metrics() {
    local -n into=$2
    local line
    into=([errors]=0 [in_flight]=0 [ignored]=0)
    while IFS= read -r line; do
        if [[ $line =~ ^faultline_requests_total\{outcome=\"([a-z_]+)\"\}\ ([0-9]+)$ ]]; then
            into[outcome:${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
        elif [[ $line =~ ^webhook_ingest_ignored_events_total\{.*\}\ ([0-9]+)$ ]]; then
            into[ignored]=$((${into[ignored]:-0} + BASH_REMATCH[1]))
        elif [[ $line =~ ^faultline_in_flight\ ([0-9]+)$ ]]; then
            into[in_flight]=${BASH_REMATCH[1]}
        elif [[ $line =~ ^faultline_errors_total\{.*code=\"([^\"]+)\",status=\"([0-9]+)\"\}\ ([0-9]+)$ ]]; then
            local key=error:${BASH_REMATCH[1]}:${BASH_REMATCH[2]}
            # shellcheck disable=SC2004 # an associative subscript needs its `$`
            into[$key]=$((${into[$key]:-0} + BASH_REMATCH[3]))
            into[errors]=$((into[errors] + BASH_REMATCH[3]))
        fi
    done <"$1"
}

started() {
    local -n of=$1
    local sum=${of[in_flight]} outcome
    for outcome in ok handled rejected service_error panicked aborted cancelled; do
        sum=$((sum + ${of[outcome:$outcome]:-0}))
    done
    printf '%s' "$sum"
}

if [[ ${1:-} == begin ]]; then
    rm -rf "$FAULTLINE_RESULTS/tallies" "$begin_dir"
    mkdir -p "$FAULTLINE_RESULTS/tallies" "$begin_dir"
    # The scrape first, then the stats request, whose outcome the next scrape will count.
    fetch /metrics "$begin_dir/metrics"
    fetch "/api/$INSTANCE_ID/stats" "$begin_dir/stats"
    echo "reconcile: baseline recorded"
    exit 0
fi
[[ -z ${1:-} ]] || die "usage: reconcile.sh [begin]"
[[ -r $begin_dir/metrics ]] || die "no baseline: run 'reconcile.sh begin' before the load"

# Scrape until only the scrape itself is in flight.
scrapes=0
while :; do
    scrapes=$((scrapes + 1))
    fetch /metrics "$SCRATCH/metrics"
    parse_metrics "$SCRATCH/metrics" AFTER
    ((AFTER[in_flight] <= 1 || scrapes >= MAX_SETTLE_SCRAPES)) && break
    sleep 0.1
done
fetch "/api/$INSTANCE_ID/stats" "$SCRATCH/stats"
parse_metrics "$begin_dir/metrics" BEFORE
stats_before=$(<"$begin_dir/stats")
stats_after=$(<"$SCRATCH/stats")

# The tallies, summed.
declare -A by_label=() by_script_status=()
requests=0
successes=0
failures=0
commits=0
unexpected=0
unsent=0
for file in "$FAULTLINE_RESULTS/tallies"/*; do
    [[ -e $file ]] || continue
    while read -r kind script a b c; do
        case $kind in
            count)
                by_label["$a $b"]=$((${by_label["$a $b"]:-0} + c))
                by_script_status["$script $a"]=$((${by_script_status["$script $a"]:-0} + c))
                requests=$((requests + c))
                if ((a >= 200 && a < 300)); then
                    successes=$((successes + c))
                else
                    failures=$((failures + c))
                fi
                ;;
            commits) commits=$((commits + a)) ;;
            unexpected) unexpected=$((unexpected + a)) ;;
            unsent) unsent=$((unsent + a)) ;;
        esac
    done <"$file"
done

delta() {
    local key=$1
    printf '%s' $((${AFTER[$key]:-0} - ${BEFORE[$key]:-0}))
}
stat_delta() {
    printf '%s' $(($(json_number "$1" "$stats_after") - $(json_number "$1" "$stats_before")))
}
tally_of() {
    printf '%s' "${by_script_status["$1 $2"]:-0}"
}

mismatches=0
echo "| check | from the scripts | observed | |"
echo "|---|---|---|---|"
check() {
    local name=$1 expected=$2 observed=$3 mark=ok
    if [[ $expected != "$observed" ]]; then
        mark=MISMATCH
        mismatches=$((mismatches + 1))
    fi
    printf '| %s | %s | %s | %s |\n' "$name" "$expected" "$observed" "$mark"
}

check "responses a scenario does not expect" 0 "$unexpected"
check "requests a copy did not send" 0 "$unsent"
# Our own requests since the baseline scrape: the baseline's stats request and every
# settling scrape; the baseline scrape itself was already counted as started.
check "ledger: requests started" $((requests + 1 + scrapes)) $(($(started AFTER) - $(started BEFORE)))
# ok: the baseline scrape and stats request, and all settling scrapes but the last, which is
# still in flight.
check "ledger: ok (2xx)" $((successes + 1 + scrapes)) "$(delta outcome:ok)"
check "ledger: handled + rejected" "$failures" \
    $(($(delta outcome:handled) + $(delta outcome:rejected)))
for outcome in service_error panicked aborted cancelled; do
    check "ledger: $outcome" 0 "$(delta "outcome:$outcome")"
done
check "ledger: in flight at the end" 1 "${AFTER[in_flight]}"
check "ledger: failure series, all" "$failures" "$(delta errors)"
while read -r status label; do
    [[ -n $status ]] || continue
    ((status >= 200 && status < 300)) && continue
    check "ledger: $label $status" "${by_label["$status $label"]}" "$(delta "error:$label:$status")"
done < <(printf '%s\n' "${!by_label[@]}" | sort)

pushes_stored=$(($(tally_of post-github-push 201) + $(tally_of post-forge-push 201) +
    $(tally_of post-duplicate-delivery 201)))
check "store: deliveries" "$pushes_stored" "$(stat_delta deliveries)"
check "store: commits" "$commits" "$(stat_delta commits)"
check "store: redeliveries (stored once)" "$(tally_of post-duplicate-delivery 200)" \
    "$(stat_delta redeliveries)"
check "store: digests" "$(tally_of post-new-digest 201)" "$(stat_delta digests)"
check "ignored events counted" "${by_label["202 ignored"]:-0}" "$(delta ignored)"

{
    echo "requests=$requests"
    echo "successes=$successes"
    echo "failures=$failures"
    echo "ledger_failures=$(delta errors)"
    echo "commits=$(stat_delta commits)"
    echo "deliveries=$(stat_delta deliveries)"
    echo "redeliveries=$(stat_delta redeliveries)"
    echo "mismatches=$mismatches"
} >"$FAULTLINE_RESULTS/last-reconcile"

if ((mismatches > 0)); then
    echo "reconcile: $mismatches mismatches" >&2
    exit 1
fi
echo "reconcile: $requests requests, every total matches"
