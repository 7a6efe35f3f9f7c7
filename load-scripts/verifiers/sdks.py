"""Deliveries signed by the senders' own libraries, sent over TCP to examples/webhook-intake
(faultline's verified intake) (sdks.sh): from PyPI standardwebhooks, svix, stripe and
slack-sdk (sdk_senders.py; Shopify, Gitea, Forgejo, Bitbucket by their documented formulas,
GitLab's token as it is), from npm @octokit/webhooks-methods (octokit.mjs). The other way
round, deliveries signed by faultline's Signer (`webhook-intake sign`) must pass each of
those libraries' verifiers, and fail them with the body changed. Every answer's status and
code is checked by the sender scripts; then the ledger's counts on /metrics must equal their
tallies exactly, answer by answer, and every refusal must be a client error. Installs the
libraries into target/webhook-sdks/ (a venv, an npm folder) when missing.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import ingest, metrics, script  # noqa: E402
from harness.procs import Failure, Server  # noqa: E402

HERE = Path(__file__).resolve().parent
PACKAGE = "webhook-intake"
PYPI = ("standardwebhooks", "svix", "stripe", "slack-sdk")
PYPI_IMPORTS = "import standardwebhooks, svix, stripe, slack_sdk"
# Major 5: it runs on Node 18, what Debian 12 ships; 6 asks for Node 20.
OCTOKIT = "@octokit/webhooks-methods@5"
OCTOKIT_MAJOR = '"version": "5.'
ROUTE = "/hooks/{inbox}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# The secrets, as each sender's settings page shows them, by inbox: (its scheme, its secret).
INBOXES = {
    "github": ("github", "github webhook secret"),
    "gitlab": ("gitlab", "glpat-like-token-of-a-hook"),
    "gitlab-signed": ("gitlab-signed", "whsec_" + b64("a gitlab signing token, 32 bytes")),
    "bitbucket": ("bitbucket", "bitbucket secret"),
    "gitea": ("gitea", "gitea secret"),
    "forgejo": ("forgejo", "forgejo secret"),
    "standard": ("standard-webhooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    "svix": ("standard-webhooks", "whsec_" + b64("the key of an inbox fed by svix!")),
    "stripe": ("stripe", "whsec_stripe_endpoint_secret"),
    "slack": ("slack", "8f742231b10e8888abcd99yyyzzz85a5"),
    "shopify": ("shopify", "shpss_shopify_app_secret"),
}


def install(sdks: Path) -> tuple[Path, Path]:
    """The venv's python and the npm folder, each with its libraries, installed if missing."""
    python, npm = sdks / "venv" / "bin" / "python", sdks / "npm"
    if not (python.exists() and subprocess.run([python, "-c", PYPI_IMPORTS],
                                               capture_output=True).returncode == 0):
        print(f"sdks.sh: installing {', '.join(PYPI)} into {sdks}/venv", flush=True)
        subprocess.run([sys.executable, "-m", "venv", sdks / "venv"], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *PYPI], check=True)
    octokit = npm / "node_modules" / "@octokit" / "webhooks-methods" / "package.json"
    if not (octokit.exists() and OCTOKIT_MAJOR in octokit.read_text()):
        print(f"sdks.sh: installing {OCTOKIT} into {npm}", flush=True)
        npm.mkdir(parents=True, exist_ok=True)
        if not (npm / "package.json").exists():
            subprocess.run(["npm", "init", "-y"], cwd=npm, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["npm", "install", "--silent", OCTOKIT], cwd=npm, check=True)
    return python, npm


def tally(argv: list, env: dict, what: str) -> dict[str, int]:
    """A sender's tally of answers by code (it checked each answer itself)."""
    done = subprocess.run([str(a) for a in argv], env=env, stdout=subprocess.PIPE)
    if done.returncode != 0:
        raise Failure(f"{what} failed")
    return json.loads(done.stdout)


def check_ledger(url: str, sent: Counter) -> None:
    """The ledger's counts of the route, code by code and ok, equal the senders' tallies;
    every refusal is the sender's to fix: a client error, which spends no error budget."""
    m, _ = metrics.quiescent(url)
    counted = Counter()
    for labels, value in m.by_name.get("faultline_errors_total", []):
        if labels.get("route") == ROUTE:
            counted[labels["code"]] += int(value)
    counted["ok"] = m.total("faultline_route_requests_total", route=ROUTE, outcome="ok")
    handled = {cls: m.total("faultline_route_requests_total", route=ROUTE, outcome="handled",
                            **{"class": cls}) for cls in ("4xx", "5xx")}
    print(f"sent {sum(sent.values())}: {dict(sorted(sent.items()))}")
    if counted != sent:
        raise Failure(f"the ledger counted {dict(sorted(counted.items()))}")
    refused = sum(n for code, n in sent.items() if code != "ok")
    if handled != {"4xx": refused, "5xx": 0}:
        raise Failure(f"{refused} refusals, the ledger's handled by class: {handled}")


def body(run: script.Run) -> None:
    python, npm = install(ingest.target_dir() / "webhook-sdks")
    binary = ingest.build(PACKAGE, PACKAGE)
    argv = [binary, "--port", 0]
    for inbox, (scheme, secret) in INBOXES.items():
        argv += ["--inbox", f"{inbox}={scheme}:{secret}"]
    intake = run.add(Server("intake", argv, run.work))
    env = dict(os.environ, WEBHOOK_INTAKE=str(binary),
               **{f"SECRET_{name.upper().replace('-', '_')}": secret
                  for name, (_, secret) in INBOXES.items()})
    addr = f"127.0.0.1:{intake.port}"
    sent = Counter(tally([python, HERE / "sdk_senders.py", addr], env, "sdk_senders.py"))
    # An ES module finds its imports beside it: run it from the npm folder.
    shutil.copy(HERE / "octokit.mjs", npm / "octokit.mjs")
    sent.update(tally(["node", npm / "octokit.mjs", addr], env, "octokit.mjs"))
    check_ledger(intake.url, sent)
    print("sdks.sh: every SDK-signed delivery answered as expected and counted exactly")


if __name__ == "__main__":
    script.main("sdks.sh", body, tools_needed=("node", "npm"))
