#!/usr/bin/env python3
"""Three webhook-ingest nodes on one real PostgreSQL server, all on 127.0.0.1 (pg-fleet.sh).

Starts a throwaway PostgreSQL (temporary data directory, a free port, a password for the
service's role), starts three nodes on it at the same moment (their migrations race and must
not collide), and sends parallel load spread across them: pushes from GitHub, GitLab,
Bitbucket, Gitea and Forgejo, 20 copies of one delivery at once to different nodes (per
provider), bad signatures and ignored events. Then it reconciles: the deliveries and commits
in the database equal what was accepted, each redelivered delivery is stored once, and the
three ledgers (each node's /metrics) add up to what was sent, per outcome.
Before the load it runs the service's own PostgreSQL tests on the same server, those of its
group commit included.
Last, it stops PostgreSQL under the fleet: a push must be spooled (202 queued) and a
management request get 503; once the server is back the same node must store again and
drain the spooled push into the store. The database password must appear in no log line,
problem body or /errors. Everything it starts is stopped by PID at the end.

    pg_fleet.py [--release]
"""

import os
import re
import subprocess

import hookload
import nodes
from harness.client import get
from harness.procs import Failure

NODES = 3
# The service's own tests that need a PostgreSQL: every real provider payload stored exactly,
# and copies of one delivery at two nodes at once stored once.
SERVICE_TESTS = ["--test", "provider_fixtures", "--test", "postgres", "--test", "rotation",
                 "--test", "refusals"]
# The group commit's own tests: a failing delivery rolls back alone, a failed commit fails
# its whole batch, two batches never deadlock, past the queue a delivery is refused at once,
# a batch that panics fails alone and its writer goes on.
WRITER_TESTS = ["--lib", "--", "store::postgres::writer"]
# The lines of cargo's output worth showing: what ran (not the targets the filter emptied),
# what failed, what was left out.
SHOWN = re.compile(r"^(test result: ok\. [1-9]|running [1-9])|FAILED|panicked|not run|skipped")
PASSED = re.compile(r"^test result: ok\. (\d+) passed")
# The database of those tests, so that their rows stay out of the fleet's reconciliation.
TEST_DATABASE = "ingest_tests"


def cargo_tests(run, db_url, args, what):
    """`cargo test --workspace ARGS` against the database DB_URL; fails unless it passes
    with at least one test run. --workspace, so that CI reuses what its `cargo test
    --workspace` compiled."""
    run.say(f"cargo test --workspace {' '.join(args)}")
    env = dict(os.environ, WEBHOOK_INGEST_TEST_POSTGRES=db_url)
    done = subprocess.run(["cargo", "test", "--quiet", "--workspace",
                           *(["--release"] if run.release else []), *args],
                          env=env, capture_output=True, text=True)
    output = (done.stdout + done.stderr).splitlines()
    print("\n".join(line for line in output if SHOWN.search(line)), flush=True)
    passed = sum(int(m.group(1)) for m in map(PASSED.match, output) if m)
    if done.returncode != 0 or passed == 0:
        raise Failure(f"the {what} failed ({passed} passed, status {done.returncode})")


def load(run, pg):
    servers = run.nodes(pg.url, [f"i{i}" for i in range(1, NODES + 1)])
    urls = [s.url for s in servers]
    (migrations,), = run.sql("SELECT count(*) FROM schema_migrations")
    run.say(f"nodes {' '.join(urls)}, migrations applied: {migrations}")
    env = hookload.setup(urls[0])
    sent = hookload.fleet(env, urls)
    hookload.reconcile_fleet(sent, run.sql(hookload.ROWS_SQL), urls)
    return env, servers


def outage(run, pg, env, node):
    """PostgreSQL stopped under NODE: a push spooled, a look-up refused; back, the push
    drained and new ones stored. What the node said, for the password check."""
    run.say("stopping postgres under the fleet")
    pg.stop()
    said = [hookload.probe(env, node.url, "while-down", 202)]
    # A management request has no spool: it gets the 503, and its error chain goes to /errors.
    status, _ = get(node.url, "/api/instances/in_probe")
    if status != 503:
        raise Failure(f"a look-up while down answered {status}")
    pg.launch()
    said.append(hookload.probe(env, node.url, "after-restart", 201))
    hookload.drained([node.url])
    said.append(hookload.probe(env, node.url, "while-down", 200))
    status, errors = get(node.url, "/errors",
                         {"authorization": f"Bearer {os.environ['WEBHOOK_INGEST_ADMIN_TOKEN']}"})
    if status != 200 or b"store-unavailable" not in errors:
        raise Failure(f"/errors ({status}) does not show the store failure")
    return "\n".join(said) + errors.decode(errors="replace")


def scenario(run, _args):
    # The bearer token of /errors for this run, so the error groups can be searched for secrets.
    os.environ["WEBHOOK_INGEST_ADMIN_TOKEN"] = f"fleet-admin-{os.getpid()}"
    pg = run.postgres()
    (version,), = run.sql("SHOW server_version")
    run.say(f"postgres {version} on 127.0.0.1:{pg.port} (pid {pg.pid})")
    _, tests_url = pg.database(TEST_DATABASE)
    cargo_tests(run, tests_url, SERVICE_TESTS, "service's PostgreSQL tests")
    cargo_tests(run, tests_url, WRITER_TESTS, "group commit's PostgreSQL tests")
    env, servers = load(run, pg)
    said = outage(run, pg, env, servers[1])
    for server in servers:
        if pg.password in server.log_path.read_text(errors="replace"):
            raise Failure(f"the database password appears in {server.log_path.name}")
    if pg.password in said:
        raise Failure("the database password appears in a problem body or /errors")
    run.say("the database password is in no log line, problem body or /errors")


if __name__ == "__main__":
    nodes.main("pg-fleet", scenario, "pg-fleet.sh [--release]", need=("python3", nodes.POSTGRESQL))
