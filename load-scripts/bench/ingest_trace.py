"""The ingestion benchmark's trace (`ingest.sh --trace`): each delivery's latency over the run,
as wrk's script recorded it (INGEST_TRACE: the wall clock at the answer and the latency, in
µs), beside what the service's store did meanwhile (its `store_trace` events on stderr: each
commit, fsync and WAL checkpoint, when it began and how long it took). Binned per 100 ms, and
drawn as text: one row per bin, the p99 as a bar."""

from __future__ import annotations

import bisect
import re
from pathlib import Path

# The bin of the picture: short enough that a checkpoint (milliseconds) or a stall shows as a
# bin of its own, long enough to hold a few hundred deliveries at 64 connections.
BIN_US = 100_000
# One character of the p99 bar per this many ms; a bar is cut at BAR_MAX characters.
BAR_MS = 2
BAR_MAX = 40
# The share of deliveries, slowest first, whose causes the summary looks for: the p99's.
TAIL_SHARE = 0.01
FIELD = re.compile(r'(\w+)=("[^"]*"|\S+)')


def client(path: Path) -> list[tuple[int, int]]:
    """(answered at, latency) in µs for every acknowledged delivery, in order of answer."""
    rows = []
    for line in path.read_text().splitlines():
        at, took = line.split()
        rows.append((int(at), int(took)))
    return sorted(rows)


def server(log: Path) -> list[dict]:
    """The store's trace events from the service's log: {kind, by, at_us, …}."""
    events = []
    for line in log.read_text(errors="replace").splitlines():
        head, sep, rest = line.partition(" store_trace: ")
        if not sep:
            continue
        kind, _, fields = rest.partition(" ")
        event = {"kind": kind}
        for key, value in FIELD.findall(fields):
            event[key] = value.strip('"') if value.startswith('"') else int(value)
        events.append(event)
    return events


def percentile(sorted_values: list[int], share: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(share * len(sorted_values)))]


def bins(latencies: list[tuple[int, int]], events: list[dict]) -> list[dict]:
    """Per BIN_US from the first answer: the latencies answered in it (count, p50, p99, max)
    and the store's steps begun in it."""
    if not latencies:
        return []
    t0 = latencies[0][0] - latencies[0][1]
    end = latencies[-1][0]
    out = [{"t_ms": (start - t0) / 1000, "lat": [], "commits": [], "fsyncs": [], "checkpoints": []}
           for start in range(t0, end + 1, BIN_US)]
    for at, took in latencies:
        out[(at - t0) // BIN_US]["lat"].append(took)
    for event in events:
        i = (event["at_us"] - t0) // BIN_US
        if 0 <= i < len(out):
            out[i][event["kind"] + "s"].append(event)
    for b in out:
        lat = sorted(b.pop("lat"))
        b.update(n=len(lat), p50=percentile(lat, 0.5), p99=percentile(lat, 0.99),
                 max=lat[-1] if lat else 0)
    return out


def row(b: dict) -> str:
    bar = "#" * min(BAR_MAX, round(b["p99"] / 1000 / BAR_MS))
    commits, fsyncs, cps = b["commits"], b["fsyncs"], b["checkpoints"]
    jobs = max((c["jobs"] for c in commits), default=0)
    commit_ms = max((c["commit_us"] for c in commits), default=0) / 1000
    fsync_ms = max((f["fsync_us"] for f in fsyncs), default=0) / 1000
    cp = (f"{len(cps):3d}× {sum(c['checkpoint_us'] for c in cps) / 1000:5.1f}"
          if cps else "          ")
    by_writer = sum(1 for c in cps if c["by"] != "checkpointer")
    wal = max((c.get("wal_frames", 0) for c in commits), default=0)
    return (f"{b['t_ms'] / 1000:5.1f} {b['n']:5d} {b['p50'] / 1000:5.1f} {b['p99'] / 1000:5.1f} "
            f"{b['max'] / 1000:6.1f} |{bar:<{BAR_MAX}}| {len(commits):4d} {jobs:4d} "
            f"{commit_ms:5.1f} {len(fsyncs):4d} {fsync_ms:5.1f} {cp} {by_writer:3d} {wal:5d}")


LEGEND = ("s: the bin's start in seconds; n: deliveries answered in it, their p50, p99 and max "
          "latency in ms; cmts: commits begun in it, jobs: the largest, c.ms: the longest "
          "(its checkpoint included); fsyn: fsyncs, f.ms: the longest; ckpt: checkpoints and "
          "their ms in all, wrt: those run inside a commit; WAL: its most frames after a commit")


def picture(title: str, latencies: list[tuple[int, int]], events: list[dict]) -> str:
    """The trace of one run as text, with what its slowest deliveries overlapped."""
    lines = [
        f"{title}",
        f"    s     n   p50   p99    max |p99, one # per {BAR_MS} ms{'':<{BAR_MAX - 20}}| "
        f"cmts jobs  c.ms fsyn  f.ms ckpt n, ms wrt   WAL",
    ]
    lines += [row(b) for b in bins(latencies, events)]
    lines.append(LEGEND)
    lines += tail_causes(latencies, events)
    return "\n".join(lines)


def overlapping(deliveries: list[tuple[int, int]], spans: list[tuple[int, int]]) -> float:
    """The share of deliveries whose wait overlapped one of `spans` (start, end), in µs."""
    if not deliveries:
        return 0.0
    spans = sorted(spans)
    starts = [s for s, _ in spans]
    hit = 0
    for at, took in deliveries:
        sent = at - took
        i = bisect.bisect_right(starts, at)
        # Spans are short and few: look back over those that began before the answer.
        for s, e in reversed(spans[max(0, i - 50):i]):
            if e >= sent:
                hit += 1
                break
    return hit / len(deliveries)


def tail_causes(latencies: list[tuple[int, int]], events: list[dict]) -> list[str]:
    """How many of the slowest deliveries, against all, waited across a checkpoint, a commit
    of the largest batches, or a slow fsync: a cause shows as a tail share well above the
    overall one."""
    if not latencies:
        return []
    by_latency = sorted(latencies, key=lambda d: d[1])
    tail = by_latency[-max(1, int(len(by_latency) * TAIL_SHARE)):]
    cut = tail[0][1]
    commits = [e for e in events if e["kind"] == "commit"]
    fsyncs = [e for e in events if e["kind"] == "fsync"]
    big = sorted(c["jobs"] for c in commits)
    big_cut = percentile(big, 0.99)
    slow = sorted(f["fsync_us"] for f in fsyncs)
    slow_cut = percentile(slow, 0.99)
    def spans(kind: str, took: str, keep) -> list[tuple[int, int]]:
        return [(e["at_us"], e["at_us"] + e[took]) for e in events
                if e["kind"] == kind and keep(e)]

    kinds = {
        "a WAL checkpoint inside a commit": spans(
            "checkpoint", "checkpoint_us", lambda e: e["by"] != "checkpointer"),
        "the checkpointer's checkpoint (no commit waits for it)": spans(
            "checkpoint", "checkpoint_us", lambda e: e["by"] == "checkpointer"),
        f"a commit of ≥ {big_cut} jobs (its 1% largest)": spans(
            "commit", "commit_us", lambda e: e["jobs"] >= big_cut),
        f"an fsync of ≥ {slow_cut / 1000:.1f} ms (its 1% slowest)": spans(
            "fsync", "fsync_us", lambda e: e["fsync_us"] >= slow_cut),
    }
    checkpoints = [e for e in events if e["kind"] == "checkpoint"]
    in_commit = [e for e in checkpoints if e["by"] != "checkpointer"]
    wal = max((c.get("wal_frames", 0) for c in commits), default=0)
    out = [f"slowest {TAIL_SHARE:.0%} of {len(latencies)} deliveries: ≥ {cut / 1000:.1f} ms; "
           f"{len(commits)} commits (median {percentile(big, 0.5)} jobs, max "
           f"{big[-1] if big else 0}), {len(fsyncs)} fsyncs (median "
           f"{percentile(slow, 0.5) / 1000:.2f} ms), {len(checkpoints)} checkpoints "
           f"({len(in_commit)} in a commit, "
           f"{sum(e['checkpoint_us'] for e in in_commit) / 1000:.1f} ms in all); "
           f"the WAL at most {wal} frames after a commit"]
    for name, found in kinds.items():
        if found:
            out.append(f"  waited across {name}: {overlapping(tail, found):.0%} of the slowest, "
                       f"{overlapping(latencies, found):.0%} of all")
    stalls = [span for name, found in kinds.items() if "no commit waits" not in name
              for span in found]
    if events:
        out.append(f"  across none of the commit's stalls above: "
                   f"{1 - overlapping(tail, stalls):.0%} of the slowest, "
                   f"{1 - overlapping(latencies, stalls):.0%} of all")
    return out
