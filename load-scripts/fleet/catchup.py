#!/usr/bin/env python3
"""No push lost while every node is down: the service asks GitHub and GitLab to send again
(catchup.sh).

For each store (SQLite with one node, then a PostgreSQL fleet of two): the nodes start with
catch-up every second, a GitHub inbox and a GitLab inbox, each given its hook's catch-up
credentials, one with a stand-in GitHub's API (harness/github.py), the other with a stand-in
GitLab's (harness/gitlab.py). A few pushes of each reach a node but are recorded failed (the
provider gave up waiting), and catch-up must find them stored and ask nothing. Then every
node is stopped, and the stand-ins send their pushes from parallel clients, every one
failing. The nodes start again on the same store and ports. Within a bound, every push must
be stored exactly once, each stand-in must have seen exactly one request to send again per
failed push (a redelivery from GitHub, a resend from GitLab; none for the stored ones, none
twice after more passes), and each node's /metrics must reconcile: what catch-up found
failed, asked for and recovered, per inbox, adds up to that provider's failed pushes, and
each ledger's `started` to its outcomes. Each provider's checks are its own: a run says which
failed.

GitLab.com keeps resends to five a minute per hook (the stand-in keeps that limit by
default, and test_gitlab.py checks its 429); the scenario lifts it, as an administrator of a
self-managed GitLab can, so that its 100 resends (PUSHES) take seconds, not twenty minutes.
The service's waiting at GitLab's 429 is tested in the Rust suite (`tests/catchup_gitlab.rs`).
GitLab sends a resend before it answers, so a planted bug that asks again once the first
resend is stored (the cursor not saved) shows in /metrics, each pass finding every failed
event again, rather than in a second resend.

With `plant=NAME` the nodes are the service's `planted_catchup` example instead, the same node
with a bug planted in front of catch-up's store (`--plant NAME`: the cursor not saved, the
lease ignored, the stored-id check skipped), and the run passes only if the checks above catch
it for each provider run. `github` or `gitlab` runs that provider alone.

    catchup.py [--release] [sqlite|postgres ...] [github|gitlab] [plant=cursor-not-saved|lease-ignored|stored-check-skipped]
"""

import json
import time

import hookload
import nodes
from harness import github, gitlab, ingest, metrics
from harness.client import Conn
from harness.procs import Failure, wait_until
from harness.storm import run_parallel

PROVIDERS = ("github", "gitlab")
# The failed pushes per provider, and the parallel clients the stand-ins send them from.
# GitLab's are fewer: its resend is sent before GitLab answers, so a pass asks for them one
# after another, each waiting for the node's fsync; 100 keep the step short and still take
# five of GitLab's pages of 20.
PUSHES = {"github": 300, "gitlab": 100}
SENDERS = 16
# Pushes that reach a node but that the provider records failed: catch-up must ask for none.
LATE = 10
# Catch-up's period in the run: short, so that a second ask would show within seconds.
CATCHUP_EVERY = "1s"
# Every failed push stored within this; then passes enough for a second ask to show.
RECOVERY_S = 120
SETTLE_S = 5
POLL_S = 0.2
TOKENS = {"github": "ghp_catchup_load_token", "gitlab": "glpat-catchup-load-token"}
REPOSITORY, PROJECT, HOOK_ID = "octo/load", 4242, 1
STORES = {"sqlite": ["c1"], "postgres": ["c1", "c2"]}
PLANTS = ("cursor-not-saved", "lease-ignored", "stored-check-skipped")
# The service's example that runs its node with a plant (examples/webhook-ingest/examples/).
PLANTED = "planted_catchup"


def stand_in(vcs):
    if vcs == "github":
        return github.StandIn(REPOSITORY, HOOK_ID, TOKENS[vcs], "")
    return gitlab.StandIn(PROJECT, HOOK_ID, TOKENS[vcs], "", resend_limit=None)


def credentials(vcs, provider):
    """What an inbox of VCS is given for catch-up of the stand-in PROVIDER's hook."""
    if vcs == "github":
        return {"repository": REPOSITORY, "hook_id": HOOK_ID, "token": TOKENS[vcs]}
    return {"gitlab_url": provider.url, "project_id": PROJECT, "hook_id": HOOK_ID,
            "token": TOKENS[vcs]}


def start_nodes(run, names, db, stand_ins, plant, ports=None):
    args = ["--db", db, "--catchup-every", CATCHUP_EVERY]
    if "github" in stand_ins:
        args += ["--github-api", stand_ins["github"].url]
    if plant:
        args += ["--plant", plant]
    return [run.add(ingest.start(run.binary, run.work, args, name=name,
                                 port=(ports[i] if ports else 0)))
            for i, name in enumerate(names)]


def give_catchup(url, env, vcs, provider):
    conn = Conn(url)
    inbox = env["inboxes"][vcs]["id"]
    path = f"/api/{env['instance']}/digests/{env['digest']}/inboxes/{inbox}/catchup"
    body = json.dumps(credentials(vcs, provider))
    status, answer, _ = conn.request("PUT", path, body, {"authorization": f"Bearer {env['key']}",
                                                          "content-type": "application/json"})
    conn.close()
    if status != 200 or TOKENS[vcs] in json.dumps(answer):
        raise Failure(f"giving {vcs} catch-up credentials answered {status}")


def catchup_totals(urls, inbox):
    """Catch-up's counters of INBOX summed over the nodes: found failed, asked, recovered,
    refused."""
    scraped = [metrics.scrape(url) for url in urls]
    return {name: sum(m.total(f"webhook_ingest_catchup_{name}", inbox=inbox) for m in scraped)
            for name in ("found_failed_total", "redelivery_asked_total", "recovered_total",
                         "refused")}


def stored(run, store, db, vcs):
    """The deliveries of VCS stored: each delivery id starts with its provider's name."""
    rows = hookload.sqlite_rows(db) if store == "sqlite" else run.sql(hookload.ROWS_SQL)
    return {guid: row for guid, row in hookload.read_rows(rows).items()
            if guid.startswith(vcs + "-")}


def store_run(run, store, providers, plant):
    """The scenario on STORE; what each provider's checks found wrong."""
    names = STORES[store]
    db = str(run.work / "catchup.db") if store == "sqlite" else run.postgres().url
    stand_ins = {vcs: stand_in(vcs) for vcs in providers}
    try:
        return check_store(run, store, names, db, stand_ins, plant)
    finally:
        for provider in stand_ins.values():
            provider.stop()


def check_store(run, store, names, db, stand_ins, plant):
    servers = start_nodes(run, names, db, stand_ins, plant)
    urls = [s.url for s in servers]
    env = ingest.setup(urls[0], tuple(stand_ins), "catchup")
    inboxes = {vcs: env["inboxes"][vcs]["id"] for vcs in stand_ins}
    late = {vcs: {f"{vcs}-late-{n}" for n in range(LATE)} for vcs in stand_ins}
    for vcs, provider in stand_ins.items():
        provider.secret = env["inboxes"][vcs]["secret"]
        provider.targets = [url + ingest.hook_path(env, vcs) for url in urls]
        give_catchup(urls[0], env, vcs, provider)
        for guid in sorted(late[vcs]):
            provider.push(guid, ingest.push_body(vcs, guid, 1), recorded_as=0)
    wait_until(lambda: all(catchup_totals(urls, inboxes[vcs])["found_failed_total"] >= LATE
                           for vcs in stand_ins), RECOVERY_S, "catch-up looks at the late pushes")
    ports = [s.port for s in servers]
    for server in servers:
        server.stop()
    failed = {vcs: {f"{vcs}-down-{n:04d}" for n in range(PUSHES[vcs])} for vcs in stand_ins}
    run.say(f"{store}: every node stopped; "
            f"{' and '.join(f'{len(failed[vcs])} {vcs} pushes' for vcs in stand_ins)} "
            f"from {SENDERS} clients")
    send_failing(stand_ins, failed)
    servers = start_nodes(run, names, db, stand_ins, plant, ports)
    took = recover(run, store, db, urls, inboxes, failed)
    time.sleep(SETTLE_S)
    problems = {vcs: reconcile(stored(run, store, db, vcs), stand_ins[vcs].asked,
                               catchup_totals(urls, inboxes[vcs]), failed[vcs], late[vcs])
                for vcs in stand_ins}
    for url in urls:
        hookload.ledger(url)
    run.say(f"{store}: " + "; ".join(
        f"{vcs}: {len(failed[vcs])} failed pushes stored in {took[vcs]:.1f}s" if vcs in took
        else f"{vcs}: not all stored after {RECOVERY_S}s" for vcs in stand_ins))
    for server in servers:
        server.stop()
    if store == "postgres":
        run.pg.stop()
    return problems


def send_failing(stand_ins, failed):
    """Every push of FAILED sent by its stand-in from SENDERS clients at once; a failure if a
    node answered one."""
    jobs = [(vcs, guid) for vcs in stand_ins for guid in sorted(failed[vcs])]

    def client(i):
        mine = jobs[i::SENDERS]
        return sum(1 for n, (vcs, guid) in enumerate(mine)
                   if stand_ins[vcs].push(guid, ingest.push_body(vcs, guid, 1 + n % 3)))

    answered = sum(run_parallel(SENDERS, client))
    if answered:
        raise Failure(f"{answered} pushes were answered while every node was down")


def recover(run, store, db, urls, inboxes, failed):
    """Waits, RECOVERY_S at most, until each provider's failed pushes are stored and its
    asks recovered; the seconds each provider took, those that got there."""
    began, took = time.monotonic(), {}
    while len(took) < len(failed) and time.monotonic() - began < RECOVERY_S:
        for vcs, guids in failed.items():
            if vcs not in took and guids <= set(stored(run, store, db, vcs)) and \
                    catchup_totals(urls, inboxes[vcs])["recovered_total"] >= len(guids):
                took[vcs] = time.monotonic() - began
        time.sleep(POLL_S)
    return took


def reconcile(rows, asked, totals, failed, late):
    """What is wrong with one provider's run: the deliveries stored (ROWS), the stand-in's
    requests to send again (ASKED, delivery ids) and catch-up's counters (TOTALS), given the
    pushes that FAILED and the LATE ones the service holds."""
    problems = []
    if set(rows) != failed | late:
        problems.append(f"stored {len(rows)} deliveries, not the {len(failed | late)} pushed")
    if len(asked) != len(failed) or set(asked) != failed:
        problems.append(f"{len(asked)} requests to send again ({len(set(asked))} pushes) for "
                        f"{len(failed)} failed pushes; {len(set(asked) & late)} of the stored ones")
    want = {"found_failed_total": len(failed), "redelivery_asked_total": len(failed),
            "recovered_total": len(failed), "refused": 0}
    if totals != want:
        problems.append(f"/metrics says {totals}, not {want}")
    return problems


def scenario(run, args):
    plant = next((a.removeprefix("plant=") for a in args if a.startswith("plant=")), None)
    stores = [a for a in args if a in STORES] or list(STORES)
    providers = [a for a in args if a in PROVIDERS] or list(PROVIDERS)
    if plant:
        # The nodes of a planted run: the same node as the service's binary, its plant added.
        run.binary = ingest.build(example=PLANTED, release=run.release)
    for store in stores:
        if plant == "lease-ignored" and len(STORES[store]) < 2:
            run.say(f"{store}: one node, no lease for {plant} to ignore")
            continue
        problems = store_run(run, store, providers, plant)
        if plant is None:
            wrong = [f"{vcs}: {p}" for vcs in providers for p in problems[vcs]]
            if wrong:
                raise Failure("; ".join(wrong))
            continue
        for vcs in providers:
            if problems[vcs]:
                run.say(f"{store}: plant {plant} caught for {vcs}: {problems[vcs][0]}")
        missed = [vcs for vcs in providers if not problems[vcs]]
        if missed:
            raise Failure(f"plant {plant} on {store} went uncaught for {', '.join(missed)}")


if __name__ == "__main__":
    nodes.main("catchup", scenario,
               "catchup.sh [--release] [sqlite|postgres ...] [github|gitlab] [plant="
               + "|".join(PLANTS) + "]",
               pattern="sqlite|postgres|github|gitlab|plant=(" + "|".join(PLANTS) + ")",
               need=lambda args: (nodes.POSTGRESQL,) if "postgres" in (
                   [a for a in args if a in STORES] or list(STORES)) else ())
