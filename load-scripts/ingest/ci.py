"""The webhook ingestion service under parallel load, every total reconciled (ci.sh).

Runs the harness's own checks (harness/test_harness.py, test_gitlab.py), builds the service
($CI_PROFILE: debug or release), starts it on a fresh temporary database and a free port of
127.0.0.1, runs setup.sh, the classic 20 x 50 ignored Bitbucket pull requests, a mixed run of
every scenario at once, and reconcile.sh; checks that no key or secret reached the service's
log.
The server is stopped by its PID however the run ends.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import client, ingest, script  # noqa: E402
from harness.procs import Failure  # noqa: E402
from harness.signing import PROVIDERS  # noqa: E402
from scenarios import Scenarios  # noqa: E402

LOAD_SCRIPTS = Path(__file__).resolve().parents[1]
CLASSIC_CLIENTS = 20
CLASSIC_REQUESTS = 50
MIXED_CLIENTS = 4
MIXED_REQUESTS = 20
# Every scenario of the folder, at once in the mixed run.
MIXED = ("post-github-push.sh", "post-gitea-forgejo-push.sh", "post-bitbucket-pull-request.sh",
         "post-bad-signature.sh", "post-malformed.sh", "post-duplicate-delivery.sh",
         "post-new-digest.sh", "query-real-instance.sh", "query-non-existent-instance.sh")
# The secrets of the scenarios' environment file: the API key and every inbox's secret.
SECRETS = ("API_KEY", *(f"{vcs.upper()}_SECRET" for vcs in PROVIDERS))


def body(run: script.Run) -> None:
    print("== the harness's own checks", flush=True)
    subprocess.run([sys.executable, "-m", "unittest", "-q", "harness.test_harness",
                    "harness.test_gitlab"],
                   cwd=LOAD_SCRIPTS, check=True)
    release = ingest.release_profile()
    print(f"== build ({'release' if release else 'debug'})", flush=True)
    binary = ingest.build(release=release)

    print("== start", flush=True)
    db = run.work / "ingest.db"
    server = run.add(ingest.start(binary, run.work, ["--db", db], name="server"))
    print(f"server {server.pid} on 127.0.0.1:{server.port}, database {db}")
    status, _ = client.get(server.url, "/health")
    if status != 200:
        raise Failure(f"/health answered {status}")

    scenarios = Scenarios(server.url, run.work)
    print("== setup", flush=True)
    env = scenarios.setup()
    scenarios.reconcile(begin=True)
    print(f"== classic: {CLASSIC_CLIENTS} x {CLASSIC_REQUESTS} ignored Bitbucket pull requests",
          flush=True)
    scenarios.runner(CLASSIC_CLIENTS, f"post-bitbucket-pull-request.sh {CLASSIC_REQUESTS}")
    print(f"== mixed: {MIXED_CLIENTS} x {MIXED_REQUESTS} of every scenario at once", flush=True)
    scenarios.runner(MIXED_CLIENTS, *(f"{name} {MIXED_REQUESTS}" for name in MIXED))
    print("== reconcile", flush=True)
    scenarios.reconcile()

    print("== no key or secret in the log", flush=True)
    server.stop()
    log = server.log_path.read_text(errors="replace")
    missing = [name for name in SECRETS if not env.get(name)]
    if missing:
        raise Failure(f"the environment file has no {', '.join(missing)}")
    secrets = [env[name] for name in SECRETS]
    if any(secret in log for secret in secrets):
        raise Failure("a key or secret appears in the server log")
    print(f"none of {len(secrets)} in {len(log.splitlines())} log lines")


if __name__ == "__main__":
    script.main("ci.sh", body, tools_needed=("curl",))
