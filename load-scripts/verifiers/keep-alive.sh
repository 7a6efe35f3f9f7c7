#!/usr/bin/env bash
# No real delivery lost behind a proxy that keeps its connections: nginx (upstream keepalive
# 16) in front of examples/webhook-intake's `Verified` GitHub route. Parallel clients
# interleave forged deliveries with large bodies, refused before their bodies are read, and
# real signed ones (keep_alive.py). Every real delivery must be answered 200 and every forged
# one 401 or 400, nginx's error log must show no upstream connection lost, and the ledger on
# /metrics must count each request exactly once. Stops both servers by their PIDs; exits
# non-zero on any failure.
#
#   load-scripts/verifiers/keep-alive.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh

require keep-alive.sh python3 nginx curl

secret="a github webhook secret"
cargo build -q -p webhook-intake
scratch keep-alive.sh
nginx_pid=
trap 'stop_scratch_and_nginx' EXIT
stop_scratch_and_nginx() {
    [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null || true
    stop_scratch
}

port=$(free_port)
target/debug/webhook-intake --port "$port" --inbox repo=github:"$secret" \
    >"$work/stdout" 2>"$work/stderr" &
pid=$!
wait_for "$pid" 30 curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" ||
    fail "the intake did not start"

# One process, no master: it runs as whoever runs the script, and stops with one PID.
proxy=$(free_port)
mkdir -p "$work/nginx/logs"
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log $work/nginx/logs/error.log error;
pid $work/nginx/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    client_max_body_size 8m;
    upstream intake {
        server 127.0.0.1:$port;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$proxy;
        location / {
            proxy_pass http://intake;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # A request the upstream lost is not tried again elsewhere: a loss shows as 502.
            proxy_next_upstream off;
        }
    }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" >"$work/nginx/stdout" 2>&1 &
nginx_pid=$!
wait_for "$nginx_pid" 10 curl -s -o /dev/null "http://127.0.0.1:$proxy/" ||
    fail "nginx did not start: $(cat "$work/nginx/stdout")"

python3 load-scripts/verifiers/keep_alive.py "127.0.0.1:$proxy" "127.0.0.1:$port" "$secret" ||
    fail "keep_alive.py failed; nginx's errors: $(tail -5 "$work/nginx/logs/error.log")"
if grep -E "upstream prematurely closed|Broken pipe|reset by peer" "$work/nginx/logs/error.log"; then
    fail "nginx lost upstream connections"
fi
echo "keep-alive.sh: every real delivery behind nginx answered 200, every request counted once"
