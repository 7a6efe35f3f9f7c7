"""A stand-in for GitLab (17.4 and later) on 127.0.0.1, as the load scripts need it: a
project's hook that sends pushes to the service with its secret token (`X-Gitlab-Token`) and
`Idempotency-Key`, and records each sending as GitLab's hook events do (`response_status` the
status as text, `internal error` when nothing answered); and the two REST calls catch-up makes,
under `/api/v4` with the token in `PRIVATE-TOKEN` (or as a bearer token): list the hook's
events ("List webhook events": newest first, `per_page` 1 to 20, `page`, the `status` filter,
the next page in `X-Next-Page`) and resend one ("Resend a webhook event": sent again before
the answer, with the same `Idempotency-Key` and a new `X-Gitlab-Event-UUID`, to the next of
the hook's targets in turn through standin.py's load balancer; 201 with its
`response_status`, or 422 when the sending got no answer). It keeps GitLab.com's resend
limit, five a minute per hook, with GitLab's 429 and its headers, unless told not to. An
error's body is GitLab's `{"message": …}`.

The service's Rust tests have the full stand-in (`tests/common/gitlab.rs`); this one answers
the same shapes, and test_gitlab.py checks them against what GitLab publishes, the fixture
those tests read (`tests/fixtures/gitlab-openapi/hook-events.json`).
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

from . import standin
from .signing import provider_headers

# GitLab's largest `per_page` for hook events, and its default.
MAX_PER_PAGE = 20
DEFAULT_PER_PAGE = 20
# What GitLab records for a sending that got no answer.
INTERNAL_ERROR = "internal error"
# GitLab.com's resend limit: resends a window takes, and the window's length.
RESEND_LIMIT = (5, 60.0)
# The `status` filter's named values (beside the status codes themselves).
STATUS_CLASSES = {"successful": range(200, 300), "client_failure": range(400, 500),
                  "server_failure": range(500, 600)}
WEBHOOK_UUID = "3c5c0404-c866-44bc-a5f6-452bb1bfc76e"
ROUTE = re.compile(r"^/api/v4/projects/(\d+)/hooks/(\d+)/events(?:/(\d+)/resend)?$")


def passes(status: str, wanted: list[str]) -> bool:
    """Whether an event's `response_status` passes the `status` filter's values."""
    code = int(status) if status.isdigit() else None
    for value in wanted:
        if value in STATUS_CLASSES:
            if code in STATUS_CLASSES[value] or (value == "server_failure"
                                                 and status == INTERNAL_ERROR):
                return True
        elif value == status:
            return True
    return False


class StandIn(standin.StandIn):
    """One project hook `project`/`hook_id` that accepts `token`; `resend_limit` is
    (resends, seconds) a window takes, or None for no limit."""

    def __init__(self, project: int, hook_id: int, token: str, secret: str,
                 resend_limit: tuple[int, float] | None = RESEND_LIMIT):
        self.project, self.hook_id, self.token = project, hook_id, token
        self.resend_limit = resend_limit
        self.window = (0.0, 0)
        self.events: list[dict] = []
        super().__init__(secret)

    def send(self, key: str, uuid: str, first: int) -> int:
        """One sending of the push KEY, to the target FIRST or the next that answers; the
        status, 0 for no answer."""
        body = self.bodies[key]
        headers = provider_headers("gitlab", self.secret, key, body)
        headers.update({"user-agent": "GitLab/17.4.0", "x-gitlab-event-uuid": uuid,
                        "x-gitlab-instance": "https://gitlab.example.com",
                        "x-gitlab-webhook-uuid": WEBHOOK_UUID})
        return self.post(first, body, headers)

    def record(self, key: str, uuid: str, status: int) -> None:
        with self.lock:
            self.events.append({"id": self.new_id(), "key": key, "uuid": uuid,
                                "response_status": str(status) if status else INTERNAL_ERROR})

    def push(self, key: str, body: bytes, recorded_as: int | None = None) -> int:
        """A push sent as GitLab sends it, to the first target, and recorded; RECORDED_AS
        instead of what it got when GitLab gave up waiting."""
        self.bodies[key] = body
        uuid = f"uuid-{key}-first"
        status = self.send(key, uuid, 0)
        self.record(key, uuid, status if recorded_as is None else recorded_as)
        return status

    def answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urllib.parse.urlsplit(handler.path)
        route = ROUTE.match(url.path)
        if not route or (int(route.group(1)), int(route.group(2))) != (self.project, self.hook_id):
            return self.reply(handler, 404, {"message": "404 Not Found"})
        given = handler.headers.get("private-token") or \
            (handler.headers.get("authorization") or "").removeprefix("Bearer ")
        if given != self.token:
            return self.reply(handler, 401, {"message": "401 Unauthorized"})
        if method == "GET" and route.group(3) is None:
            return self.list(handler, urllib.parse.parse_qs(url.query))
        if method == "POST" and route.group(3) is not None:
            return self.resend(handler, int(route.group(3)))
        return self.reply(handler, 404, {"message": "404 Not Found"})

    def list(self, handler, query) -> None:
        """A page of the hook's events, newest first; 400 for a `per_page` or a `status`
        GitLab's parameters refuse."""
        per_page = query.get("per_page", [str(DEFAULT_PER_PAGE)])[0]
        if not per_page.isdigit() or not 1 <= int(per_page) <= MAX_PER_PAGE:
            return self.reply(handler, 400, {"message": "per_page does not have a valid value"})
        wanted = query["status"][0].split(",") if "status" in query else []
        if any(v not in STATUS_CLASSES and not v.isdigit() for v in wanted):
            return self.reply(handler, 400, {"message": "status does not have a valid value"})
        per_page, page = int(per_page), max(int(query.get("page", ["1"])[0] or 1), 1)
        with self.lock:
            events = sorted((e for e in self.events
                             if not wanted or passes(e["response_status"], wanted)),
                            key=lambda e: -e["id"])
            shown = [self.item(e) for e in events[(page - 1) * per_page:page * per_page]]
        pages = max(-(-len(events) // per_page), 1)
        self.reply(handler, 200, shown, {
            "x-next-page": str(page + 1) if page < pages else "", "x-page": str(page),
            "x-per-page": str(per_page), "x-total": str(len(events)),
            "x-total-pages": str(pages)})

    def item(self, event: dict) -> dict:
        """An event as GitLab's `WebHookLog` entity shows it."""
        return {"id": event["id"], "url": "https://receiver.example/hook", "trigger": "push_hooks",
                "request_headers": {"Content-Type": "application/json",
                                    "User-Agent": "GitLab/17.4.0",
                                    "Idempotency-Key": event["key"],
                                    "X-Gitlab-Event": "Push Hook",
                                    "X-Gitlab-Webhook-UUID": WEBHOOK_UUID,
                                    "X-Gitlab-Instance": "https://gitlab.example.com",
                                    "X-Gitlab-Event-UUID": event["uuid"],
                                    "X-Gitlab-Token": "[REDACTED]"},
                "request_data": json.loads(self.bodies[event["key"]]), "response_headers": {},
                "response_body": "", "execution_duration": 0.03,
                "response_status": event["response_status"],
                "created_at": "2026-12-03T10:00:00.000Z"}

    def limited(self) -> dict | None:
        """Takes one resend from the limit's window; the 429's headers when none is left.
        The caller holds the lock."""
        if self.resend_limit is None:
            return None
        (per_window, length), now = self.resend_limit, time.monotonic()
        began, taken = self.window if now < self.window[0] + length else (now, 0)
        if taken >= per_window:
            left = max(int(began + length - now + 0.999), 1)
            return {"retry-after": str(left), "ratelimit-name": "web_hook_event_resend",
                    "ratelimit-limit": str(per_window), "ratelimit-observed": str(per_window + 1),
                    "ratelimit-remaining": "0", "ratelimit-reset": str(int(time.time()) + left)}
        self.window = (began, taken + 1)
        return None

    def resend(self, handler, event_id: int) -> None:
        with self.lock:
            limited = self.limited()
            found = next((e for e in self.events if e["id"] == event_id), None)
            if limited is None and found is not None:
                first = self.asked_for(found["key"])
        if limited is not None:
            text = "This endpoint has been requested too many times. Try again later."
            return self.reply(handler, 429, {"message": {"error": text}}, limited)
        if found is None:
            return self.reply(handler, 404, {"message": "404 Not Found"})
        # GitLab sends the event again before it answers, with the same key and a new UUID.
        uuid = f"uuid-{found['key']}-resent-{event_id}-{len(self.asked)}"
        status = self.send(found["key"], uuid, first)
        self.record(found["key"], uuid, status)
        if status == 0:
            target = self.targets[first % len(self.targets)]
            text = f"Failed to open TCP connection to {target}"
            return self.reply(handler, 422, {"message": text})
        self.reply(handler, 201, {"response_status": status})
