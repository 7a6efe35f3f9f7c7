"""Parallel clients that prove they ran at once and check their own totals, and the push
storm the crash, outage and throughput runs send."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

from .client import Conn, label
from .ingest import hook_path, push_body
from .procs import Failure
from .signing import PROVIDERS, provider_headers

# A storm's pushes carry 1 to MAX_COMMITS - 1 commits.
MAX_COMMITS = 6
# A sender that got no answer (the node is down) waits this long before its next
# delivery, as a provider backs off, so a storm outlasts a node's restart.
NO_ANSWER_PAUSE_S = 0.2
# The most deliveries one storm may send, whatever it is asked: keeps every run bounded.
MAX_STORM_DELIVERIES = 1_000_000


class Tally:
    """What parallel clients sent and saw, and the most requests they had in flight at once:
    the proof that they ran together, not one after another."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts: Counter = Counter()
        self.in_flight = 0
        self.peak = 0
        self.failures: list[str] = []

    def begin(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def end(self, key) -> None:
        with self.lock:
            self.in_flight -= 1
            self.counts[key] += 1

    def check(self, expected: dict, clients: int) -> None:
        """Fails unless the tally is exactly `expected` and the clients overlapped."""
        if self.failures:
            raise Failure(f"{len(self.failures)} requests failed: {self.failures[:5]}")
        if clients > 1 and self.peak < 2:
            raise Failure(f"the {clients} clients ran one after another: peak {self.peak} in flight")
        if dict(self.counts) != dict(expected):
            raise Failure(f"tally {dict(self.counts)} != expected {dict(expected)}")


def run_parallel(clients: int, work) -> list:
    """Runs work(i) on `clients` threads released together by one barrier; their results.
    Fails when more than one was asked for but never two ran at once."""
    start = threading.Barrier(clients)
    results = [None] * clients
    running = Tally()

    def body(i):
        start.wait()
        running.begin()
        try:
            results[i] = work(i)
        finally:
            running.end("done")

    threads = [threading.Thread(target=body, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if running.counts["done"] != clients:
        raise Failure(f"{clients - running.counts['done']} of {clients} clients did not finish")
    if clients > 1 and running.peak < 2:
        raise Failure(f"the {clients} clients ran one after another")
    return results


def storm(env: dict, urls: list[str], log_path: str, prefix: str, senders: int,
          count: int | None = None, seconds: float | None = None,
          redeliver_every: int = 0) -> tuple[list[dict], float]:
    """Pushes with fresh delivery ids `PREFIX-N`, each to the next node, from `senders`
    threads: `count` of them, or as many as fit in `seconds`. Every `redeliver_every`-th is
    sent a second time at once to the node after. Each answer is appended to `log_path`
    as one JSON line the moment it comes, so a script can watch the storm (and kill an
    node in the middle of it). Returns the log's entries of this storm and its seconds."""
    if count is None and seconds is None:
        raise ValueError("a storm needs a count or a duration")
    total = min(count if count is not None else MAX_STORM_DELIVERIES, MAX_STORM_DELIVERIES)
    stop = time.monotonic() + seconds if seconds is not None else None
    lock = threading.Lock()
    numbers = iter(range(total))
    log = open(log_path, "a")

    def send(conns, i, vcs, delivery, commits, body):
        status, answer, _ = conns[i].request("POST", hook_path(env, vcs), body, provider_headers(
            vcs, env["inboxes"][vcs]["secret"], delivery, body))
        line = json.dumps({"delivery": delivery, "vcs": vcs, "commits": commits, "node": i,
                           "opened": conns[i].opened, "t": time.time(), "status": status,
                           "label": label(status, answer)})
        with lock:
            log.write(line + "\n")
            log.flush()
        if status == 0:
            time.sleep(NO_ANSWER_PAUSE_S)

    def work(_):
        conns = [Conn(url) for url in urls]
        while stop is None or time.monotonic() < stop:
            with lock:
                n = next(numbers, None)
            if n is None:
                return
            vcs, commits = PROVIDERS[n % len(PROVIDERS)], 1 + n % (MAX_COMMITS - 1)
            delivery = f"{prefix}-{n}"
            body = push_body(vcs, delivery, commits)
            send(conns, n % len(urls), vcs, delivery, commits, body)
            if redeliver_every and n % redeliver_every == 0:
                send(conns, (n + 1) % len(urls), vcs, delivery, commits, body)

    started = time.monotonic()
    try:
        run_parallel(senders, work)
    finally:
        log.close()
    elapsed = time.monotonic() - started
    entries = [json.loads(line) for line in open(log_path) if f'"{prefix}-' in line]
    return entries, elapsed
