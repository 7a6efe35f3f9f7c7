#!/usr/bin/env python3
"""Crash safety, shown: a node killed with SIGKILL in the middle of a parallel push storm
loses nothing it answered, and stores nothing by halves (crash.sh).

For each store (SQLite, then a throwaway PostgreSQL): starts a node, sends a storm of pushes
from parallel senders, kills the node with SIGKILL once part of the storm is answered,
restarts it on the same store and port while the storm goes on, and then checks that every
delivery answered 2xx is stored once with all its commits, that every stored delivery is
whole, and that resending every delivery answers "duplicate" for exactly the stored ones (and
stores the rest, whole). Everything it starts is stopped by PID.

    crash.py [--release] [sqlite|postgres ...]
"""

import signal

import hookload
import nodes

# The storm: enough deliveries that the kill lands with many in flight, few enough for CI.
STORM_DELIVERIES = 1500
STORM_SENDERS = 16
# The kill comes once this many answers are in: well inside the storm.
KILL_AFTER = 400
# How long the storm may take to reach KILL_AFTER answers before the run is called stuck.
KILL_WAIT_S = 120
STORES = ("sqlite", "postgres")


def rows(run, store, db):
    """The store's delivery rows, as hookload reads them."""
    return hookload.sqlite_rows(db) if store == "sqlite" else run.sql(hookload.ROWS_SQL)


def crash_run(run, store):
    db = run.work / "crash.db" if store == "sqlite" else run.postgres().url
    node = run.node(f"crash-{store}", db)
    env = hookload.setup(node.url)
    log = run.work / f"{store}.storm"
    log.touch()
    storm = nodes.Background(lambda: hookload.storm(env, log, f"storm-{store}",
                                                    STORM_DELIVERIES, STORM_SENDERS, [node.url]))
    nodes.wait_for_lines(log, KILL_AFTER, KILL_WAIT_S, storm)
    node.stop(signal.SIGKILL)
    run.say(f"{store}: SIGKILL after {nodes.lines(log)} answers; restarting on port {node.port}")
    node = run.restart(node, db)
    print(storm.join()["line"])
    # What the store could not take at once was spooled (202 queued): drained first.
    hookload.drained([node.url])
    hookload.reconcile_crash(env, log, rows(run, store, db), [node.url])
    hookload.reconcile_complete(log, rows(run, store, db))
    node.stop()
    if store == "postgres":
        run.pg.stop()
    run.say(f"{store}: OK")


def scenario(run, args):
    for store in args or STORES:
        crash_run(run, store)


if __name__ == "__main__":
    nodes.main("crash", scenario, "crash.sh [--release] [sqlite|postgres ...]",
               pattern="sqlite|postgres",
               need=lambda args: (nodes.POSTGRESQL,) if "postgres" in (args or STORES) else ())
