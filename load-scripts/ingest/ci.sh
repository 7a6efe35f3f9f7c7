#!/usr/bin/env bash
# Runs the harness's own checks (load-scripts/harness/test_harness.py), then builds the
# webhook ingestion service, starts it on a fresh temporary database and a free
# port of 127.0.0.1, runs setup.sh, the classic 20 x 50 ignored Bitbucket pull requests,
# a mixed run of every scenario at once, and reconcile.sh; checks that no key or secret reached
# the service's log; stops the server by its PID. Exits non-zero on any failure.
#
#   load-scripts/ingest/ci.sh     # debug build: reuses what `cargo test` compiled
#   CI_PROFILE=release load-scripts/ingest/ci.sh
set -euo pipefail
LOAD_DIR=$(cd "$(dirname "$0")" && pwd)
cd "$LOAD_DIR/../.."
source "$LOAD_DIR/service.sh"

CLASSIC_CLIENTS=20
CLASSIC_REQUESTS=50
MIXED_CLIENTS=4
MIXED_REQUESTS=20

began=$(date +%s%N)
require ci.sh curl

echo "== the harness's own checks"
(cd "$LOAD_DIR/.." && python3 -m unittest -q harness.test_harness)

build_service
bin=$SERVICE_BIN

work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-ci.XXXXXX")
cleanup() {
    local status=$?
    stop_service
    ((status == 0)) || show_service_log ci.sh "$work"
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT

echo "== start"
start_service "$work" --db "$work/ingest.db"
port=$SERVER_PORT
echo "server $SERVER_PID on 127.0.0.1:$port, database $work/ingest.db"

export FAULTLINE_URL=http://127.0.0.1:$port
export FAULTLINE_ENV=$work/env
export FAULTLINE_RESULTS=$work/results

curl -sf --max-time 5 "$FAULTLINE_URL/health" >/dev/null

echo "== setup"
"$LOAD_DIR/setup.sh"
"$LOAD_DIR/reconcile.sh" begin

echo "== classic: $CLASSIC_CLIENTS x $CLASSIC_REQUESTS ignored Bitbucket pull requests"
"$LOAD_DIR/runner.sh" "$CLASSIC_CLIENTS" "post-bitbucket-pull-request.sh $CLASSIC_REQUESTS"

echo "== mixed: $MIXED_CLIENTS x $MIXED_REQUESTS of every scenario at once"
"$LOAD_DIR/runner.sh" "$MIXED_CLIENTS" \
    "post-github-push.sh $MIXED_REQUESTS" \
    "post-forge-push.sh $MIXED_REQUESTS" \
    "post-bitbucket-pull-request.sh $MIXED_REQUESTS" \
    "post-bad-signature.sh $MIXED_REQUESTS" \
    "post-malformed.sh $MIXED_REQUESTS" \
    "post-duplicate-delivery.sh $MIXED_REQUESTS" \
    "post-new-digest.sh $MIXED_REQUESTS" \
    "query-real-instance.sh $MIXED_REQUESTS" \
    "query-non-existent-instance.sh $MIXED_REQUESTS"

echo "== reconcile"
"$LOAD_DIR/reconcile.sh"

echo "== no key or secret in the log"
stop_service
# shellcheck disable=SC1090
source "$FAULTLINE_ENV"
log=$(<"$work/server.log")
for secret in "$API_KEY" "$GITHUB_SECRET" "$GITLAB_SECRET" "$BITBUCKET_SECRET" \
    "$GITEA_SECRET" "$FORGEJO_SECRET"; do
    if [[ $log == *"$secret"* ]]; then
        echo "ci.sh: a key or secret appears in the server log" >&2
        exit 1
    fi
done
echo "none in $(wc -l <"$work/server.log") log lines"

elapsed=$((($(date +%s%N) - began) / 1000000))
printf 'ci.sh: passed in %d.%03ds\n' $((elapsed / 1000)) $((elapsed % 1000))
