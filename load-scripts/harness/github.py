"""A stand-in for GitHub on 127.0.0.1, as the load scripts need it: a repository hook that
sends pushes (signed, `X-GitHub-Delivery`) to the service and records each delivery as GitHub
does (`status_code` 0 when nothing answered), and the two REST calls catch-up makes: list the
hook's deliveries (newest first, `per_page`, cursor pagination through `Link`, GitHub's rate
limit headers) and redeliver one, which sends the same delivery again with the same
`X-GitHub-Delivery` a moment later (GitHub's redelivery is asynchronous too), to the next of
the hook's targets in turn through standin.py's load balancer (which gitlab.py shares). The
service's Rust tests have the full stand-in (`tests/common/github.rs`), checked against
GitHub's OpenAPI description; this one answers the same shapes for the one hook kind the
fleet scenario uses.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

from . import standin
from .signing import github_headers

# GitHub's largest page and its default.
MAX_PER_PAGE = 100
DEFAULT_PER_PAGE = 30
# How long after the ask a redelivery is sent: longer than the scenario's catch-up period, so
# that a pass that asks twice does so before the first redelivery is stored.
REDELIVERY_DELAY_S = 2.5
ROUTE = re.compile(r"^/repos/([\w.-]+/[\w.-]+)/hooks/(\d+)/deliveries(?:/(\d+)/attempts)?$")


class StandIn(standin.StandIn):
    """The stand-in: one repository hook `repository`/`hook_id` that accepts `token`; its
    API at `url`, stopped by `stop`."""

    def __init__(self, repository: str, hook_id: int, token: str, secret: str):
        self.repository, self.hook_id, self.token = repository, hook_id, token
        self.records: list[dict] = []
        self.lists = 0
        self.list_delay_s = 0.0
        super().__init__(secret)

    def record(self, guid: str, status: int, redelivery: bool) -> None:
        with self.lock:
            self.records.append({"id": self.new_id(), "guid": guid, "status_code": status,
                                 "redelivery": redelivery})

    def send(self, guid: str, body: bytes, first: int) -> int:
        """One delivery, to the target FIRST or the next that answers; the status, 0 for no
        answer."""
        return self.post(first, body, github_headers(self.secret, guid, body))

    def push(self, guid: str, body: bytes, recorded_as: int | None = None) -> int:
        """A push sent as GitHub sends it, to the first target, and recorded; RECORDED_AS
        instead of what it got when GitHub gave up waiting."""
        self.bodies[guid] = body
        status = self.send(guid, body, 0)
        self.record(guid, status if recorded_as is None else recorded_as, False)
        return status

    def answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urllib.parse.urlsplit(handler.path)
        route = ROUTE.match(url.path)
        if not route or route.group(1) != self.repository or int(route.group(2)) != self.hook_id:
            return self.reply(handler, 404, {"message": "Not Found"})
        if handler.headers.get("authorization") != f"Bearer {self.token}":
            return self.reply(handler, 401, {"message": "Bad credentials"})
        if method == "GET" and route.group(3) is None:
            return self.list(handler, urllib.parse.parse_qs(url.query), url.path)
        if method == "POST" and route.group(3) is not None:
            return self.redeliver(handler, int(route.group(3)))
        return self.reply(handler, 404, {"message": "Not Found"})

    def list(self, handler, query, path) -> None:
        per_page = min(max(int(query.get("per_page", [DEFAULT_PER_PAGE])[0]), 1), MAX_PER_PAGE)
        before = 1 << 62
        if "cursor" in query:
            before = int(query["cursor"][0].removeprefix("v1_"))
        with self.lock:
            self.lists += 1
            newest_first = sorted((r for r in self.records if r["id"] < before),
                                  key=lambda r: -r["id"])
        time.sleep(self.list_delay_s)
        page = [self.item(r) for r in newest_first[:per_page]]
        headers = {}
        if len(newest_first) > per_page:
            cursor = newest_first[per_page - 1]["id"]
            headers["link"] = f'<{self.url}{path}?per_page={per_page}&cursor=v1_{cursor}>; rel="next"'
        self.reply(handler, 200, page, headers)

    @staticmethod
    def item(record: dict) -> dict:
        """A delivery as GitHub's `hook-delivery-item` shows it."""
        code = record["status_code"]
        status = "OK" if 200 <= code < 300 else ("failed to connect" if code == 0
                                                 else f"Invalid HTTP Response: {code}")
        return {"id": record["id"], "guid": record["guid"], "delivered_at": "2026-12-03T10:00:00Z",
                "redelivery": record["redelivery"], "duration": 0.03, "status": status,
                "status_code": code, "event": "push", "action": None, "installation_id": None,
                "repository_id": 4242, "throttled_at": None}

    def redeliver(self, handler, delivery_id: int) -> None:
        with self.lock:
            found = next((r for r in self.records if r["id"] == delivery_id), None)
            if found is not None:
                first = self.asked_for(found["guid"])
        if found is None:
            return self.reply(handler, 404, {"message": "Not Found"})
        guid = found["guid"]

        def again():
            time.sleep(REDELIVERY_DELAY_S)
            self.record(guid, self.send(guid, self.bodies[guid], first), True)

        threading.Thread(target=again, daemon=True).start()
        self.reply(handler, 202, {})

    def reply(self, handler, status: int, body, headers=None) -> None:
        """A JSON answer with GitHub's rate limit headers, never near the limit."""
        super().reply(handler, status, body, {"content-type": "application/json; charset=utf-8",
                                              "x-ratelimit-limit": "5000",
                                              "x-ratelimit-remaining": "4999",
                                              "x-ratelimit-reset": str(int(time.time()) + 3600),
                                              **(headers or {})})
