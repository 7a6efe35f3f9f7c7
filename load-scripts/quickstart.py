"""The quick-start example as a user runs it (quickstart.sh): starts examples/quickstart on a
free port of 127.0.0.1, sends a success, a handled error, a rejection and a panic, checks
each answer and the exact counts on /metrics, checks the inbox page, then sends SIGTERM
while a request's body is half sent and checks that the server stops accepting, still
answers that request, and exits 0 with every request counted.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ingest, metrics, script  # noqa: E402
from harness.client import Conn  # noqa: E402
from harness.procs import Failure, Server  # noqa: E402

PACKAGE = "quickstart"
JSON = {"content-type": "application/json"}
# What curl sends with `-d`: a form, which the JSON extractor refuses.
FORM = {"content-type": "application/x-www-form-urlencoded"}
# Exact counts once the four requests are answered: the scrape itself is the one in flight.
EXPECTED_SERIES = (
    'faultline_requests_total{outcome="ok"} 1',
    'faultline_requests_total{outcome="handled"} 1',
    'faultline_requests_total{outcome="rejected"} 1',
    'faultline_requests_total{outcome="panicked"} 1',
    'faultline_requests_total{outcome="service_error"} 0',
    'faultline_requests_total{outcome="cancelled"} 0',
    'faultline_in_flight 1',
    'faultline_reports_total{disposition="reported"} 3',
    'faultline_errors_total{route="/hooks",code="unsupported-event",status="422"} 1',
    'faultline_errors_total{route="/hooks",code="unsupported-media-type",status="415"} 1',
    'faultline_errors_total{route="/bug",code="panic",status="500"} 1',
)
# The push sent half before SIGTERM and half after.
HALF_SENT = b'{"event":"push","commits":3}'
HALF = 12
# Scrapes while waiting for the half-sent push to start, this far apart.
MAX_SCRAPES = 100
SCRAPE_PAUSE_S = 0.1
# How long the server must keep running with a request in flight after SIGTERM before the
# script checks it still does, and how long a probe of its closed listener may wait.
DRAIN_PAUSE_S = 0.5
PROBE_TIMEOUT_S = 2
# How long the in-flight push's answer, and the server's exit after it, may take.
ANSWER_TIMEOUT_S = 10


def expect(url: str, method: str, path: str, status: int, code: str | None,
           body: bytes | None = None, headers: dict | None = None) -> tuple[str, object]:
    """One request on a connection of its own: its body and headers, once its status is
    `status` and, for a problem, its content type problem+json and its `code` `code`."""
    conn = Conn(url)
    got, answer, response = conn.raw(method, path, body, headers)
    conn.close()
    text = answer.decode(errors="replace")
    if got != status:
        raise Failure(f"{method} {path}: status {got}, expected {status}")
    if code is not None:
        if not response.getheader("content-type", "").lower().startswith("application/problem+json"):
            raise Failure(f"{method} {path}: not problem+json")
        if json.loads(text).get("code") != code:
            raise Failure(f"{method} {path}: code is not {code}: {text}")
    return text, response


def check_answers(url: str) -> None:
    expect(url, "POST", "/hooks", 202, None, b'{"event":"push","commits":2}', JSON)
    text, _ = expect(url, "POST", "/hooks", 422, "unsupported-event",
                     b'{"event":"issues","commits":1}', JSON)
    if "event `issues` is not handled here" not in text:
        raise Failure("the 422 lacks its message")
    expect(url, "POST", "/hooks", 415, "unsupported-media-type", b'{"event":"push","commits":2}',
           FORM)
    text, _ = expect(url, "GET", "/bug", 500, "panic")
    if "indexed past the end" in text:
        raise Failure("the panic's text reached the client")
    text, _ = expect(url, "GET", "/metrics", 200, None)
    lines = set(text.splitlines())
    for line in EXPECTED_SERIES:
        if line not in lines:
            raise Failure(f"/metrics lacks `{line}`: {text}")
    text, response = expect(url, "GET", "/errors/inbox", 200, None)
    if not response.getheader("content-security-policy", "").startswith("default-src 'none'"):
        raise Failure("the inbox has no CSP")
    for code in ("unsupported-event", "unsupported-media-type", "panic"):
        if code not in text:
            raise Failure(f"the inbox does not show {code}")


def scrapes_until_in_flight(url: str) -> int:
    """Scrapes until the half-sent push has started (two in flight: it and the scrape); how
    many scrapes it took, each an ok of its own."""
    for scrapes in range(1, MAX_SCRAPES + 1):
        conn = Conn(url)
        status, text, _ = conn.raw("GET", "/metrics")
        conn.close()
        if status == 200 and metrics.Metrics(text.decode()).in_flight == 2:
            return scrapes
        time.sleep(SCRAPE_PAUSE_S)
    raise Failure("the half-sent push never started")


def read_answer(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := sock.recv(4096):
            answer += chunk
    except OSError:
        pass
    return answer


def check_shutdown(server: Server) -> int:
    """SIGTERM while a push's body is half sent; how many scrapes waited for it."""
    head = (b"POST /hooks HTTP/1.1\r\nhost: quickstart\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n" % len(HALF_SENT))
    with socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_TIMEOUT_S) as sock:
        sock.sendall(head + HALF_SENT[:HALF])
        scrapes = scrapes_until_in_flight(server.url)
        server.signal(signal.SIGTERM)
        time.sleep(DRAIN_PAUSE_S)
        if not server.alive():
            raise Failure("the server exited with a request in flight")
        probe = Conn(server.url, timeout_s=PROBE_TIMEOUT_S)
        if probe.raw("GET", "/metrics")[0] != 0:
            raise Failure("the server still accepts after SIGTERM")
        probe.close()
        sock.sendall(HALF_SENT[HALF:])
        answer = read_answer(sock)
    if not answer.startswith(b"HTTP/1.1 202"):
        raise Failure(f"the in-flight push was not answered 202: {answer[:200]!r}")
    return scrapes


def body(run: script.Run) -> None:
    binary = ingest.build(PACKAGE, PACKAGE)
    server = run.add(Server(PACKAGE, [binary, "--port", 0], run.work))
    first = server.out_path.read_text().splitlines()[0]
    if not re.fullmatch(r"listening on 127\.0\.0\.1:\d+", first):
        raise Failure("the first line is not `listening on ADDR`")
    print(f"quickstart {first}")
    check_answers(server.url)
    scrapes = check_shutdown(server)
    try:
        server.process.wait(ANSWER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Failure("the server did not exit after its last request") from None
    last = server.out_path.read_text().splitlines()[-1]
    status = server.stop()
    if status != 0:
        raise Failure(f"the server exited {status}")
    # ok: the first push, the scrape, the inbox, the scrapes while waiting, the push in flight.
    ok = 3 + scrapes + 1
    expected = (f"stopped after {ok + 3} requests: {ok} ok, 1 handled, 1 rejected, 1 panicked, "
                "0 in flight")
    if last != expected:
        raise Failure(f"last line: `{last}`, expected `{expected}`")
    print("quickstart.sh: every answer and count as expected; SIGTERM waited for the request "
          "in flight")


if __name__ == "__main__":
    script.main("quickstart.sh", body)
