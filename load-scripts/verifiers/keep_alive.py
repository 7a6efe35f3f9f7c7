"""Real deliveries behind nginx's kept-alive upstream connections, interleaved with forged
ones whose large bodies the intake refuses before reading (keep-alive.sh): nginx (upstream
keepalive 16) in front of examples/webhook-intake's `Verified` GitHub route, both started here
and stopped by their PIDs.

Each of CLIENTS threads alternates, ROUNDS times per body size, a forged delivery (no
signature, or a malformed one) with a real one signed as GitHub signs it. Every real delivery
must be answered 200 and every forged one 401: before the fault layer drained what a refusal
left of its body, hyper closed the upstream connection without a word and nginx answered a
real delivery queued behind it 502. Then the ledger on /metrics, read straight from the intake
before and after, must have counted each request once: the concurrency is proven by the peak
of requests in flight at once, and the totals are checked against the script's own tally. nginx's error log must show no upstream connection lost.

    python3 keep_alive.py INTAKE_BIN
"""

import http.client
import json
import re
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import metrics, nginx, script  # noqa: E402
from harness.procs import Failure, Server  # noqa: E402
from harness.signing import github_headers  # noqa: E402
from harness.storm import Tally, run_parallel  # noqa: E402

CLIENTS = 8
ROUNDS = 50
# The forged bodies: small, and the two sizes that lost real deliveries behind nginx.
SIZES = [1_000, 100_000, 1_000_000]


SECRET = "a github webhook secret"
# What nginx says when it lost an upstream connection.
LOST = re.compile(r"upstream prematurely closed|Broken pipe|reset by peer")


def post(conn, tally, kind, body, headers):
    tally.begin()
    status = None
    try:
        conn.request("POST", "/hooks/repo", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        status = response.status
    finally:
        tally.end((kind, status))
    return status


def client(port, secret, tally):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for size in SIZES:
        forged_body = b"x" * size
        for n in range(ROUNDS):
            forged = {"x-github-event": "push", "x-github-delivery": str(uuid.uuid4()),
                      "content-type": "application/json"}
            if n % 2:
                forged["x-hub-signature-256"] = "sha256=not-hex"
            try:
                post(conn, tally, "forged", forged_body, forged)
            except (OSError, http.client.HTTPException) as error:
                tally.failures.append(f"forged {size}: {error!r}")
                conn.close()
            body = json.dumps({"ref": "refs/heads/main", "size": size, "n": n}).encode()
            real = github_headers(secret, str(uuid.uuid4()), body)
            try:
                post(conn, tally, "real", body, real)
            except (OSError, http.client.HTTPException) as error:
                tally.failures.append(f"real {size}: {error!r}")
                conn.close()
    conn.close()


def check(proxy, intake):
    before = metrics.scrape(intake.url)
    tally = Tally()
    run_parallel(CLIENTS, lambda _: client(proxy.port, SECRET, tally))
    after = metrics.scrape(intake.url)

    each = ROUNDS * len(SIZES) * CLIENTS
    print(f"keep_alive.py: {2 * each} deliveries from {CLIENTS} clients, peak {tally.peak} "
          f"in flight; answers {sorted((k, s, n) for (k, s), n in tally.counts.items())}")
    assert tally.peak >= CLIENTS // 2, f"the clients ran one after another: peak {tally.peak}"
    # Unsigned ones are refused 401, malformed ones 400: every other round.
    tally.check({("real", 200): each, ("forged", 401): each // 2, ("forged", 400): each // 2},
                CLIENTS)

    def grew(series):
        return after.value(series) - before.value(series)

    # The scrape before was in flight while it was rendered, and counted ok after it.
    outcome = 'faultline_requests_total{outcome="%s"}'
    assert grew(outcome % "ok") == each + 1, ("ok", grew(outcome % "ok"))
    assert grew(outcome % "handled") == each, ("handled", grew(outcome % "handled"))
    for other in ["rejected", "service_error", "panicked", "aborted", "cancelled"]:
        assert grew(outcome % other) == 0, (other, grew(outcome % other))
    assert after.in_flight == 1, after.in_flight
    problem = metrics.unreconciled(after.started, after.outcomes(), after.in_flight)
    assert problem is None, problem
    drained = grew('faultline_unread_bodies_total{action="drained"}')
    closed = grew('faultline_unread_bodies_total{action="closed"}')
    assert (drained, closed) == (each, 0), (drained, closed)
    assert grew("faultline_unread_body_bytes_total") == ROUNDS * CLIENTS * sum(SIZES)
    print(f"keep_alive.py: ledger ok, {drained} refused bodies drained, none closed")


def body(run: script.Run, intake_bin: str) -> None:
    intake = run.add(Server("intake", [intake_bin, "--port", 0, "--inbox", f"repo=github:{SECRET}"],
                            run.work))
    proxy = run.add(nginx.start(run.work, intake.port))
    try:
        check(proxy, intake)
    except AssertionError as failed:
        raise Failure(f"{failed!r}; nginx's errors: {nginx.error_log(run.work)[-600:]}") from None
    lost = LOST.findall(nginx.error_log(run.work))
    if lost:
        raise Failure(f"nginx lost upstream connections: {lost[:3]}")
    print("keep-alive.sh: every real delivery behind nginx answered 200, every request counted once")


def main():
    intake_bin = sys.argv[1]
    script.main("keep-alive.sh", lambda run: body(run, intake_bin))


if __name__ == "__main__":
    main()
