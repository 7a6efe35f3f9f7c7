"""The failure lab (examples/failure-lab): a server on 127.0.0.1 whose routes fail in every
way the layer counts, for the benchmarks, the errors page and the Prometheus fleet."""

from __future__ import annotations

import signal
from pathlib import Path

from .ingest import build as cargo_build
from .procs import Server, free_port, server_env

PACKAGE = "failure-lab"
# A server under valgrind takes far longer to accept its first connection, and to write its
# profile on the way out.
START_TIMEOUT_VALGRIND_S = 120.0


def build(release: bool = False) -> Path:
    return cargo_build(PACKAGE, PACKAGE, release)


def start(binary: Path, work: Path, name: str = "lab", mode: str | None = None,
          backtrace: bool = False, valgrind_out: Path | None = None,
          quiet: bool = False, keep_log: bool = True) -> Server:
    """One lab on 127.0.0.1, stopped by SIGTERM to its PID (SIGINT under valgrind, which then
    writes its profile on the way out; `Server` gives the child SIGINT's default action back,
    which a script started as a background job would otherwise pass on ignored). `mode` picks the layer's setting (the benchmarks' rows);
    `backtrace` sets RUST_BACKTRACE=1 on purpose, cleared otherwise; `valgrind_out` runs it
    under callgrind; `quiet` sends its log lines (its stdout) to /dev/null, on a free port
    given to it."""
    port = free_port() if quiet or valgrind_out is not None else None
    argv = [binary, "--port", port or 0] + (["--mode", mode] if mode else [])
    extra = {}
    if valgrind_out is not None:
        argv = ["valgrind", "--tool=callgrind", "--dump-instr=yes",
                f"--callgrind-out-file={valgrind_out}", *argv]
        extra = {"timeout_s": START_TIMEOUT_VALGRIND_S, "stop_timeout_s": START_TIMEOUT_VALGRIND_S}
    return Server(name if port is None else f"{name}-{port}", argv, work,
                  env=server_env(backtrace), port=port, quiet=port is not None,
                  stop_signal=signal.SIGINT if valgrind_out else signal.SIGTERM, keep_log=keep_log, **extra)
