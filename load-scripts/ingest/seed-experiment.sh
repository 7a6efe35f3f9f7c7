#!/usr/bin/env bash
# Reruns the classic experiment against a running service (after setup.sh): N clients x 50
# ignored Bitbucket pull requests for N in 1, 5, 15, 40, 80, then 20 clients x 150 of four
# scripts at once. Each row is reconciled on its own; prints one markdown table and exits
# non-zero if any row failed to run in parallel or to reconcile.
source "$(dirname "$0")/lib.sh"

CLIENTS=(1 5 15 40 80)
CLASSIC_REQUESTS=50
MIXED_CLIENTS=20
MIXED_REQUESTS=150
MIXED_SCRIPTS=(post-github-push.sh post-bitbucket-pull-request.sh query-real-instance.sh
    query-non-existent-instance.sh)

rows=()
failed=0

# row LABEL CLIENTS RUNNER-ARGS...: one reconciled run, appended to the table.
row() {
    local label=$1 clients=$2 run_ok=yes reconciled=yes
    shift 2
    "$LOAD_DIR/reconcile.sh" begin >/dev/null
    "$LOAD_DIR/runner.sh" "$clients" "$@" >"$SCRATCH/runner.out" 2>&1 || run_ok=no
    "$LOAD_DIR/reconcile.sh" >"$SCRATCH/reconcile.out" 2>&1 || reconciled=no
    if [[ $run_ok == no || $reconciled == no ]]; then
        failed=$((failed + 1))
        cat "$SCRATCH/runner.out" "$SCRATCH/reconcile.out" >&2
    fi
    local run summary reconcile
    run=$(<"$FAULTLINE_RESULTS/last-run")
    summary=$(<"$FAULTLINE_RESULTS/runs/$run/summary")
    reconcile=$(<"$FAULTLINE_RESULTS/last-reconcile")
    local elapsed_ns requests overlap copies failures ledger_failures commits
    elapsed_ns=$(value elapsed_ns "$summary")
    requests=$(value requests "$summary")
    overlap=$(value overlap "$summary")
    copies=$(value copies "$summary")
    failures=$(value failures "$reconcile")
    ledger_failures=$(value ledger_failures "$reconcile")
    commits=$(value commits "$reconcile")
    rows+=("| $label | $requests | $(seconds "$elapsed_ns") | $((requests * 1000000000 / elapsed_ns)) | $overlap of $copies | $failures | $ledger_failures | $commits | $([[ $reconciled == yes ]] && echo yes || echo "**no**") |")
    echo "done: $label" >&2
}

value() {
    local name=$1 text=$2
    [[ $text =~ (^|$'\n')$name=([0-9]+) ]] && printf '%s' "${BASH_REMATCH[2]}"
}

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/faultline-seed.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
load_env

for n in "${CLIENTS[@]}"; do
    row "$n x $CLASSIC_REQUESTS bitbucket pull requests" "$n" \
        "post-bitbucket-pull-request.sh $CLASSIC_REQUESTS"
done
mixed=()
for script in "${MIXED_SCRIPTS[@]}"; do
    mixed+=("$script $MIXED_REQUESTS")
done
row "$MIXED_CLIENTS x $MIXED_REQUESTS of each: ${MIXED_SCRIPTS[*]%.sh}" "$MIXED_CLIENTS" "${mixed[@]}"

echo "| run | requests | elapsed (s) | requests/s | most at once | failures tallied | failures in the ledger | commits stored | reconciled |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
((failed == 0))
