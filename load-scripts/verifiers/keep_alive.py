"""Real deliveries behind nginx's kept-alive upstream connections, interleaved with forged
ones whose large bodies the intake refuses before reading (keep-alive.sh starts both servers).

Each of CLIENTS threads alternates, ROUNDS times per body size, a forged delivery (no
signature, or a malformed one) with a real one signed as GitHub signs it. Every real delivery
must be answered 200 and every forged one 401: before the fault layer drained what a refusal
left of its body, hyper closed the upstream connection without a word and nginx answered a
real delivery queued behind it 502. Then the ledger on /metrics, read straight from the intake
before and after, must have counted each request once: the concurrency is proven by the peak
of requests in flight at once, and the totals are checked against the script's own tally.

    python3 keep_alive.py PROXY_ADDR INTAKE_ADDR SECRET
"""

import hashlib
import hmac
import http.client
import json
import re
import sys
import threading
import uuid

CLIENTS = 8
ROUNDS = 50
# The forged bodies: small, and the two sizes that lost real deliveries behind nginx.
SIZES = [1_000, 100_000, 1_000_000]


class Tally:
    """What the clients sent and saw, and the most requests they had in flight at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = {}
        self.in_flight = 0
        self.peak = 0
        self.failures = []

    def begin(self):
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def end(self, kind, status):
        with self.lock:
            self.in_flight -= 1
            self.statuses[(kind, status)] = self.statuses.get((kind, status), 0) + 1


def post(conn, tally, kind, body, headers):
    tally.begin()
    status = None
    try:
        conn.request("POST", "/hooks/repo", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        status = response.status
    finally:
        tally.end(kind, status)
    return status


def client(proxy, secret, tally, start):
    host, port = proxy.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    start.wait()
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
            digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            real = {"x-github-event": "push", "x-github-delivery": str(uuid.uuid4()),
                    "x-hub-signature-256": "sha256=" + digest,
                    "content-type": "application/json"}
            try:
                post(conn, tally, "real", body, real)
            except (OSError, http.client.HTTPException) as error:
                tally.failures.append(f"real {size}: {error!r}")
                conn.close()
    conn.close()


def scrape(intake):
    host, port = intake.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    values = {}
    for name, labels, value in re.findall(r"^(faultline_\w+)(\{[^}]*\})? (\d+)$", text, re.M):
        values[name + (labels or "")] = int(value)
    return values


def main():
    proxy, intake, secret = sys.argv[1:4]
    before = scrape(intake)
    tally = Tally()
    start = threading.Event()
    threads = [threading.Thread(target=client, args=(proxy, secret, tally, start))
               for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join()
    after = scrape(intake)

    each = ROUNDS * len(SIZES) * CLIENTS
    print(f"keep_alive.py: {2 * each} deliveries from {CLIENTS} clients, peak {tally.peak} "
          f"in flight; answers {sorted((k, s, n) for (k, s), n in tally.statuses.items())}")
    assert not tally.failures, tally.failures[:5]
    assert tally.peak >= CLIENTS // 2, f"the clients ran one after another: peak {tally.peak}"
    # Unsigned ones are refused 401, malformed ones 400: every other round.
    expected = {("real", 200): each, ("forged", 401): each // 2, ("forged", 400): each // 2}
    assert tally.statuses == expected, tally.statuses

    def grew(series):
        return after.get(series, 0) - before.get(series, 0)

    # The scrape before was in flight while it was rendered, and counted ok after it.
    outcome = 'faultline_requests_total{outcome="%s"}'
    assert grew(outcome % "ok") == each + 1, ("ok", grew(outcome % "ok"))
    assert grew(outcome % "handled") == each, ("handled", grew(outcome % "handled"))
    for other in ["rejected", "service_error", "panicked", "aborted", "cancelled"]:
        assert grew(outcome % other) == 0, (other, grew(outcome % other))
    assert after["faultline_in_flight"] == 1, after["faultline_in_flight"]
    drained = grew('faultline_unread_bodies_total{action="drained"}')
    closed = grew('faultline_unread_bodies_total{action="closed"}')
    assert (drained, closed) == (each, 0), (drained, closed)
    assert grew("faultline_unread_body_bytes_total") == ROUNDS * CLIENTS * sum(SIZES)
    print(f"keep_alive.py: ledger ok, {drained} refused bodies drained, none closed")


if __name__ == "__main__":
    main()
