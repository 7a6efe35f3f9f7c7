#!/usr/bin/env bash
# Three webhook-ingest nodes on one real PostgreSQL server, all on 127.0.0.1.
#
# Starts a throwaway PostgreSQL (temporary data directory, a free port, a password for the
# service's role), starts three nodes on it at the same moment (their migrations race
# and must not collide), and sends parallel load spread across them: pushes from GitHub,
# GitLab, Bitbucket, Gitea and Forgejo, 20 copies of one delivery at once to different
# nodes (per provider), bad signatures and ignored events. Then it reconciles: the deliveries and
# commits in the database equal what was accepted, each redelivered delivery is stored once,
# and the three ledgers (each node's /metrics) add up to what was sent, per outcome.
# Before the load it runs the service's own PostgreSQL tests on the same server, those of its
# group commit included.
# Last, it stops PostgreSQL under the fleet: a push must be spooled (202 queued) and a
# management request get 503; once the server is back the same node must store again and
# drain the spooled push into the store. The database password must appear in no
# log line, problem body or /errors. Everything it starts is stopped by PID at the end.
#
# usage: load-scripts/fleet/pg-fleet.sh [--release]
# needs: cargo, python3, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

NODES=3
# The bearer token of /errors for this run, so the error groups can be searched for secrets.
export WEBHOOK_INGEST_ADMIN_TOKEN=fleet-admin-$$

fleet_require python3
fleet_begin '[--release]' '' "$@"
work=$FLEET_WORK
pg_start "$work"
echo "pg-fleet: postgres $(pg_sql 'SHOW server_version') on 127.0.0.1:$PG_PORT (pid $PG_PID)"

# The service's own tests that need a PostgreSQL: every real provider payload stored exactly,
# and copies of one delivery at two nodes at once stored once.
# --workspace, so that CI reuses what its `cargo test --workspace` compiled.
echo "pg-fleet: cargo test --workspace --test provider_fixtures --test postgres --test rotation --test failures"
# A database of their own, so that their rows stay out of the fleet's reconciliation.
pg_sql "CREATE DATABASE ingest_tests OWNER $PG_USER"
WEBHOOK_INGEST_TEST_POSTGRES=${PG_URL%/*}/ingest_tests cargo test --quiet --workspace "${BUILD_FLAGS[@]}" \
    --test provider_fixtures --test postgres --test rotation --test failures 2>&1 | grep -E '^(test result|running)|FAILED|panicked|not run|skipped' &&
    tested=0 || tested=${PIPESTATUS[0]}
if ((tested != 0)); then
    echo "pg-fleet: the service's PostgreSQL tests failed" >&2
    exit 1
fi
# The group commit's own tests: a failing delivery rolls back alone, a failed commit fails
# its whole batch, two batches never deadlock, past the queue a delivery is refused at once,
# a batch that panics fails alone and its writer goes on.
echo "pg-fleet: cargo test --workspace --lib -- store::postgres::writer"
WEBHOOK_INGEST_TEST_POSTGRES=${PG_URL%/*}/ingest_tests cargo test --quiet --workspace "${BUILD_FLAGS[@]}" \
    --lib -- store::postgres::writer 2>&1 | grep -E '^(test result: ok. [1-9]|running [1-9])|FAILED|panicked|not run|skipped' &&
    tested=0 || tested=${PIPESTATUS[0]}
if ((tested != 0)); then
    echo "pg-fleet: the group commit's PostgreSQL tests failed" >&2
    exit 1
fi

names=()
for i in $(seq 1 "$NODES"); do
    names+=("i$i")
done
ingest_start_all "$PG_URL" "${names[@]}"
urls=("${INGEST_URLS[@]}")
echo "pg-fleet: nodes ${urls[*]}, migrations applied: $(pg_sql 'SELECT count(*) FROM schema_migrations')"

"${HOOKLOAD[@]}" setup "${urls[0]}" "$work/env.json"
"${HOOKLOAD[@]}" fleet "$work/env.json" "$work/sent.json" "${urls[@]}"
pg_sql "COPY ($("${HOOKLOAD[@]}" rows-sql)) TO STDOUT" >"$work/rows.tsv"
"${HOOKLOAD[@]}" reconcile-fleet "$work/sent.json" "$work/rows.tsv" "${urls[@]}"

echo "pg-fleet: stopping postgres under the fleet"
pg_stop
"${HOOKLOAD[@]}" probe "$work/env.json" "${urls[1]}" while-down 202 | tee "$work/probe.out"
# A management request has no spool: it gets the 503, and its error chain goes to /errors.
down=$(curl -s -o /dev/null -w '%{http_code}' "${urls[1]}/api/instances/in_probe")
[[ $down == 503 ]] || { echo "pg-fleet: a look-up while down answered $down" >&2; exit 1; }
pg_restart
"${HOOKLOAD[@]}" probe "$work/env.json" "${urls[1]}" after-restart 201
"${HOOKLOAD[@]}" drained "${urls[1]}"
"${HOOKLOAD[@]}" probe "$work/env.json" "${urls[1]}" while-down 200
curl -fsS -H "Authorization: Bearer $WEBHOOK_INGEST_ADMIN_TOKEN" "${urls[1]}/errors" >"$work/errors.json"
grep -q store-unavailable "$work/errors.json" || {
    echo "pg-fleet: /errors does not show the store failure" >&2
    exit 1
}
for file in "$work"/i*.log "$work/probe.out" "$work/errors.json"; do
    if grep -qF "$PG_PASSWORD" "$file"; then
        echo "pg-fleet: the database password appears in ${file##*/}" >&2
        exit 1
    fi
done
echo "pg-fleet: the database password is in no log line, problem body or /errors"
echo "pg-fleet: OK"
