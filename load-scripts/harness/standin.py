"""What the stand-in providers (github.py, gitlab.py) share: a REST API on 127.0.0.1, each
request answered on a thread of its own; a hook that sends deliveries to its targets through
a load balancer (a redelivery to the next target in turn, a target that does not answer passed
over); the delivery id of every redelivery asked for, in order; and answers in JSON."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .client import Conn

# How often a server's loop looks whether it was told to stop: `stop` takes this long at most.
POLL_S = 0.05


class Server(ThreadingHTTPServer):
    """The API's server: a caller that hangs up mid answer (a node stopped mid pass, as the
    scenario stops them) is no error to print."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class StandIn:
    """A provider's API at `url`, stopped by `stop`. A subclass answers each request in
    `answer(handler, method)`."""

    def __init__(self, secret: str):
        self.secret = secret
        self.targets: list[str] = []
        self.bodies: dict[str, bytes] = {}
        # The delivery id of each redelivery asked for, in the order asked.
        self.asked: list[str] = []
        self.lock = threading.Lock()
        self.last_id = 1000
        self.turn = 0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                stand_in.answer(self, "GET")

            def do_POST(self):
                stand_in.answer(self, "POST")

            def log_message(self, *args):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(POLL_S,),
                                       daemon=True)
        self.thread.start()

    def answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def new_id(self) -> int:
        """The id of a delivery recorded now; the caller holds the lock."""
        self.last_id += 1
        return self.last_id

    def asked_for(self, guid: str) -> int:
        """Records a redelivery asked for GUID; where it is sent first: the next target in
        turn. The caller holds the lock."""
        self.asked.append(guid)
        self.turn += 1
        return self.turn

    def post(self, first: int, body: bytes, headers: dict) -> int:
        """One delivery through the load balancer in front of the targets: to the target
        FIRST (counted in turn), or the next when it does not answer, as a balancer passes
        over a node that is down (one that starts a moment after the others); the status,
        0 when no target answered."""
        for n in range(len(self.targets)):
            base, _, path = self.targets[(first + n) % len(self.targets)].partition("/api/")
            conn = Conn(base)
            status, _, _ = conn.raw("POST", "/api/" + path, body, headers)
            conn.close()
            if status:
                return status
        return 0

    @staticmethod
    def reply(handler, status: int, body, headers=None) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        for name, value in {"content-type": "application/json", "content-length": str(len(data)),
                            **(headers or {})}.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
