#!/usr/bin/env bash
# runner.sh N "SCRIPT M" ["SCRIPT M" ...]
#
# Starts N copies of each SCRIPT (with argument M) truly in parallel, waits for all of them,
# and prints the elapsed time, the statuses they saw and how many copies were running at
# once. All copies are started first and then released together by one start signal; each
# records when its loop began and ended, and the runner fails if more than one copy was asked
# for but they never overlapped (the failure of runners that start copies one after another).
#
# Exits non-zero if a copy failed, saw a status its scenario does not expect, or if the
# copies did not overlap.
source "$(dirname "$0")/lib.sh"

# Most copies one run may start, all scripts together: bounds the processes whatever is typed.
MAX_COPIES=200

usage() {
    die "usage: runner.sh N \"SCRIPT M\" [\"SCRIPT M\" ...]  (1 <= N <= $MAX_COPIES)"
}

(($# >= 2)) || usage
copies=$1
shift
if ! [[ $copies =~ ^[0-9]+$ ]] || ((copies < 1 || copies > MAX_COPIES)); then
    usage
fi

scripts=()
counts=()
for spec in "$@"; do
    read -r script m extra <<<"$spec"
    [[ -z ${extra:-} && -n ${m:-} ]] || usage
    script=${script##*/}
    [[ -x $LOAD_DIR/$script && $script == *.sh ]] || die "no scenario script $script"
    if ! [[ $m =~ ^[0-9]+$ ]] || ((m < 1 || m > MAX_REQUESTS_PER_COPY)); then
        usage
    fi
    scripts+=("$script")
    counts+=("$m")
done
total_copies=$((copies * ${#scripts[@]}))
((total_copies <= MAX_COPIES)) || die "$total_copies copies in all; at most $MAX_COPIES"

RUNNER_NS=$(now_ns)
RUNNER_ID=run$RUNNER_NS
run_dir=$FAULTLINE_RESULTS/runs/$RUNNER_ID
mkdir -p "$run_dir/logs" "$FAULTLINE_RESULTS/tallies" "$FAULTLINE_RESULTS/spans/$RUNNER_ID"
export RUNNER_ID RUNNER_NS FAULTLINE_URL FAULTLINE_ENV FAULTLINE_RESULTS
export RUNNER_GO=$run_dir/go

pids=()
logs=()
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
}
trap cleanup INT TERM

for s in "${!scripts[@]}"; do
    for ((c = 1; c <= copies; c++)); do
        log=$run_dir/logs/${scripts[$s]%.sh}.$c.log
        COPY=$c "$LOAD_DIR/${scripts[$s]}" "${counts[$s]}" >"$log" 2>&1 &
        pids+=($!)
        logs+=("$log")
    done
done
started=$(now_ns)
: >"$RUNNER_GO"

failed=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        failed=$((failed + 1))
        echo "copy ${logs[$i]##*/} failed; its log ends:" >&2
        tail -n 5 "${logs[$i]}" >&2 || true
    fi
done
pids=()
elapsed_ns=$(($(now_ns) - started))

# The most copies running at once: a sweep over the start (+1) and end (-1) times, ends
# sorted before starts at the same instant so that touching spans do not count as overlap.
events=()
for span in "$FAULTLINE_RESULTS/spans/$RUNNER_ID"/*; do
    [[ -e $span ]] || continue
    read -r begin end <"$span"
    events+=("$begin 1" "$end 0")
done
running=0
overlap=0
while read -r _ kind; do
    if ((kind == 1)); then
        running=$((running + 1))
        if ((running > overlap)); then
            overlap=$running
        fi
    else
        running=$((running - 1))
    fi
done < <(printf '%s\n' "${events[@]}" | sort -n -k1,1 -k2,2)
spans=$((${#events[@]} / 2))

# This run's tallies, summed.
declare -A seen=()
requests=0
unexpected=0
commits=0
for file in "$FAULTLINE_RESULTS/tallies/$RUNNER_ID".*; do
    [[ -e $file ]] || continue
    while read -r kind script a b c; do
        case $kind in
            count)
                seen["$script $a $b"]=$((${seen["$script $a $b"]:-0} + c))
                requests=$((requests + c))
                ;;
            commits) commits=$((commits + a)) ;;
            unexpected) unexpected=$((unexpected + a)) ;;
        esac
    done <"$file"
done

echo "run $RUNNER_ID: $copies copies of ${scripts[*]}"
printf '| script | status | code | count |\n|---|---|---|---|\n'
while read -r script status label; do
    [[ -n $script ]] || continue
    printf '| %s | %s | %s | %s |\n' "$script" "$status" "$label" "${seen["$script $status $label"]}"
done < <(printf '%s\n' "${!seen[@]}" | sort)
seconds_text=$(seconds "$elapsed_ns")
rate=$((requests * 1000000000 / (elapsed_ns > 0 ? elapsed_ns : 1)))
echo "elapsed ${seconds_text}s, $requests requests ($rate/s), commits accepted $commits"
echo "copies: $total_copies started, $spans finished, at most $overlap running at once"

{
    echo "elapsed_ns=$elapsed_ns"
    echo "requests=$requests"
    echo "overlap=$overlap"
    echo "copies=$total_copies"
    echo "unexpected=$unexpected"
    echo "failed=$failed"
} >"$run_dir/summary"
printf '%s\n' "$RUNNER_ID" >"$FAULTLINE_RESULTS/last-run"

status=0
if ((failed > 0)); then
    echo "FAIL: $failed of $total_copies copies failed (logs in $run_dir/logs)" >&2
    status=1
fi
if ((unexpected > 0)); then
    echo "FAIL: $unexpected responses had a status the scenario does not expect" >&2
    status=1
fi
if ((total_copies > 1 && overlap <= 1)); then
    echo "FAIL: $total_copies copies ran one after another, never at once" >&2
    status=1
fi
exit $status
