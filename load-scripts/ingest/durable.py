"""Every acknowledged delivery was on disk before its answer left: the service runs under
strace, signed pushes are sent from parallel connections, and the trace is read back. For
each answer 201 (the store) or 202 queued (the spool) to a delivery, the last read of its
request's bytes on that connection must be followed by an fsync or fdatasync of the store's
WAL (or of a spool segment) that began after that read ended and ended before the answer's
write began.

usage: durable.py [store|spool|known|weakened]...   (every mode, in this order, by default;
       the service built as $CI_PROFILE says: debug or release)

- store:    a SQLite store at its defaults; every 201 must be covered.
- spool:    a PostgreSQL URL nothing listens on, to an inbox nobody knows, so every delivery
            goes to the unverified spool; every 202 queued must be covered by an fdatasync of
            one of its segments.
- known:    an inbox made through a node on SQLite, then the node restarted on a
            PostgreSQL URL nothing listens on with the same spool directory: its file of known
            inboxes verifies the deliveries, which go to the main spool; every 202 queued must
            be covered by an fdatasync of a main spool segment.
- weakened: the store at --sqlite-sync normal, which acknowledges before the WAL is synced;
            the check must find answers it cannot cover, or it proves nothing. The spool has
            no setting that answers before its fdatasync, so it has no weakened run.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest, script  # noqa: E402
from harness.client import Conn  # noqa: E402
from harness.procs import Failure, Server, free_port, wait_until  # noqa: E402
from harness.signing import github_headers  # noqa: E402
from harness.storm import run_parallel  # noqa: E402

# Two phases, (senders, deliveries each): one sender alone, where an answer that does not
# wait for its own fsync finds no other fsync to hide behind; then parallel senders, enough
# that group commit puts several deliveries under one fsync, few enough for a traced debug
# build on a loaded 2-core machine.
PHASES = ((1, 50), (8, 25))
START_TIMEOUT_S = 60.0
# A graceful stop drains the writer; far longer than that means it hangs.
STOP_TIMEOUT_S = 60.0
MODES = ("store", "spool", "known", "weakened")
SYSCALLS = "read,recvfrom,readv,recvmsg,write,writev,sendto,sendmsg,pwrite64,fsync,fdatasync"

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+) (\w+)\((.*)$")
RESUMED = re.compile(r"^(\d+)\s+(\d+\.\d+) <\.\.\. (\w+) resumed>(.*)$")
RESULT = re.compile(r"\)\s+=\s+(-?\d+)(?:<[^>]*>)?.*<(\d+\.\d+)>\s*$")
# A file descriptor as strace -yy shows it: `7</path>` or `7<TCP:[a:p->b:q]>`.
FD = re.compile(r"^(\d+)<(TCP:\[[^\]]*\]|[^>]*)>")


def start(bin_path: str, work: Path, args: list[str], traced: bool = True) -> Server:
    strace = ["strace", "-f", "-ttt", "-T", "-yy", "-s", "200", "-e", f"trace={SYSCALLS}",
              "-o", str(work / "trace.txt")]
    return ingest.start(bin_path, work, args, name="server", spool=work / "spool",
                        wrap=strace if traced else None, timeout_s=START_TIMEOUT_S)


def stop(server: Server, traced: bool = True) -> None:
    """SIGTERM to the traced service itself (strace only detaches on one), then the wait."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    for pid in children.read_text().split() if traced and children.exists() else []:
        os.kill(int(pid), signal.SIGTERM)
    if traced:
        server.process.wait(STOP_TIMEOUT_S)
    server.stop(timeout_s=STOP_TIMEOUT_S)


def health(port: int) -> dict:
    status, body, _ = Conn(f"http://127.0.0.1:{port}", timeout_s=60).request("GET", "/health")
    if status != 200:
        raise Failure(f"/health answered {status}")
    return body


def inbox(port: int) -> tuple[str, str]:
    """A real inbox of a fresh node: its delivery path and secret."""
    env = ingest.setup(f"http://127.0.0.1:{port}", ["github"], "durable")
    return ingest.hook_path(env, "github"), env["inboxes"]["github"]["secret"]


def known_inbox(bin_path: str, work: Path) -> tuple[str, str]:
    """An inbox made through a node on a SQLite store, which is then stopped: what a
    restart knows of it is the file of known inboxes in the spool directory."""
    server = start(bin_path, work, ["--db", str(work / "setup.db")], traced=False)
    try:
        path, secret = inbox(server.port)
        box = path.split("/")[4]
        known = work / "spool" / "known-inboxes.json"
        wait_until(lambda: box in (known.read_text() if known.exists() else ""),
                   START_TIMEOUT_S, f"durable: known: {box} reaching {known}", pause_s=0.1)
    finally:
        stop(server, traced=False)
    return path, secret


def spooled(port: int) -> tuple[int, int]:
    """(main spool, unverified spool) records spooled since start, as /health counts them."""
    spool = health(port)["spool"]
    return spool["spooled"], spool["unverified"]["spooled"]


def send_all(port: int, path: str, secret: str, want: int, phase: int) -> list[str]:
    """The phase's keep-alive connections at once, its number of pushes each; every answer
    must be `want`. Returns the delivery ids acknowledged."""
    acked, failures = [], []
    senders, per_sender = PHASES[phase]

    def sender(s: int) -> None:
        conn = Conn(f"http://127.0.0.1:{port}", timeout_s=60)
        for n in range(per_sender):
            delivery = f"durable-{phase}-{s}-{n}"
            # The delivery named in the push (`after`): every phase's pushes are its own, not
            # replays of an earlier phase's, which the service would store once.
            body = (b'{"ref":"refs/heads/main","repository":{"full_name":"durable/widgets"},'
                    b'"after":"%s","commits":[{"id":"%04x%04x","message":"m"}]}'
                    % (delivery.encode(), s, n))
            status, text, _ = conn.raw("POST", path, body,
                                       github_headers(secret, delivery, body))
            if status == want:
                acked.append(delivery)
            else:
                failures.append(f"{delivery}: {status} {text[:120]!r}")
        conn.close()

    run_parallel(senders, sender)
    if failures:
        raise Failure(f"{len(failures)} answers were not {want}: {failures[:3]}")
    return acked


def events(trace: Path) -> list[tuple]:
    """(start, end, syscall, fd target, result, text) of every finished call, in start order."""
    pending, done = {}, []
    for line in trace.read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if m:
            pid, t, name, rest = m.groups()
            if rest.endswith("<unfinished ...>"):
                pending[(pid, name)] = (float(t), rest)
                continue
            finished = (float(t), rest)
        else:
            m = RESUMED.match(line)
            if not m or (m.group(1), m.group(3)) not in pending:
                continue
            pid, _, name, tail = m.groups()
            t0, head = pending.pop((pid, name))
            finished = (t0, head.replace("<unfinished ...>", "") + tail)
        start_t, rest = finished
        r = RESULT.search(rest)
        fd = FD.match(rest)
        if not r or not fd:
            continue
        done.append((start_t, start_t + float(r.group(2)), name, fd.group(2), int(r.group(1)), rest))
    done.sort()
    return done


def uncovered(evs: list[tuple], durable_file: re.Pattern, status: str) -> tuple[int, list[str]]:
    """(answers checked, answers with no covering sync) for answers `HTTP/1.1 {status}` to
    deliveries (requests to …/commits)."""
    syncs = [(s, e) for s, e, name, target, res, _ in evs
             if name in ("fsync", "fdatasync") and res == 0 and durable_file.search(target)]
    # Per connection: what was read of the request being answered (the service peeks at the
    # first bytes for HTTP/2's preface, so a head comes in more than one read), and when the
    # last of it arrived.
    request, last_read, checked, bad = {}, {}, 0, []
    for s, e, name, target, res, text in evs:
        if not target.startswith("TCP:") or res <= 0:
            continue
        if name in ("read", "recvfrom", "readv", "recvmsg"):
            request[target] = request.get(target, "") + text
            last_read[target] = e
        elif name in ("write", "writev", "sendto", "sendmsg"):
            answered, request[target] = request.get(target, ""), ""
            if f"HTTP/1.1 {status}" not in text or "/commits HTTP/1.1" not in answered:
                continue
            checked += 1
            arrived = last_read[target]
            if not any(arrived < ss and se < s for ss, se in syncs):
                bad.append(f"{target} answered at {s:.6f}, request read by {arrived:.6f}")
    return checked, bad


def check(mode: str, bin_path: str, work: Path) -> None:
    """One mode's run: its deliveries sent, answered and found in the trace, each covered by
    a sync (the weakened store: some not, or the check proves nothing)."""
    work.mkdir(parents=True, exist_ok=True)
    if mode in ("spool", "known"):
        args = ["--db", f"postgres://durable@127.0.0.1:{free_port()}/none"]
        # The main spool's segments sit in the spool directory, the unverified spool's in
        # its `unverified/` folder: a 202 is covered only by a sync of the spool it went to.
        segments = r"/spool/[^/]*\.seg$" if mode == "known" else r"/spool/unverified/[^/]*\.seg$"
        durable_file, status = re.compile(segments), "202"
    else:
        args = ["--db", str(work / "store.db")]
        if mode == "weakened":
            args += ["--sqlite-sync", "normal"]
        durable_file, status = re.compile(r"/store\.db-wal$"), "201"
    if mode == "known":
        path, secret = known_inbox(bin_path, work)
    server = start(bin_path, work, args)
    port = server.port
    try:
        if mode == "spool":
            path, secret = "/api/in_nowhere/inboxes/ib_nowhere/commits", "made-up"
        elif mode == "known":
            said = health(port)
            if said.get("store") != "down" or said["spool"].get("known_inboxes", 0) < 1:
                raise Failure(f"known: the restart does not know the inbox: {said}")
        else:
            path, secret = inbox(port)
            said = health(port)
            if said.get("durable") != (mode == "store"):
                raise Failure(f"{mode}: /health says {said}")
        acked = [delivery for phase in range(len(PHASES))
                 for delivery in send_all(port, path, secret, int(status), phase)]
        if mode in ("spool", "known"):
            went = spooled(port)
            want = (len(acked), 0) if mode == "known" else (0, len(acked))
            if went != want:
                raise Failure(f"{mode}: (main, unverified) spooled {went}, not {want}")
    finally:
        stop(server)
    checked, bad = uncovered(events(work / "trace.txt"), durable_file, status)
    phases = " then ".join(f"{n} × {each}" for n, each in PHASES)
    print(f"durable: {mode}: {len(acked)} deliveries answered {status} ({phases} at once); "
          f"{checked} answers found in the trace, {len(bad)} without a sync of "
          f"{durable_file.pattern} between the request and the answer")
    if checked != len(acked):
        raise Failure(f"{mode}: the trace shows {checked} answers, {len(acked)} were received")
    if mode == "weakened":
        if not bad:
            raise Failure("weakened: every answer looked covered; the check cannot fail")
        return
    for line in bad[:5]:
        print(f"durable: not covered: {line}")
    if bad:
        raise Failure(f"{mode}: {len(bad)} answers left before their delivery was synced")


def body(run: script.Run) -> None:
    modes = sys.argv[1:] or MODES
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise SystemExit(__doc__)
    binary = ingest.build(release=ingest.release_profile())
    for mode in modes:
        check(mode, str(binary), run.work / mode)


if __name__ == "__main__":
    script.main("durable", body, tools_needed=("strace",))
