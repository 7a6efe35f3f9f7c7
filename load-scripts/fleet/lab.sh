# shellcheck shell=bash disable=SC2034 # LAB_PORTS and the like are for the sourcing script
# A fleet of failure-lab instances scraped by a real Prometheus on 127.0.0.1, for fleet.sh
# and alerts.sh; sourced, never run.
#
#   lab_check_tools NAME        exits, saying how to install them, unless curl, python3,
#                               prometheus and promtool are on PATH (NAME prefixes the message)
#   lab_build [--release]       builds the failure lab; sets LAB_BIN
#   lab_start N                 starts N instances on free ports; sets LAB_PORTS and LAB_PIDS
#   prom_start                  starts Prometheus scraping the instances under job LAB_JOB every
#                               LAB_SCRAPE_INTERVAL_S, evaluating the rule files PROM_RULES
#                               (absolute paths, none by default) every LAB_EVAL_INTERVAL_S;
#                               waits until it is ready; sets PROM_URL and PROM_PID
#   prom_query PROMQL [TIME]    the single value of an instant query (at TIME, a Unix time),
#                               or nothing when the result is empty
#   lab_send PORT PATH COUNT STATUS
#                               COUNT GETs of PATH over one connection; fails unless every
#                               answer had STATUS
#   lab_stop_all                stops Prometheus and every instance by its PID, waiting for each
#   lab_begin NAME              makes the run's work directory (LAB_WORK), where logs and
#                               configuration go, and arms the exit trap: on failure it shows
#                               the end of Prometheus's log (NAME prefixes the line), then
#                               stops everything by PID and removes the directory

source "$(dirname "${BASH_SOURCE[0]}")/../proc.sh"

# How the failure lab is built and where cargo puts it (inside the target directory's profile
# folder): the one place to change when it moves.
LAB_BUILD=(cargo build -p failure-lab)
LAB_PATH=failure-lab
LAB_JOB=faultline
LAB_SCRAPE_INTERVAL_S=1
LAB_EVAL_INTERVAL_S=1
# A cold debug binary on a busy 2-core machine can take a few seconds to print its address,
# and Prometheus a few more to open its database.
LAB_START_TIMEOUT_S=30
LAB_PORTS=()
LAB_PIDS=()
PROM_RULES=()
PROM_PID=

lab_check_tools() {
    local name=$1 tool missing=()
    for tool in curl python3 prometheus promtool; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    if ((${#missing[@]})); then
        echo "$name: ${missing[*]} not found; install with: apt-get install curl python3 prometheus" \
            "(promtool comes with prometheus)" >&2
        exit 1
    fi
}

lab_build() {
    local profile=debug flags=() target
    if [[ ${1:-} == --release ]]; then
        profile=release flags=(--release)
        shift
    fi
    if (($#)); then
        echo "usage: $(basename "$0") [--release]" >&2
        exit 1
    fi
    "${LAB_BUILD[@]}" --quiet "${flags[@]}"
    target=$(cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
    LAB_BIN=$target/$profile/$LAB_PATH
}

# Each instance prints its address as its first line.
lab_start() {
    local n=$1 i port
    for i in $(seq 1 "$n"); do
        "$LAB_BIN" --port 0 >"$LAB_WORK/lab$i.out" 2>"$LAB_WORK/lab$i.err" &
        LAB_PIDS+=("$!")
        if ! wait_for "${LAB_PIDS[-1]}" "$LAB_START_TIMEOUT_S" test -s "$LAB_WORK/lab$i.out"; then
            echo "lab.sh: instance $i did not start" >&2
            cat "$LAB_WORK/lab$i.err" >&2
            return 1
        fi
        port=$(head -1 "$LAB_WORK/lab$i.out" | sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p')
        [[ -n $port ]] || { echo "lab.sh: instance $i printed no address" >&2; return 1; }
        LAB_PORTS+=("$port")
    done
}

prom_start() {
    local port targets list rules=""
    port=$(free_port)
    targets=$(printf '"127.0.0.1:%s",' "${LAB_PORTS[@]}")
    if ((${#PROM_RULES[@]})); then
        list=$(printf '"%s",' "${PROM_RULES[@]}")
        rules="rule_files: [${list%,}]"
    fi
    cat >"$LAB_WORK/prometheus.yml" <<EOF
global:
  scrape_interval: ${LAB_SCRAPE_INTERVAL_S}s
  evaluation_interval: ${LAB_EVAL_INTERVAL_S}s
$rules
scrape_configs:
  - job_name: $LAB_JOB
    static_configs:
      - targets: [${targets%,}]
EOF
    prometheus --config.file="$LAB_WORK/prometheus.yml" --storage.tsdb.path="$LAB_WORK/tsdb" \
        --web.listen-address="127.0.0.1:$port" --log.level=warn >"$LAB_WORK/prom.log" 2>&1 &
    PROM_PID=$!
    PROM_URL="http://127.0.0.1:$port"
    if ! wait_for "$PROM_PID" "$LAB_START_TIMEOUT_S" curl -fs -o /dev/null "$PROM_URL/-/ready"; then
        echo "lab.sh: prometheus did not start" >&2
        cat "$LAB_WORK/prom.log" >&2
        return 1
    fi
}

prom_query() {
    local time=()
    [[ -n ${2:-} ]] && time=(--data-urlencode "time=$2")
    curl -fsS "$PROM_URL/api/v1/query" --data-urlencode "query=$1" "${time[@]}" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

lab_send() {
    local port=$1 path=$2 count=$3 status=$4 urls=() got
    local out=$LAB_WORK/statuses.$port.${path//\//_}
    for _ in $(seq 1 "$count"); do urls+=(-o /dev/null "http://127.0.0.1:$port$path"); done
    # One curl reuses one connection for all its URLs; each prints the status it saw.
    curl -s -w '%{http_code}\n' "${urls[@]}" >"$out"
    got=$(grep -c "^$status\$" "$out" || true)
    if [[ $got -ne $count ]]; then
        echo "lab.sh: $path on $port: expected $count x $status, got $got" >&2
        return 1
    fi
}

lab_begin() {
    LAB_NAME=$1
    LAB_WORK=$(mktemp -d)
    trap _lab_cleanup EXIT
}

_lab_cleanup() {
    local status=$?
    if ((status != 0)) && [[ -s $LAB_WORK/prom.log ]]; then
        echo "$LAB_NAME: Prometheus's log ends:" >&2
        tail -n 5 "$LAB_WORK/prom.log" >&2
    fi
    lab_stop_all
    rm -rf "$LAB_WORK"
    exit "$status"
}

lab_stop_all() {
    local pid
    for pid in $PROM_PID "${LAB_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in $PROM_PID "${LAB_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
