#!/usr/bin/env python3
"""Opens stalled connections to a service on 127.0.0.1 and times how long it keeps them.

    stall.py PORT PATH HEADS BODIES READY_FILE DEADLINE_SECS

HEADS connections send half a request head and stop; BODIES connections send a whole head
announcing a body, a few bytes of it, and stop. Once all are open, READY_FILE is created.
Then every socket is watched until the service closes it (or DEADLINE_SECS pass). Prints one
`name value` line per figure: connections opened and closed, when the last was closed, the
slowest and the median time from a connection's last byte sent to its close, and the
statuses the stalled bodies got.
Run by hostile.py; standard library only.
"""

import selectors
import socket
import sys
import time

# The body a stalled body connection announces, and the part of it that it sends.
ANNOUNCED_BODY_BYTES = 4096
SENT_BODY = b'{"ref":"refs/heads/main","commits":['
# Most a service's answer to a stalled connection is read into memory: enough for a status
# line and a problem body.
MAX_ANSWER_BYTES = 4096
CONNECT_TIMEOUT_SECS = 5


def stall_bytes(kind, path):
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nX-GitHub-Event: push\r\n"
    )
    if kind == "head":
        return head.encode()
    head += f"Content-Length: {ANNOUNCED_BODY_BYTES}\r\n\r\n"
    return head.encode() + SENT_BODY


def open_all(port, path, heads, bodies, selector):
    """Opens the stalled connections, all at once, and sends each its bytes; returns them as
    {socket: state}, each registered with `selector` for reading."""
    connecting = {}
    for kind, count in (("head", heads), ("body", bodies)):
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            connecting[sock] = kind
            selector.register(sock, selectors.EVENT_WRITE)
    data = {kind: stall_bytes(kind, path) for kind in ("head", "body")}
    open_conns = {}
    deadline = time.monotonic() + CONNECT_TIMEOUT_SECS
    while connecting and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.1):
            sock = key.fileobj
            kind = connecting.pop(sock)
            selector.unregister(sock)
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                sock.close()
                continue
            # A few hundred bytes fit any socket buffer: one send takes them all.
            if sock.send(data[kind]) != len(data[kind]):
                sock.close()
                continue
            open_conns[sock] = {"kind": kind, "sent": time.monotonic(), "answer": b""}
            selector.register(sock, selectors.EVENT_READ)
    for sock in connecting:
        selector.unregister(sock)
        sock.close()
    return open_conns


def watch(selector, open_conns, deadline):
    """Waits for the service to close each connection; returns the closed states."""
    closed = []
    while open_conns and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.1):
            sock = key.fileobj
            state = open_conns[sock]
            try:
                data = sock.recv(MAX_ANSWER_BYTES)
            except (ConnectionResetError, OSError):
                data = b""
            if data:
                if len(state["answer"]) < MAX_ANSWER_BYTES:
                    state["answer"] += data
                continue
            state["closed"] = time.monotonic()
            state["closed_us"] = time.time_ns() // 1000
            selector.unregister(sock)
            sock.close()
            del open_conns[sock]
            closed.append(state)
    return closed


def status_of(answer):
    parts = answer.split(b" ", 2)
    return parts[1].decode(errors="replace") if len(parts) > 1 and answer.startswith(b"HTTP/") else "none"


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    heads, bodies = int(sys.argv[3]), int(sys.argv[4])
    ready_file, deadline_secs = sys.argv[5], float(sys.argv[6])
    selector = selectors.DefaultSelector()
    began = time.monotonic()
    open_conns = open_all(port, path, heads, bodies, selector)
    opened = len(open_conns)
    open_secs = time.monotonic() - began
    with open(ready_file, "w", encoding="ascii") as ready:
        ready.write(f"{opened}\n")
    closed = watch(selector, open_conns, time.monotonic() + deadline_secs)
    for sock in open_conns:
        sock.close()
    print(f"opened {opened}")
    print(f"open_secs {open_secs:.3f}")
    print(f"closed {len(closed)}")
    # Wall-clock microseconds, to compare with when other clients got their answers.
    print(f"last_close_us {max((s['closed_us'] for s in closed), default=0)}")
    for kind in ("head", "body"):
        times = [s["closed"] - s["sent"] for s in closed if s["kind"] == kind]
        print(f"{kind}_closed {len(times)}")
        print(f"{kind}_close_max_ms {int(max(times, default=0) * 1000)}")
        print(f"{kind}_close_median_ms {int(median(times) * 1000)}")
    statuses = {}
    for state in closed:
        if state["kind"] == "body":
            status = status_of(state["answer"])
            statuses[status] = statuses.get(status, 0) + 1
    for status, count in sorted(statuses.items()):
        print(f"body_status_{status} {count}")
    answered_heads = sum(1 for s in closed if s["kind"] == "head" and s["answer"])
    print(f"head_answered {answered_heads}")


if __name__ == "__main__":
    main()
