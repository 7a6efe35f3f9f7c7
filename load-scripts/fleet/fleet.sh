#!/usr/bin/env bash
# A fleet of three failure-lab instances scraped by a real Prometheus server on 127.0.0.1.
#
# Sends a known mixed load spread across the instances, then asks Prometheus's HTTP API for
# sum(faultline_requests_total) and the per-outcome sums, and exits non-zero unless they equal
# what was sent. This is how a service outgrows one machine: Prometheus aggregates the
# instances' ledgers; faultline keeps no cluster state of its own.
#
# usage: load-scripts/fleet/fleet.sh [--release]
# needs: cargo, curl, python3 (to find free ports), prometheus and promtool (Debian package
# 'prometheus'). It installs nothing: it says what is missing and how to install it.
set -euo pipefail
cd "$(dirname "$0")/../.."

profile=debug
cargo_flags=()
if [[ "${1:-}" == "--release" ]]; then
    profile=release
    cargo_flags=(--release)
fi

# How the failure lab is built and where cargo puts it (inside the target directory's profile
# folder): the one place to change when it moves.
LAB_BUILD=(cargo build -p failure-lab)
LAB_PATH=failure-lab

INSTANCES=3
SCRAPE_INTERVAL_S=1
# Give Prometheus this long to scrape what the load left behind before calling it a mismatch.
SETTLE_TIMEOUT_S=30

missing=()
for tool in curl python3 prometheus promtool; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "fleet: ${missing[*]} not found; install with: apt-get install curl python3 prometheus" \
        "(promtool comes with prometheus)" >&2
    exit 1
fi

"${LAB_BUILD[@]}" --quiet "${cargo_flags[@]}"
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
lab="$target_dir/$profile/$LAB_PATH"

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Start the instances; each prints its address as its first line.
ports=()
for i in $(seq 1 "$INSTANCES"); do
    "$lab" --port 0 >"$work/lab$i.out" 2>"$work/lab$i.err" &
    pids+=("$!")
    for _ in $(seq 1 100); do
        [[ -s "$work/lab$i.out" ]] && break
        sleep 0.05
    done
    port=$(head -1 "$work/lab$i.out" | sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p')
    [[ -n "$port" ]] || { echo "fleet: instance $i did not start" >&2; cat "$work/lab$i.err" >&2; exit 1; }
    ports+=("$port")
done
echo "fleet: instances on ports ${ports[*]}"

prom_port=$(free_port)
targets=$(printf '"127.0.0.1:%s",' "${ports[@]}")
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: ${SCRAPE_INTERVAL_S}s
scrape_configs:
  - job_name: faultline
    static_configs:
      - targets: [${targets%,}]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$work/prom.log" 2>&1 &
pids+=("$!")
prom="http://127.0.0.1:$prom_port"
for _ in $(seq 1 100); do
    curl -fsS "$prom/-/ready" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$prom/-/ready" >/dev/null || { echo "fleet: prometheus did not start" >&2; cat "$work/prom.log" >&2; exit 1; }

# The load: instance i gets a different mix, so a wrong sum cannot pass by symmetry.
# Each line: path, expected status, outcome.
declare -A sent=([ok]=0 [handled]=0 [rejected]=0 [panicked]=0)
send() { # instance_port path count expected_status outcome
    local port=$1 path=$2 count=$3 status=$4 outcome=$5
    local urls=()
    for _ in $(seq 1 "$count"); do urls+=(-o /dev/null "http://127.0.0.1:$port$path"); done
    # One curl reuses one connection for all its URLs; each prints the status it saw.
    curl -s -w '%{http_code}\n' "${urls[@]}" >"$work/statuses.$port.${path//\//_}"
    local got
    got=$(grep -c "^$status\$" "$work/statuses.$port.${path//\//_}" || true)
    if [[ "$got" -ne "$count" ]]; then
        echo "fleet: $path on $port: expected $count x $status, got $got" >&2
        return 1
    fi
}
jobs_pids=()
for i in $(seq 0 $((INSTANCES - 1))); do
    port=${ports[$i]}
    n_ok=$((200 + 50 * i)) n_handled=$((60 + 7 * i)) n_missing=$((30 + 3 * i)) n_panic=$((10 + i))
    send "$port" /ok "$n_ok" 200 ok & jobs_pids+=("$!")
    send "$port" /handled "$n_handled" 422 handled & jobs_pids+=("$!")
    send "$port" "/missing/$i" "$n_missing" 404 rejected & jobs_pids+=("$!")
    send "$port" /panic "$n_panic" 500 panicked & jobs_pids+=("$!")
    sent[ok]=$((sent[ok] + n_ok))
    sent[handled]=$((sent[handled] + n_handled))
    sent[rejected]=$((sent[rejected] + n_missing))
    sent[panicked]=$((sent[panicked] + n_panic))
done
for pid in "${jobs_pids[@]}"; do
    wait "$pid"
done
total=$((sent[ok] + sent[handled] + sent[rejected] + sent[panicked]))
echo "fleet: sent $total requests (ok ${sent[ok]}, handled ${sent[handled]}, rejected ${sent[rejected]}, panicked ${sent[panicked]})"

# Every query of one check is evaluated at the same instant ($at), so that a scrape landing
# between two of them cannot make the sums disagree with the scrape count.
at=
query() { # PromQL -> the single value of the result vector at $at, or empty
    curl -fsS "$prom/api/v1/query" --data-urlencode "query=$1" --data-urlencode "time=$at" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

# Every scrape of /metrics passes the layer too and is counted ok once it has finished, so a
# target's latest sample includes all its earlier scrapes: subtract (scrapes - 1) per target.
scrapes_before_latest='sum(count_over_time(up{job="faultline"}[1h])) - count(up{job="faultline"})'
deadline=$((SECONDS + SETTLE_TIMEOUT_S))
while true; do
    sleep "$SCRAPE_INTERVAL_S"
    at=$(date +%s.%N)
    scraped=$(query "$scrapes_before_latest")
    got_total=$(query 'sum(faultline_requests_total)')
    ok=true
    declare -A got=()
    for outcome in ok handled rejected panicked service_error aborted cancelled; do
        got[$outcome]=$(query "sum(faultline_requests_total{outcome=\"$outcome\"})")
    done
    [[ -n "$scraped" && -n "$got_total" ]] || ok=false
    if $ok; then
        scraped=${scraped%.*} got_total=${got_total%.*}
        [[ $((got_total - scraped)) -eq $total ]] || ok=false
        [[ $((${got[ok]%.*} - scraped)) -eq ${sent[ok]} ]] || ok=false
        for outcome in handled rejected panicked; do
            [[ ${got[$outcome]%.*} -eq ${sent[$outcome]} ]] || ok=false
        done
        for outcome in service_error aborted cancelled; do
            [[ ${got[$outcome]%.*} -eq 0 ]] || ok=false
        done
    fi
    if $ok; then
        break
    fi
    if ((SECONDS > deadline)); then
        echo "fleet: MISMATCH after ${SETTLE_TIMEOUT_S}s: sum=$got_total scrapes=$scraped sent=$total" >&2
        for outcome in "${!got[@]}"; do echo "  $outcome: prometheus ${got[$outcome]} sent ${sent[$outcome]:-0}" >&2; done
        exit 1
    fi
done

# The exposition itself must pass Prometheus's own linter.
curl -fsS "http://127.0.0.1:${ports[0]}/metrics" >"$work/exposition.txt"
if ! promtool check metrics <"$work/exposition.txt"; then
    echo "fleet: promtool check metrics failed on the exposition" >&2
    exit 1
fi
echo "fleet: promtool check metrics: clean"

at=$(date +%s.%N)
failures=$(query 'sum(faultline_reports_total)')
echo "fleet: prometheus agrees: sum(faultline_requests_total) = $got_total = $total sent + $scraped scrapes"
echo "fleet: per outcome: ok ${got[ok]%.*} (- $scraped scrapes), handled ${got[handled]}, rejected ${got[rejected]}, panicked ${got[panicked]}"
echo "fleet: failure reports (written + suppressed) across the fleet: $failures"
[[ ${failures%.*} -eq $((sent[handled] + sent[rejected] + sent[panicked])) ]] || {
    echo "fleet: MISMATCH: reports $failures != failures sent" >&2
    exit 1
}
echo "fleet: OK"
