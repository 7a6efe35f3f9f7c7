"""nginx in front of one upstream on 127.0.0.1, with the upstream's connections kept alive: one
process, no master, so it runs as whoever runs the script and stops with one PID."""

from __future__ import annotations

import signal
from pathlib import Path

from .client import get
from .procs import Failure, Server, free_port, wait_until

# How many idle connections to the upstream each worker keeps, as a production proxy would.
UPSTREAM_KEEPALIVE = 16
START_TIMEOUT_S = 10.0

CONFIG = """daemon off;
master_process off;
worker_processes 1;
error_log {dir}/logs/error.log error;
pid {dir}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_max_body_size 8m;
    upstream upstream {{
        server 127.0.0.1:{upstream};
        keepalive {keepalive};
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # A request the upstream lost is not tried again elsewhere: a loss shows as 502.
            proxy_next_upstream off;
        }}
    }}
}}
"""


def start(work: Path, upstream: int) -> Server:
    """nginx proxying to 127.0.0.1:`upstream`; its error log is `error_log(server)`."""
    port = free_port()
    root = Path(work) / "nginx"
    (root / "logs").mkdir(parents=True)
    (root / "nginx.conf").write_text(CONFIG.format(dir=root, upstream=upstream, port=port,
                                                   keepalive=UPSTREAM_KEEPALIVE))
    server = Server("nginx", ["nginx", "-p", root, "-c", root / "nginx.conf"], work, port=port,
                    timeout_s=START_TIMEOUT_S, stop_signal=signal.SIGTERM)
    try:
        wait_until(lambda: get(server.url, "/")[0] != 0, START_TIMEOUT_S, "nginx answering",
                   server.alive)
    except Failure as failure:
        server.stop()
        raise Failure(f"{failure}: {server.log_tail()}") from None
    return server


def error_log(work: Path) -> str:
    path = Path(work) / "nginx" / "logs" / "error.log"
    return path.read_text(errors="replace") if path.exists() else ""
