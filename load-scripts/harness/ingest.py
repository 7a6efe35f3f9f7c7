"""The webhook-ingest service: where cargo puts it, its start, an instance with its inboxes
through the management API, and the pushes the scripts send it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from .client import Conn
from .procs import Failure, Server, server_env
from .signing import PROVIDERS

# The package and binary: the one place to change when the service moves.
PACKAGE = "webhook-ingest"
BINARY = "webhook-ingest"
# Where each provider's push says it came from (Gitea's and Forgejo's payloads are GitHub's).
REPOSITORIES = {"github": "acme/widgets", "gitea": "acme/sprockets", "forgejo": "acme/cogs"}


def target_dir() -> Path:
    """The workspace's target directory, as cargo reports it."""
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                          capture_output=True, text=True, check=True)
    return Path(json.loads(meta.stdout)["target_directory"])


# The variable that picks the build of the scripts CI runs: `debug` (the default: it reuses
# what `cargo test` compiled) or `release`.
PROFILE_ENV = "CI_PROFILE"


def release_profile() -> bool:
    """Whether $CI_PROFILE asks for a release build; a failure for anything but the two."""
    profile = os.environ.get(PROFILE_ENV) or "debug"
    if profile not in ("debug", "release"):
        raise Failure(f"{PROFILE_ENV} must be debug or release, not {profile}")
    return profile == "release"


def build(package: str = PACKAGE, binary: str = BINARY, release: bool = False,
          example: str | None = None) -> Path:
    """Builds `package` (the service by default), or its example EXAMPLE, and returns the
    binary's path."""
    what = ["--example", example] if example else []
    subprocess.run(["cargo", "build", "--quiet", "-p", package, *what]
                   + (["--release"] if release else []), check=True)
    built = target_dir() / ("release" if release else "debug")
    return built / "examples" / example if example else built / binary


def start(binary: Path, work: Path, args: list, name: str = "service", port: int = 0,
          spool: Path | None = None, wrap: list | None = None, **kwargs) -> Server:
    """The service on `port` (a free one by default) with its own spool (WORK/NAME.spool, kept
    across restarts of the same NAME) and `args`; `wrap` runs it under another program
    (strace). Returned once it printed its address."""
    spool = spool or Path(work) / f"{name}.spool"
    argv = [*(wrap or []), binary, "--port", port, "--spool", spool, *args]
    return Server(name, argv, work, env=kwargs.pop("env", None) or server_env(), **kwargs)


def created(conn: Conn, path: str, body: dict | None, key: str | None = None) -> dict:
    """POST of a management resource; its JSON, or a failure unless answered 201."""
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    status, answer, _ = conn.request("POST", path, json.dumps(body) if body is not None else None,
                                     headers)
    if status != 201 or not isinstance(answer, dict):
        raise Failure(f"POST {path} answered {status}")
    return answer


def setup(url: str, providers=PROVIDERS, description: str = "load") -> dict:
    """An instance, a digest and an inbox per provider: {instance, key, digest, inboxes:
    {vcs: {id, secret}}, setup_requests} (the requests it took, each answered 201)."""
    conn = Conn(url)
    instance = created(conn, "/api/instances", None)
    iid, key = instance["id"], instance["api_key"]
    digest = created(conn, f"/api/{iid}/digests", {"description": description}, key)
    inboxes = {}
    for vcs in providers:
        inbox = created(conn, f"/api/{iid}/digests/{digest['id']}/inboxes",
                        {"vcs": vcs, "name": f"{description} {vcs}"}, key)
        inboxes[vcs] = {"id": inbox["id"], "secret": inbox["secret"]}
    conn.close()
    return {"instance": iid, "key": key, "digest": digest["id"], "inboxes": inboxes,
            "setup_requests": 2 + len(providers)}


def shell_values(env: dict) -> dict[str, str]:
    """What `setup` made, as the variables the scenario scripts source: INSTANCE_ID, API_KEY,
    DIGEST_ID, and VCS_INBOX and VCS_SECRET per provider."""
    values = {"INSTANCE_ID": env["instance"], "API_KEY": env["key"], "DIGEST_ID": env["digest"]}
    for vcs, inbox in env["inboxes"].items():
        values[f"{vcs.upper()}_INBOX"] = inbox["id"]
        values[f"{vcs.upper()}_SECRET"] = inbox["secret"]
    return values


def write_shell_env(values: dict[str, str], path: str, url: str) -> None:
    """`values` as shell assignments in a file only its owner reads: it holds secrets."""
    old = os.umask(0o077)
    try:
        with open(path, "w") as out:
            out.write(f"# written by the load scripts for {url}; holds secrets, never commit it\n")
            out.writelines(f"{k}={shlex.quote(v)}\n" for k, v in values.items())
    finally:
        os.umask(old)


def read_shell_env(path) -> dict[str, str]:
    """The assignments `write_shell_env` wrote, read back without a shell."""
    values = {}
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#"):
            (assignment,) = shlex.split(line)
            name, value = assignment.split("=", 1)
            values[name] = value
    return values


def hook_path(env: dict, vcs: str) -> str:
    """The path deliveries of `vcs` go to, in an environment `setup` made."""
    return f"/api/{env['instance']}/inboxes/{env['inboxes'][vcs]['id']}/commits"


def push_body(vcs: str, delivery: str, commits: int) -> bytes:
    """A push of `vcs` with `commits` commits whose shas are unique to the delivery, and
    the delivery named in it (`after`, the head a real push names), so that two deliveries
    are never the same signed bytes: the service stores a copy of those under another id
    as a replay, not a delivery."""
    listed = [{"sha": f"{delivery}.{i}", "message": f"change {i} of {delivery}",
               "author": "Ada <ada@example.com>", "when": f"2026-11-30T06:{i:02d}:00Z"}
              for i in range(commits)]
    if vcs == "bitbucket":
        payload = {"repository": {"full_name": "acme/gizmos"}, "push": {"changes": [
            {"new": {"type": "branch", "name": "main"}, "commits": [
                {"hash": c["sha"], "message": c["message"], "date": c["when"],
                 "author": {"raw": c["author"]}} for c in listed]}]}}
    else:
        repository = ({"repository": {"full_name": REPOSITORIES[vcs]}} if vcs in REPOSITORIES
                      else {"project": {"path_with_namespace": "acme/gadgets"}})
        payload = dict(repository, ref="refs/heads/main", commits=[
            {"id": c["sha"], "message": c["message"], "timestamp": c["when"],
             "author": {"name": "Ada"}} for c in listed])
    payload["after"] = delivery
    return json.dumps(payload).encode()
