"""The stand-in GitLab (gitlab.py) answers as GitLab publishes that it does, checked against
the fixture the service's Rust contract test reads (`tests/catchup_gitlab_contract.rs`):
`examples/webhook-ingest/tests/fixtures/gitlab-openapi/hook-events.json`, what GitLab's
OpenAPI description says of the two calls (statuses) and the Grape entities their answers
present (fields and types), each with its commit in `tests/fixtures/SOURCES.md`.
`python3 -m unittest harness.test_gitlab` from load-scripts/ (ingest/ci.sh runs it)."""

import json
import re
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import gitlab
from .client import Conn
from .standin import POLL_S

PUBLISHED = json.loads((Path(__file__).resolve().parents[2] / "examples" / "webhook-ingest" /
                        "tests" / "fixtures" / "gitlab-openapi" / "hook-events.json").read_text())
TOKEN = "glpat-harness"
PROJECT, HOOK = 42, 7
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
FITS = {"Integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "String": lambda v: isinstance(v, str), "Hash": lambda v: isinstance(v, dict),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "DateTime": lambda v: isinstance(v, str) and bool(DATE_TIME.match(v))}


def entity_violations(value, name: str, at: str) -> list[str]:
    """Where VALUE breaks the entity NAME: a field it exposes missing or of another type than
    its documentation names, or one it does not expose (the stand-in inventing)."""
    fields = PUBLISHED["entities"][name]
    if not isinstance(value, dict):
        return [f"{at}: {value!r} is not an object"]
    out = [f"{at}: exposed `{f}` missing" for f in fields if f not in value]
    out += [f"{at}.{f}: {value[f]!r} is not a {kind}" for f, kind in fields.items()
            if f in value and not FITS[kind](value[f])]
    return out + [f"{at}: `{f}` is not exposed by {name}" for f in value if f not in fields]


def error_violations(body, at: str) -> list[str]:
    """Where an error's body breaks GitLab's: an object of `message` alone, a text or (a rate
    limit's) an object of texts."""
    message = body.get("message") if isinstance(body, dict) else None
    fits = isinstance(body, dict) and len(body) == 1 and (
        isinstance(message, str) or (isinstance(message, dict)
                                     and all(isinstance(t, str) for t in message.values())))
    return [] if fits else [f"{at}: {body!r} is not GitLab's error"]


def violations(operation: str, status: int, body) -> list[str]:
    """Where an answer breaks OPERATION: a status it does not declare (but the 401 of any call
    without a valid token), a 2xx body not its entity (a list of them for the list), an
    error's body not GitLab's."""
    spec = PUBLISHED["operations"][operation]
    if str(status) not in spec["statuses"] and status != 401:
        return [f"{operation}: {status} is not in the description"]
    if status >= 300:
        return error_violations(body, f"{operation} {status}")
    if not spec["list"]:
        return entity_violations(body, spec["entity"], operation)
    if not isinstance(body, list):
        return [f"{operation}: {body!r} is not a list"]
    return [v for n, item in enumerate(body)
            for v in entity_violations(item, spec["entity"], f"{operation}[{n}]")]


def closed_port() -> str:
    """A target nothing listens on: a sending there gets no answer."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/api/hook"


class Receiver:
    """A receiver on 127.0.0.1 that answers 200 to every push and keeps their headers."""

    def __init__(self):
        self.headers: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["content-length"]))
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/hook"
        threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class StandInGitLabTest(unittest.TestCase):
    def setUp(self):
        self.gitlab = gitlab.StandIn(PROJECT, HOOK, TOKEN, "glsecret")
        self.gitlab.targets = [closed_port()]
        self.receiver = Receiver()
        self.conn = Conn(self.gitlab.url)
        for n in range(3):
            self.gitlab.push(f"failed-{n}", json.dumps({"n": n}).encode())
        self.gitlab.push("kept", b"{}", recorded_as=200)

    def tearDown(self):
        self.conn.close()
        self.gitlab.stop()
        self.receiver.stop()

    def call(self, method: str, rest: str, token: str = TOKEN, hook: int = HOOK):
        path = f"/api/v4/projects/{PROJECT}/hooks/{hook}/events{rest}"
        status, raw, response = self.conn.raw(method, path, headers={"private-token": token})
        return status, json.loads(raw), response

    def answers(self, method: str, rest: str, want: int, **kwargs) -> list[str]:
        status, body, _ = self.call(method, rest, **kwargs)
        operation = "resend" if rest.endswith("/resend") else "list"
        wrong = [] if status == want else [f"{rest}: {status} where {want}"]
        return wrong + violations(operation, status, body)

    def test_every_answer_fits_what_gitlab_publishes(self):
        failed = "status=client_failure,server_failure"
        broken = []
        for rest, want, kwargs in [(f"?per_page=2&{failed}", 200, {}),
                                   (f"?per_page=2&{failed}&page=2", 200, {}), ("", 200, {}),
                                   ("?per_page=21", 400, {}), ("?status=failed", 400, {}),
                                   ("", 401, {"token": "wrong"}), ("", 404, {"hook": 8})]:
            broken += self.answers("GET", rest, want, **kwargs)
        first = self.gitlab.events[0]["id"]
        broken += self.answers("POST", f"/{first}/resend", 422)
        self.gitlab.targets = [self.receiver.url]
        broken += self.answers("POST", f"/{first}/resend", 201)
        broken += self.answers("POST", "/999999/resend", 404)
        self.gitlab.resend_limit, self.gitlab.window = (1, 60.0), (0.0, 0)
        broken += self.answers("POST", f"/{first}/resend", 201)
        broken += self.answers("POST", f"/{first}/resend", 429)
        self.assertEqual(broken, [], "the stand-in drifted from what GitLab publishes")

    def test_the_checks_find_a_wrong_type_a_missing_field_an_invented_one(self):
        _, body, _ = self.call("GET", "?per_page=1")
        self.assertEqual(violations("list", 200, body), [])
        for edit in (lambda v: v.update(response_status=500), lambda v: v.pop("id"),
                     lambda v: v.update(created_at="yesterday"), lambda v: v.update(key="k")):
            item = dict(body[0])
            edit(item)
            self.assertEqual(len(violations("list", 200, [item])), 1, item)
        self.assertEqual(len(violations("list", 500, {"message": "boom"})), 1)
        self.assertEqual(len(violations("resend", 404, {"error": "404 Not Found"})), 1)
        self.assertEqual(len(violations("resend", 201, {"response_status": "200"})), 1)

    def test_failed_events_are_listed_newest_first_a_page_at_a_time(self):
        status, page, response = self.call("GET", "?per_page=2&status=server_failure")
        keys = [e["request_headers"]["Idempotency-Key"] for e in page]
        self.assertEqual((status, keys, response.getheader("x-next-page")),
                         (200, ["failed-2", "failed-1"], "2"))
        _, page, response = self.call("GET", "?per_page=2&status=server_failure&page=2")
        self.assertEqual(([e["response_status"] for e in page], response.getheader("x-next-page")),
                         ([gitlab.INTERNAL_ERROR], ""))
        _, page, _ = self.call("GET", "?status=successful")
        self.assertEqual([e["request_headers"]["Idempotency-Key"] for e in page], ["kept"])

    def test_a_resend_is_sent_before_the_answer_with_the_same_key_and_a_new_uuid(self):
        self.gitlab.targets = [self.receiver.url]
        first = self.gitlab.events[0]
        status, body, _ = self.call("POST", f"/{first['id']}/resend")
        self.assertEqual((status, body), (201, {"response_status": 200}))
        (sent,) = self.receiver.headers
        self.assertEqual((sent["idempotency-key"], sent["x-gitlab-token"]),
                         ("failed-0", "glsecret"))
        self.assertNotEqual(sent["x-gitlab-event-uuid"], first["uuid"])
        self.assertEqual(self.gitlab.asked, ["failed-0"])
        self.assertEqual(self.gitlab.events[-1]["response_status"], "200")

    def test_the_resend_limit_answers_429_with_gitlabs_headers_and_asks_nothing(self):
        self.gitlab.targets = [self.receiver.url]
        first = self.gitlab.events[0]["id"]
        statuses = [self.call("POST", f"/{first}/resend")[0] for _ in range(6)]
        self.assertEqual(statuses, [201] * 5 + [429])
        _, _, response = self.call("POST", f"/{first}/resend")
        self.assertEqual(response.getheader("ratelimit-remaining"), "0")
        self.assertLessEqual(int(response.getheader("retry-after")), 60)
        self.assertEqual(len(self.gitlab.asked), 5)


if __name__ == "__main__":
    unittest.main()
