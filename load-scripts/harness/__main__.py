"""The harness for shell scripts: `PYTHONPATH=load-scripts python3 -m harness COMMAND …`.

  require SCRIPT TOOL...     the missing-tool check (harness.tools.verdict): exits 0 when every
                             TOOL is on PATH; otherwise 1 in CI (FAULTLINE_REQUIRE_TOOLS set),
                             or 3 after a `skipped:` line (the shell's `require` exits 0)
  sign                       the hex HMAC-SHA256 of stdin under $WEBHOOK_SECRET (kept out of
                             the command line, so out of `ps`)
  sign-serve                 the same for many bodies, one process for all of them: reads a
                             secret line, a byte count line and that many bytes, writes the hex
                             and a newline, until stdin ends
  setup URL ENV              an instance, a digest and an inbox per provider -> ENV, as the
                             variables the scenario scripts source
  postgres start WORK        a fresh server in WORK/pg; prints PG_URL, PG_PASSWORD, PG_PORT,
                             PG_PID, PG_DIR, PG_BIN as shell assignments to eval
  postgres stop WORK         SIGINT to the postmaster by its PID, and a wait until it is gone
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from . import ingest, postgres, procs, signing, tools


def shell(**values) -> None:
    for name, value in values.items():
        print(f"{name}={shlex.quote(str(value))}")


def sign_serve() -> None:
    """One signer for a shell script's whole run: a Python start costs more than a thousand
    signatures, and a scenario signs every request."""
    source, out = sys.stdin.buffer, sys.stdout
    while True:
        secret = source.readline()
        size = source.readline()
        if not secret or not size:
            return
        body = source.read(int(size))
        out.write(signing.hex_signature(secret.rstrip(b"\n").decode(), body) + "\n")
        out.flush()


def setup(url: str, env_path: str) -> None:
    env = ingest.setup(url)
    ingest.write_shell_env(ingest.shell_values(env), env_path, url)
    print(f"instance {env['instance']}, digest {env['digest']}")
    for vcs, inbox in env["inboxes"].items():
        print(f"  {vcs} inbox {inbox['id']}")
    print(f"ids, key and secrets written to {env_path}")


def pg(command: str, work: str) -> None:
    if command == "start":
        server = postgres.PgServer(Path(work))
        try:
            server.database(postgres.DATABASE)
        except BaseException:
            server.stop()
            raise
        server.save()
        shell(PG_URL=server.url, PG_PASSWORD=server.password, PG_PORT=server.port,
              PG_PID=server.pid, PG_DIR=server.dir, PG_BIN=server.bin)
        return
    server = postgres.PgServer(Path(work), fresh=False)
    server.stop()
    server.save()


def main(argv: list[str]) -> None:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "require" and len(args) >= 2:
        found = tools.verdict(args[0], *args[1:])
        sys.exit({None: 0, "fail": 1, "skip": tools.SKIPPED_STATUS}[found])
    elif command == "sign-serve" and not args:
        sign_serve()
    elif command == "sign" and not args:
        secret = os.environ.get("WEBHOOK_SECRET")
        if not secret:
            raise SystemExit("harness sign: WEBHOOK_SECRET is not set")
        print(signing.hex_signature(secret, sys.stdin.buffer.read()), end="")
    elif command == "setup" and len(args) == 2:
        setup(args[0], args[1])
    elif command == "postgres" and len(args) == 2 and args[0] in ("start", "stop"):
        pg(args[0], args[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except procs.Failure as failure:
        print(f"harness: {failure}", file=sys.stderr)
        sys.exit(1)
