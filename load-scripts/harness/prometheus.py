"""A real Prometheus on 127.0.0.1 scraping some targets (and evaluating rule files), and its
query API; a real Alertmanager."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

from .client import get
from .procs import Failure, Server, free_port, wait_until

# What a script that starts Prometheus needs, and how to get it.
TOOLS = ("prometheus", "promtool")
INSTALL = "apt-get install prometheus; promtool comes with it"
JOB = "faultline"
# Every second: a check waits a few intervals for what it sent to be scraped.
SCRAPE_INTERVAL_S = 1
EVAL_INTERVAL_S = 1
# Prometheus opens its database before it is ready; a loaded machine takes a few seconds.
START_TIMEOUT_S = 30.0


def start(work: Path, targets: list[str], rules: list[Path] = ()) -> Server:
    """Prometheus scraping `targets` (`127.0.0.1:PORT`) under job JOB and evaluating `rules`
    (absolute paths); returned once it says it is ready."""
    port = free_port()
    config = Path(work) / "prometheus.yml"
    rule_files = f"rule_files: [{', '.join(json.dumps(str(r)) for r in rules)}]\n" if rules else ""
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n"
        f"  evaluation_interval: {EVAL_INTERVAL_S}s\n{rule_files}"
        f"scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n"
        f"      - targets: [{', '.join(json.dumps(t) for t in targets)}]\n")
    return ready("prometheus", ["prometheus", f"--config.file={config}",
                                f"--storage.tsdb.path={Path(work) / 'tsdb'}",
                                f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                 work, port)


def alertmanager(work: Path, config: Path) -> Server:
    """Alertmanager with `config`, alone (no cluster: it gossips with nobody); returned once it
    says it is ready. Debian names the server prometheus-alertmanager."""
    port = free_port()
    return ready("alertmanager", [
        "prometheus-alertmanager", f"--config.file={config}",
        f"--storage.path={Path(work) / 'alertmanager'}", f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=", "--log.level=warn"], work, port)


def ready(name: str, argv: list, work: Path, port: int) -> Server:
    """A server of the Prometheus project started on `port`, once its `/-/ready` answers 200."""
    server = Server(name, argv, work, port=port, timeout_s=START_TIMEOUT_S)
    try:
        wait_until(lambda: get(server.url, "/-/ready")[0] == 200, START_TIMEOUT_S,
                   f"{name} ready", server.alive, pause_s=0.1)
    except Failure as failure:
        server.stop()
        raise Failure(f"{failure}: {server.log_tail()}") from None
    return server


def api(url: str, path: str, **params) -> dict:
    """The `data` of a Prometheus HTTP API answer."""
    status, body = get(url, f"/api/v1/{path}?{urllib.parse.urlencode(params)}")
    answer = json.loads(body) if body else {}
    if status != 200 or answer.get("status") != "success":
        raise Failure(f"prometheus {path} {params}: {status} {body[:300]!r}")
    return answer["data"]


def query(url: str, promql: str, at: float | None = None) -> float | None:
    """The single value of an instant query (at Unix time `at`), None when it is empty."""
    params = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
    result = api(url, "query", **params)["result"]
    return float(result[0]["value"][1]) if result else None
