#!/usr/bin/env python3
"""No push lost while every node is down: the service asks GitHub to redeliver (catchup.sh).

For each store (SQLite with one node, then a PostgreSQL fleet of two): the nodes start with a
stand-in GitHub's API (harness/github.py) and catch-up every second; an inbox is given the
hook's catch-up credentials; a few pushes reach a node but are recorded failed (GitHub gave up
waiting), and catch-up must find them stored and ask nothing. Then every node is stopped, and
the stand-in sends hundreds of pushes from parallel clients, every one failing. The nodes start
again on the same store and ports. Within a bound, every push must be stored exactly once, the
stand-in must have seen exactly one redelivery request per failed push (none for the stored
ones, none twice after more passes), and each node's /metrics must reconcile: what catch-up
found failed, asked for and recovered adds up to the failed pushes, and each ledger's
`started` to its outcomes.

With `plant=NAME` the nodes are the service's `planted_catchup` example instead, the same node
with a bug planted in front of catch-up's store (`--plant NAME`: the cursor not saved, the
lease ignored, the stored-id check skipped), and the run passes only if the checks above catch
it.

    catchup.py [--release] [sqlite|postgres ...] [plant=cursor-not-saved|lease-ignored|stored-check-skipped]
"""

import json
import time

import hookload
import nodes
from harness import github, ingest, metrics
from harness.client import Conn
from harness.procs import Failure, wait_until
from harness.storm import run_parallel

# The failed pushes, and the parallel clients the stand-in sends them from.
PUSHES = 300
SENDERS = 16
# Pushes that reach a node but that GitHub records failed: catch-up must ask for none.
LATE = 10
# Catch-up's period in the run: short, so that a second ask would show within seconds.
CATCHUP_EVERY = "1s"
# Every failed push stored within this; then passes enough for a second ask to show.
RECOVERY_S = 120
SETTLE_S = 5
TOKEN = "ghp_catchup_load_token"
STORES = {"sqlite": ["c1"], "postgres": ["c1", "c2"]}
PLANTS = ("cursor-not-saved", "lease-ignored", "stored-check-skipped")
# The service's example that runs its node with a plant (examples/webhook-ingest/examples/).
PLANTED = "planted_catchup"


def start_nodes(run, names, db, gh, plant, ports=None):
    args = ["--db", db, "--github-api", gh.url, "--catchup-every", CATCHUP_EVERY]
    if plant:
        args += ["--plant", plant]
    return [run.add(ingest.start(run.binary, run.work, args, name=name,
                                 port=(ports[i] if ports else 0)))
            for i, name in enumerate(names)]


def give_catchup(url, env):
    conn = Conn(url)
    inbox = env["inboxes"]["github"]["id"]
    path = f"/api/{env['instance']}/digests/{env['digest']}/inboxes/{inbox}/catchup"
    body = json.dumps({"repository": "octo/load", "hook_id": 1, "token": TOKEN})
    status, answer, _ = conn.request("PUT", path, body, {"authorization": f"Bearer {env['key']}",
                                                          "content-type": "application/json"})
    conn.close()
    if status != 200 or TOKEN in json.dumps(answer):
        raise Failure(f"giving catch-up credentials answered {status}")


def catchup_totals(urls):
    """Catch-up's counters summed over the nodes: found failed, asked, recovered, refused."""
    scraped = [metrics.scrape(url) for url in urls]
    return {name: sum(m.total(f"webhook_ingest_catchup_{name}") for m in scraped)
            for name in ("found_failed_total", "redelivery_asked_total", "recovered_total",
                         "refused")}


def stored(run, store, db):
    rows = hookload.sqlite_rows(db) if store == "sqlite" else run.sql(hookload.ROWS_SQL)
    return hookload.read_rows(rows)


def store_run(run, store, plant):
    names = STORES[store]
    db = str(run.work / "catchup.db") if store == "sqlite" else run.postgres().url
    gh = github.StandIn("octo/load", 1, TOKEN, "")
    try:
        check_store(run, store, names, db, gh, plant)
    finally:
        gh.stop()


def check_store(run, store, names, db, gh, plant):
    servers = start_nodes(run, names, db, gh, plant)
    urls = [s.url for s in servers]
    env = ingest.setup(urls[0], ("github",), "catchup")
    gh.secret = env["inboxes"]["github"]["secret"]
    gh.targets = [url + ingest.hook_path(env, "github") for url in urls]
    give_catchup(urls[0], env)
    late = [f"late-{n}" for n in range(LATE)]
    for guid in late:
        gh.push(guid, ingest.push_body("github", guid, 1), recorded_as=0)
    wait_until(lambda: catchup_totals(urls)["found_failed_total"] >= LATE, RECOVERY_S,
               "catch-up looks at the late pushes")
    ports = [s.port for s in servers]
    for server in servers:
        server.stop()
    run.say(f"{store}: every node stopped; {PUSHES} pushes from {SENDERS} clients")
    guids = [f"down-{n:04d}" for n in range(PUSHES)]
    def client(i):
        mine = guids[i::SENDERS]
        return sum(1 for g in mine if gh.push(g, ingest.push_body("github", g, 1 + i % 3)))

    answered = sum(run_parallel(SENDERS, client))
    if answered:
        raise Failure(f"{answered} pushes were answered while every node was down")
    began = time.monotonic()
    servers = start_nodes(run, names, db, gh, plant, ports)
    wait_until(lambda: len(stored(run, store, db)) >= PUSHES + LATE, RECOVERY_S,
               f"every push stored ({PUSHES + LATE})")
    took = time.monotonic() - began
    wait_until(lambda: catchup_totals(urls)["recovered_total"] >= PUSHES, RECOVERY_S,
               "every ask recovered")
    time.sleep(SETTLE_S)
    reconcile(run, store, db, gh, urls, set(guids), set(late))
    for url in urls:
        hookload.ledger(url)
    run.say(f"{store}: {PUSHES} failed pushes stored in {took:.1f}s, one ask each")
    for server in servers:
        server.stop()
    if store == "postgres":
        run.pg.stop()


def reconcile(run, store, db, gh, urls, failed, late):
    rows = stored(run, store, db)
    if set(rows) != failed | late:
        raise Failure(f"stored {len(rows)} deliveries, not the {len(failed | late)} pushed")
    asked = gh.redeliveries
    by_id = {r["id"]: r["guid"] for r in gh.records}
    asked_guids = [by_id[i] for i in asked]
    if len(asked) != len(failed) or set(asked_guids) != failed:
        raise Failure(f"{len(asked)} redelivery requests ({len(set(asked_guids))} pushes) for "
                      f"{len(failed)} failed pushes; {len(set(asked_guids) & late)} of the stored ones")
    totals = catchup_totals(urls)
    want = {"found_failed_total": len(failed), "redelivery_asked_total": len(failed),
            "recovered_total": len(failed), "refused": 0}
    if totals != want:
        raise Failure(f"/metrics says {totals}, not {want}")


def scenario(run, args):
    plant = next((a.removeprefix("plant=") for a in args if a.startswith("plant=")), None)
    stores = [a for a in args if a in STORES] or list(STORES)
    if plant:
        # The nodes of a planted run: the same node as the service's binary, its plant added.
        run.binary = ingest.build(example=PLANTED, release=run.release)
    for store in stores:
        if plant is None:
            store_run(run, store, None)
            continue
        if plant == "lease-ignored" and len(STORES[store]) < 2:
            run.say(f"{store}: one node, no lease for {plant} to ignore")
            continue
        try:
            store_run(run, store, plant)
        except Failure as caught:
            run.say(f"{store}: plant {plant} caught: {caught}")
            continue
        raise Failure(f"plant {plant} on {store} went uncaught")


if __name__ == "__main__":
    nodes.main("catchup", scenario,
               "catchup.sh [--release] [sqlite|postgres ...] [plant=" + "|".join(PLANTS) + "]",
               pattern="sqlite|postgres|plant=(" + "|".join(PLANTS) + ")",
               need=lambda args: (nodes.POSTGRESQL,) if "postgres" in (
                   [a for a in args if a in STORES] or list(STORES)) else ())
