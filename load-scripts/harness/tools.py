"""The one check for a tool a load script needs.

The load scripts are CI steps: there (FAULTLINE_REQUIRE_TOOLS set, as `.ci/run` sets it) a
missing tool fails the script. Elsewhere the script says `skipped: TOOL not found` and exits 0,
as the tests do on a machine with only Rust."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# The variable `.ci/run` sets, and the test suites read (tests/common/tools.rs).
REQUIRE_TOOLS_ENV = "FAULTLINE_REQUIRE_TOOLS"


def tools_required() -> bool:
    """Whether every outside tool must be there (set to anything but empty or `0`)."""
    return os.environ.get(REQUIRE_TOOLS_ENV, "") not in ("", "0")


# PostgreSQL's server is a tool too, but not on PATH: Debian keeps each version's binaries in
# /usr/lib/postgresql/VERSION/bin. A script that starts one names it as this tool.
POSTGRESQL = "postgresql"
POSTGRESQL_ROOT = Path("/usr/lib/postgresql")


def postgresql_bins() -> list[Path]:
    """Every version's binary directory under POSTGRESQL_ROOT, oldest first."""
    found = sorted(POSTGRESQL_ROOT.glob("*/bin/initdb"),
                   key=lambda p: [int(x) for x in p.parent.parent.name.split(".")])
    return [initdb.parent for initdb in found]


def missing(*tools: str) -> list[str]:
    """The tools of `tools` that are not there (on PATH, or for POSTGRESQL, its binaries), in
    order."""
    return [tool for tool in tools
            if not (postgresql_bins() if tool == POSTGRESQL else shutil.which(tool))]


# The exit status of `python3 -m harness require` when the tools are missing but not
# required: the shell entry point then exits 0 itself (skipped), which a plain exit cannot say.
SKIPPED_STATUS = 3


def verdict(script: str, *tools: str, install: str = ".ci/setup installs it") -> str | None:
    """None when every tool is on PATH; otherwise, as `script`, says which are missing and how
    to install them, and returns "fail" when tools are required, "skip" when not."""
    absent = missing(*tools)
    if not absent:
        return None
    names = ", ".join(absent)
    if tools_required():
        print(f"{script}: {names} not found and {REQUIRE_TOOLS_ENV} is set ({install})",
              file=sys.stderr)
        return "fail"
    print(f"{script}: skipped: {names} not found ({install}; {REQUIRE_TOOLS_ENV}=1 makes "
          "this a failure)", file=sys.stderr)
    return "skip"


def require(script: str, *tools: str, install: str = ".ci/setup installs it") -> None:
    """Returns when every tool is on PATH; exits otherwise: 1 when tools are required, 0
    (skipped) when not."""
    found = verdict(script, *tools, install=install)
    if found is not None:
        sys.exit(1 if found == "fail" else 0)
