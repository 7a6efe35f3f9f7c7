"""Instructions per acknowledged delivery, under callgrind: the reference service against the
hand-written receiver (`ingest.sh`'s receivers), the deterministic side of its noisy CPU
figures.

Each receiver runs twice on a fresh store under callgrind, taking N1 and then N2 pushes (GitHub's
shape, 1 to 5 commits, each signed and under a delivery id of its own) from a few clients over
keep-alive connections; (total(N2) - total(N1)) / (N2 - N1) is its instructions per delivery:
start-up, the inbox's creation and the shutdown cancel out. Every push must be answered 2xx and
found in the store afterwards. Callgrind runs one thread at a time, so the service's batches are
smaller than under wrk (more commits per delivery), and valgrind hides the CPU's SHA
instructions, so both receivers' HMACs count as the portable code: the figures compare the work
each does per delivery, not the time.

With --top K the service's K costliest functions per delivery are listed (the same difference,
per function, from `callgrind_annotate`): where its instructions go. With --keep DIR every
profile is copied there (`<receiver>-<deliveries>.out`), for `callgrind_annotate` or a
per-function diff of the service against the hand-written receiver.

usage: ingest_grind.py --service BIN --plain BIN [--today BIN] [--quick] [--top K] [--keep DIR]
                       [--clients N]"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from receivers import Receiver  # first: it puts the harness on the path

from harness.client import Conn  # noqa: E402
from harness.procs import Failure  # noqa: E402
from harness.signing import github_headers  # noqa: E402
from ingest import push, targets  # noqa: E402
from measure import callgrind_total  # noqa: E402

# Deliveries of the two runs per receiver; --quick divides them by ten.
N1 = 200
N2 = 2_200
# The clients sending at once, each over its own keep-alive connection (`--clients`; 1 is
# `ingest.sh`'s 1-connection case, where every write runs alone in place).
CLIENTS = 8
# Under callgrind a server starts, answers and stops some fifty times slower.
SLOW_S = 300.0
# The receivers compared, by their names in `ingest.targets`.
COMPARED = ("today", "service", "plain-normal")


def send(receiver: Receiver, count: int, run: str, clients: int) -> list[str]:
    """`count` pushes from `clients` clients; the delivery ids answered 2xx, or a failure."""
    acked, failures = [], []

    def client(first: int) -> None:
        conn = Conn(receiver.server.url, timeout_s=SLOW_S)
        try:
            for n in range(first, count, clients):
                delivery, body = f"{run}-{n}", push(n)
                status, answer, _ = conn.request(
                    "POST", receiver.path, body,
                    github_headers(receiver.secret, delivery, body))
                (acked if status // 100 == 2 else failures).append(
                    delivery if status // 100 == 2 else f"{delivery}: {status} {answer}")
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures or len(acked) != count:
        raise Failure(f"{len(failures)} of {count} pushes not acknowledged, e.g. {failures[:1]}")
    return acked


def grind(target: dict, count: int, work: Path, clients: int) -> Path:
    """One run of `count` deliveries under callgrind; its profile. Every delivery acknowledged
    must be in the store once the server has stopped."""
    work.mkdir()
    profile = work / "callgrind.out"
    receiver = Receiver(target, work, wrap=["valgrind", "--tool=callgrind",
                                            f"--callgrind-out-file={profile}"],
                        timeout_s=SLOW_S)
    try:
        acked = send(receiver, count, work.name, clients)
    finally:
        receiver.stop()
    missing = set(acked) - receiver.stored()
    if missing:
        raise Failure(f"{target['name']}: {len(missing)} acknowledged deliveries not stored, "
                      f"e.g. {min(missing)}")
    return profile


def per_function(profile: Path) -> dict[str, int]:
    """Instructions by function, as `callgrind_annotate` lists them."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", str(profile)],
                         capture_output=True, text=True, check=True).stdout
    costs: dict[str, int] = {}
    for line in out.splitlines():
        match = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*\S)\s*$", line)
        if match and "PROGRAM TOTALS" not in line:
            name = re.sub(r"^\?\?\?:| \[.*\]$", "", match.group(2))
            costs[name] = costs.get(name, 0) + int(match.group(1).replace(",", ""))
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--service", required=True)
    parser.add_argument("--plain", required=True)
    parser.add_argument("--today", help="an earlier build of the service, ground beside it")
    parser.add_argument("--quick", action="store_true", help="N1 and N2 divided by ten (CI)")
    parser.add_argument("--top", type=int, default=0, help="the service's costliest functions")
    parser.add_argument("--clients", type=int, default=CLIENTS,
                        help="clients sending at once, each on its own connection")
    parser.add_argument("--keep", type=Path, help="a directory to copy every profile into")
    args = parser.parse_args()
    n1, n2 = (N1 // 10, N2 // 10) if args.quick else (N1, N2)
    plan = [t for t in targets(args.service, args.plain, args.today) if t["name"] in COMPARED]
    per, profiles = {}, {}
    with tempfile.TemporaryDirectory(prefix="faultline-ingest-grind-") as tmp:
        for target in plan:
            runs = [grind(target, n, Path(tmp) / f"{target['name']}-{n}", args.clients)
                    for n in (n1, n2)]
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                for n, run in zip((n1, n2), runs):
                    shutil.copy(run, args.keep / f"{target['name']}-{n}.out")
            per[target["name"]] = (callgrind_total(runs[1]) - callgrind_total(runs[0])) / (n2 - n1)
            if target["name"] == "service" and args.top:
                profiles = {n: per_function(p) for n, p in zip((n1, n2), runs)}
            print(f"{target['name']}: {per[target['name']]:,.0f} instructions per delivery",
                  flush=True)
    print(f"\n{n1} and {n2} deliveries per receiver from {args.clients} clients, "
          "under callgrind\n")
    print("| receiver | instructions per delivery | ÷ hand-written NORMAL |")
    print("|---|---|---|")
    for target in plan:
        name = target["name"]
        print(f"| {target['title']} | {per[name]:,.0f} | {per[name] / per['plain-normal']:.2f} |")
    if profiles:
        diff = {name: (profiles[n2].get(name, 0) - profiles[n1].get(name, 0)) / (n2 - n1)
                for name in set(profiles[n1]) | set(profiles[n2])}
        print(f"\nThe service's {args.top} costliest functions per delivery (self cost):\n")
        for name, cost in sorted(diff.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"{cost:>10,.0f}  {name[:140]}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"ingest_grind: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
