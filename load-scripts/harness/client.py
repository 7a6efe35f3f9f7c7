"""A keep-alive HTTP/1.1 client that talks to 127.0.0.1 only, and the label of an answer."""

from __future__ import annotations

import http.client
import time
import json

# One request may take this long before it counts as failed: far above a server's worst case
# under the scripts' load, far below a run's length.
REQUEST_TIMEOUT_S = 15
# The statuses a 2xx of the ingest service names in its body.
NAMED_STATUSES = ("duplicate", "stored", "ignored", "queued")


def check_url(url: str) -> str:
    """`url` itself, when it points at 127.0.0.1; a ValueError otherwise."""
    if not url.startswith("http://127.0.0.1:"):
        raise ValueError(f"only http://127.0.0.1 is accepted, not {url}")
    return url


def host_port(url_or_addr: str) -> tuple[str, int]:
    """("127.0.0.1", PORT) of `http://127.0.0.1:PORT[/…]` or `127.0.0.1:PORT`."""
    if not url_or_addr.startswith("http://"):
        url_or_addr = "http://" + url_or_addr
    host, port = check_url(url_or_addr)[len("http://"):].split("/")[0].split(":")
    return host, int(port)


class Conn:
    """One keep-alive connection to one server, reopened after any failure; `opened` is when
    the current connection was opened (time.time())."""

    def __init__(self, url: str, timeout_s: float = REQUEST_TIMEOUT_S):
        self.host, self.port = host_port(url)
        self.timeout_s, self.conn, self.opened = timeout_s, None, 0.0

    def raw(self, method: str, path: str, body=None, headers=None):
        """(status, body bytes, response headers); status 0 and no body when no answer came."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
                self.conn.connect()
                self.opened = time.time()
            self.conn.request(method, path, body=body, headers=headers or {})
            response = self.conn.getresponse()
            return response.status, response.read(), response
        except (OSError, http.client.HTTPException):
            self.close()
            return 0, b"", None

    def request(self, method: str, path: str, body=None, headers=None):
        """(status, parsed JSON body or None, Retry-After); status 0 when no answer came."""
        status, raw, response = self.raw(method, path, body, headers)
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return status, parsed, response.getheader("retry-after") if response else None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def get(url: str, path: str, headers=None) -> tuple[int, bytes]:
    """One GET on a connection of its own: (status, body)."""
    conn = Conn(url)
    status, body, _ = conn.raw("GET", path, headers=headers)
    conn.close()
    return status, body


def label(status: int, body) -> str:
    """The problem code of a failure; for a 2xx, the status it names (`stored`, `duplicate`,
    `queued`, `ignored`); `-` for any other answer, `no-answer` for none."""
    if isinstance(body, dict):
        if "code" in body:
            return body["code"]
        if body.get("status") in NAMED_STATUSES:
            return body["status"]
    return "-" if status else "no-answer"
