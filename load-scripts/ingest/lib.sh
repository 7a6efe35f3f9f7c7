# shellcheck shell=bash
# Shared by the load scripts; sourced, never run. Needs bash, curl, coreutils and python3
# (the harness signs).
#
# Environment:
#   FAULTLINE_URL      the service, default http://127.0.0.1:3000; only 127.0.0.1 is accepted
#   FAULTLINE_ENV      the file setup.sh writes, default load-scripts/ingest/.env
#   FAULTLINE_RESULTS  where tallies and spans go, default $TMPDIR/faultline-load-results
#   LATENCY_LOG        if set, each request appends `END_US SCRIPT STATUS SECONDS` to this file:
#                      when its answer came (microseconds since the epoch), which scenario sent
#                      it, and how long it took

set -euo pipefail

LOAD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$LOAD_DIR/../proc.sh"
FAULTLINE_URL=${FAULTLINE_URL:-http://127.0.0.1:3000}
FAULTLINE_ENV=${FAULTLINE_ENV:-$LOAD_DIR/.env}
FAULTLINE_RESULTS=${FAULTLINE_RESULTS:-${TMPDIR:-/tmp}/faultline-load-results}

# One request may take this long before it counts as failed (status 000): far above the
# service's worst case under this load, far below a run's length.
CURL_MAX_TIME=10
CURL_CONNECT_TIMEOUT=2
# A copy stops early past this many seconds, so a stuck service cannot hold a run forever.
COPY_DEADLINE_SECS=${COPY_DEADLINE_SECS:-600}
# How long a copy waits for the runner's start signal.
GO_WAIT_SECS=30
# Most requests one copy may send: keeps every loop bounded whatever is typed.
MAX_REQUESTS_PER_COPY=10000

die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

case $FAULTLINE_URL in
    http://127.0.0.1 | http://127.0.0.1:* | http://127.0.0.1/*) ;;
    *) die "FAULTLINE_URL must point at http://127.0.0.1 (got $FAULTLINE_URL)" ;;
esac

# A copy's runner has checked already: a copy spares itself the Python start.
[[ -n ${RUNNER_ID:-} ]] || require "${0##*/}" curl

now_ns() {
    date +%s%N
}

# Prints nanoseconds as seconds with three decimals.
seconds() {
    local ms=$(($1 / 1000000))
    printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

load_env() {
    [[ -r $FAULTLINE_ENV ]] || die "no $FAULTLINE_ENV: run setup.sh first"
    # shellcheck disable=SC1090
    source "$FAULTLINE_ENV"
}

# Writes a curl header file readable by us only, so keys and tokens stay out of `ps`.
secret_header_file() {
    local name=$1 value=$2 file
    file=$(mktemp "$SCRATCH/header.XXXXXX")
    chmod 600 "$file"
    printf '%s: %s\n' "$name" "$value" >"$file"
    printf '%s' "$file"
}

# The hex HMAC-SHA256 of a file's bytes under a secret, by harness/signing.py: in a copy whose
# scenario sets SIGNING=1, by its one signer process (copy_begin starts it: a Python start per
# request would cost more than the request); otherwise by a process of its own. Either way the
# secret travels through a pipe or the environment, never the command line (`ps`).
sign_file() {
    local secret=$1 file=$2 tag
    if [[ -n ${SIGN_TO:-} ]]; then
        printf '%s\n%s\n' "$secret" "$(wc -c <"$file")" >&"$SIGN_TO"
        cat "$file" >&"$SIGN_TO"
        IFS= read -r tag <&"$SIGN_FROM" || die "the signer stopped"
        printf '%s' "$tag"
    else
        WEBHOOK_SECRET=$secret harness sign <"$file"
    fi
}

# Starts the copy's signer; its pipes get descriptors of their own, which the command
# substitutions that sign inherit (a coprocess's own do not reach a subshell).
signer_begin() {
    coproc SIGNER { harness sign-serve; }
    exec {SIGN_TO}>&"${SIGNER[1]}" {SIGN_FROM}<&"${SIGNER[0]}"
    SIGNER_PID_OF_COPY=$SIGNER_PID
    # The coprocess's own descriptors closed: the signer sees its input end with SIGN_TO.
    eval "exec ${SIGNER[1]}>&- ${SIGNER[0]}<&-"
}

# Ends the signer: its stdin closes, it exits, and is waited for.
signer_end() {
    [[ -n ${SIGN_TO:-} ]] || return 0
    exec {SIGN_TO}>&- {SIGN_FROM}<&-
    SIGN_TO=
    wait "$SIGNER_PID_OF_COPY" 2>/dev/null || true
}

# Writes to FILE a GitHub-shaped push of REPO with COMMITS new commits, push I of this copy:
# each commit's 40 hex digits are unique per copy, push and commit, like a real sha.
push_body() {
    local file=$1 repo=$2 i=$3 count=$4 commits='' sha j
    for ((j = 1; j <= count; j++)); do
        sha=$(printf '%016x%08x%08x%08x' "$COPY_START" "$$" "$i" "$j")
        commits+="${commits:+,}{\"id\":\"$sha\",\"message\":\"load commit $i.$j\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"author\":{\"name\":\"Load Runner\"}}"
    done
    printf '{"ref":"refs/heads/main","repository":{"full_name":"%s"},"commits":[%s]}' \
        "$repo" "$commits" >"$file"
}

# --- one copy of a scenario script -----------------------------------------------------------
#
# A scenario sets SCRIPT_NAME and EXPECTED (the "status:label" pairs it may see), calls
# copy_begin with its M, sends with `request`, and ends with copy_end. `label` is the problem
# code of a failure, `duplicate` for a redelivery, `ignored` for an event not stored, `-` for
# any other success.

declare -A TALLY=()
COMMITS_ACCEPTED=0
UNEXPECTED=0
STATUS=000
LABEL=-
COPY_START=0

copy_begin() {
    local m=${1:-}
    if ! [[ $m =~ ^[0-9]+$ ]] || ((m < 1 || m > MAX_REQUESTS_PER_COPY)); then
        die "usage: ${0##*/} M  (1 <= M <= $MAX_REQUESTS_PER_COPY)"
    fi
    REQUESTS=$m
    load_env
    RUNNER_ID=${RUNNER_ID:-solo-$(now_ns)}
    COPY=${COPY:-1}
    mkdir -p "$FAULTLINE_RESULTS/tallies" "$FAULTLINE_RESULTS/spans/$RUNNER_ID"
    SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/faultline-copy.XXXXXX")
    trap 'signer_end; rm -rf "$SCRATCH"' EXIT
    [[ -z ${SIGNING:-} ]] || signer_begin
    RESPONSE_FILE=$SCRATCH/response
    # Every copy waits for the runner's go, so they all start their loops together.
    if [[ -n ${RUNNER_GO:-} ]]; then
        local waited=0
        while [[ ! -e $RUNNER_GO ]]; do
            ((waited++ < GO_WAIT_SECS * 100)) || die "no start signal after ${GO_WAIT_SECS}s"
            sleep 0.01
        done
    fi
    COPY_START=$(now_ns)
    COPY_DEADLINE=$((COPY_START + COPY_DEADLINE_SECS * 1000000000))
}

# Whether the copy may send another request.
in_time() {
    (($(now_ns) < COPY_DEADLINE))
}

# request METHOD PATH [curl args...]: sends, then sets STATUS and LABEL and tallies them.
request() {
    local method=$1 path=$2
    shift 2
    local answer took
    answer=$(curl -s -o "$RESPONSE_FILE" -w '%{http_code} %{time_total}' -X "$method" \
        --max-time "$CURL_MAX_TIME" --connect-timeout "$CURL_CONNECT_TIMEOUT" \
        "$@" "$FAULTLINE_URL$path") || true
    STATUS=${answer%% *}
    took=${answer#* }
    [[ $STATUS =~ ^[0-9]{3}$ ]] || STATUS=000
    if [[ -n ${LATENCY_LOG:-} ]]; then
        # One short line per write, appended: copies share the file safely.
        printf '%s %s %s %s\n' "${EPOCHREALTIME/./}" "$SCRIPT_NAME" "$STATUS" "$took" \
            >>"$LATENCY_LOG"
    fi
    local body=
    [[ -s $RESPONSE_FILE ]] && body=$(<"$RESPONSE_FILE")
    LABEL=-
    if [[ $body =~ \"code\":\"([a-z0-9-]+)\" ]]; then
        LABEL=${BASH_REMATCH[1]}
    elif [[ $body == *'"status":"duplicate"'* ]]; then
        LABEL=duplicate
    elif [[ $body == *'"status":"ignored"'* ]]; then
        LABEL=ignored
    fi
    : >"$RESPONSE_FILE"
    local key="$STATUS $LABEL"
    TALLY[$key]=$((${TALLY[$key]:-0} + 1))
    # shellcheck disable=SC2153 # EXPECTED is set by the scenario script
    if [[ " $EXPECTED " != *" $STATUS:$LABEL "* ]]; then
        UNEXPECTED=$((UNEXPECTED + 1))
    fi
}

copy_end() {
    local end sent=0 key file
    end=$(now_ns)
    file=$FAULTLINE_RESULTS/tallies/$RUNNER_ID.$SCRIPT_NAME.$COPY.$$
    {
        for key in "${!TALLY[@]}"; do
            printf 'count %s %s %s\n' "$SCRIPT_NAME" "$key" "${TALLY[$key]}"
            sent=$((sent + ${TALLY[$key]}))
        done
        printf 'commits %s %s\n' "$SCRIPT_NAME" "$COMMITS_ACCEPTED"
        printf 'unexpected %s %s\n' "$SCRIPT_NAME" "$UNEXPECTED"
        printf 'unsent %s %s\n' "$SCRIPT_NAME" $((REQUESTS - sent))
    } >"$file.part"
    mv "$file.part" "$file"
    printf '%s %s\n' "$COPY_START" "$end" >"$FAULTLINE_RESULTS/spans/$RUNNER_ID/$SCRIPT_NAME.$COPY.$$"
    ((UNEXPECTED == 0 && sent == REQUESTS))
}
