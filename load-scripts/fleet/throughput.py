#!/usr/bin/env python3
"""Deliveries stored per second by one node, on each store, at 1, 8 and 64 concurrent
senders (throughput.sh): the figure that says when one SQLite file is no longer enough. Then
the spool's row: deliveries acknowledged (202 queued, flushed to disk) per second by the
PostgreSQL node with its database stopped.

Each level sends DELIVERIES fresh pushes (1 to 5 commits each, the five providers in turn)
over keep-alive connections from Python threads to a fresh store, and counts the 201s. The
client is a Python process on the same 2-core machine, so the figures are what this machine
sustains end to end, not the service's ceiling. Everything it starts is stopped by PID.

    throughput.py [--release] [DELIVERIES]   (default 300 per level)
"""

import hookload
import nodes
from harness.procs import Failure

SENDERS = (1, 8, 64)
DELIVERIES = 300


def level(run, env, node, row, senders, deliveries):
    """One level of the table: DELIVERIES pushes from SENDERS threads; its rate, once every
    one was stored (acknowledged, for the spool's row)."""
    found = hookload.storm(env, run.work / f"{row}.{senders}.storm", f"tp-{row}-{senders}",
                           deliveries, senders, [node.url])
    say = "spool (postgres down)" if row == "spool" else row
    run.say(f"{say}: {found['line']}")
    counted = found["acknowledged" if row == "spool" else "stored"]
    if counted != deliveries:
        raise Failure("the spool refused deliveries" if row == "spool"
                      else f"{row} lost deliveries")
    return found["rate"]


def scenario(run, args):
    deliveries = int(args[-1]) if args else DELIVERIES
    pg = run.postgres()
    rates = {}
    for store in ("sqlite", "postgres"):
        node = run.node(store, str(run.work / "throughput.db") if store == "sqlite" else pg.url)
        env = hookload.setup(node.url)
        rates[store] = [level(run, env, node, store, n, deliveries) for n in SENDERS]
        if store == "sqlite":
            node.stop()
    # The spool row: the same node with PostgreSQL stopped. Its inboxes were seen, so each
    # delivery is verified, written to the spool and flushed before its 202 queued.
    pg.stop()
    rates["spool"] = [level(run, env, node, "spool", n, deliveries) for n in SENDERS]
    node.stop()
    print()
    print("| store | " + " | ".join(f"{n} sender{'s' if n > 1 else ''}" for n in SENDERS) + " |")
    print("|---" * (len(SENDERS) + 1) + "|")
    for row, figures in rates.items():
        print(f"| {row} | " + " | ".join(f"{r}/s" for r in figures) + " |")


if __name__ == "__main__":
    nodes.main("throughput", scenario, "throughput.sh [--release] [DELIVERIES]",
               pattern="[0-9]+", need=(nodes.POSTGRESQL,))
