#!/usr/bin/env bash
# The quick-start example as a user runs it: starts examples/quickstart on a free port of
# 127.0.0.1, sends a success, a handled error, a rejection and a panic, checks each answer and
# the exact counts on /metrics, checks the inbox page, then sends SIGTERM while a request's
# body is half sent and checks that the server stops accepting, still answers that request,
# and exits 0 with every request counted. Stops the server by its PID. Exits non-zero on any
# failure.
#
#   load-scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source load-scripts/proc.sh

require quickstart.sh curl

cargo build -q -p quickstart
scratch quickstart.sh

target/debug/quickstart --port 0 >"$work/stdout" 2>"$work/stderr" &
pid=$!
for _ in $(seq 100); do
    [[ -s $work/stdout ]] && break
    sleep 0.1
done
addr=$(head -n 1 "$work/stdout" | sed -n 's/^listening on //p')
[[ $addr == 127.0.0.1:* ]] || fail "the first line is not \`listening on ADDR\`"
echo "quickstart listening on $addr"

# One request: `expect METHOD PATH STATUS CODE [curl args]`; CODE is the problem's `code`,
# or - for an answer that is not a problem.
expect() {
    local method=$1 path=$2 status=$3 code=$4
    shift 4
    local got
    got=$(curl -s -o "$work/body" -D "$work/head" -w '%{http_code}' -X "$method" "$@" "http://$addr$path")
    [[ $got == "$status" ]] || fail "$method $path: status $got, expected $status"
    if [[ $code == - ]]; then
        return
    fi
    grep -qi '^content-type: application/problem+json' "$work/head" ||
        fail "$method $path: not problem+json"
    grep -q "\"code\":\"$code\"" "$work/body" || fail "$method $path: code is not $code: $(cat "$work/body")"
}

json=(-H 'content-type: application/json')
expect POST /hooks 202 - "${json[@]}" -d '{"event":"push","commits":2}'
expect POST /hooks 422 unsupported-event "${json[@]}" -d '{"event":"issues","commits":1}'
grep -q 'event `issues` is not handled here' "$work/body" || fail "the 422 lacks its message"
expect POST /hooks 415 unsupported-media-type -d '{"event":"push","commits":2}'
expect GET /bug 500 panic
grep -q 'indexed past the end' "$work/body" && fail "the panic's text reached the client"

# Exact counts: the scrape itself is the one request in flight.
expect GET /metrics 200 -
for line in \
    'faultline_requests_total{outcome="ok"} 1' \
    'faultline_requests_total{outcome="handled"} 1' \
    'faultline_requests_total{outcome="rejected"} 1' \
    'faultline_requests_total{outcome="panicked"} 1' \
    'faultline_requests_total{outcome="service_error"} 0' \
    'faultline_requests_total{outcome="cancelled"} 0' \
    'faultline_in_flight 1' \
    'faultline_reports_total{disposition="reported"} 3' \
    'faultline_errors_total{route="/hooks",code="unsupported-event",status="422"} 1' \
    'faultline_errors_total{route="/hooks",code="unsupported-media-type",status="415"} 1' \
    'faultline_errors_total{route="/bug",code="panic",status="500"} 1'; do
    grep -qxF "$line" "$work/body" || fail "/metrics lacks \`$line\`: $(cat "$work/body")"
done

expect GET /errors/inbox 200 -
grep -qi "^content-security-policy: default-src 'none'" "$work/head" || fail "the inbox has no CSP"
for code in unsupported-event unsupported-media-type panic; do
    grep -q "$code" "$work/body" || fail "the inbox does not show $code"
done

# Graceful shutdown: a push whose body is half sent is in flight when SIGTERM comes.
body='{"event":"push","commits":3}'
exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}"
printf 'POST /hooks HTTP/1.1\r\nhost: quickstart\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s' \
    "${#body}" "${body:0:12}" >&3
scrapes=0
started=false
while ((scrapes < 100)); do
    scrapes=$((scrapes + 1))
    curl -s "http://$addr/metrics" | grep -qxF 'faultline_in_flight 2' && started=true && break
    sleep 0.1
done
$started || fail "the half-sent push never started"
kill -TERM "$pid"
sleep 0.5
kill -0 "$pid" 2>/dev/null || fail "the server exited with a request in flight"
curl -s --max-time 2 "http://$addr/metrics" >/dev/null && fail "the server still accepts after SIGTERM"
printf '%s' "${body:12}" >&3
answer=$(timeout 10 cat <&3 || true)
exec 3<&-
[[ $answer == "HTTP/1.1 202"* ]] || fail "the in-flight push was not answered 202: $answer"

status=0
wait "$pid" || status=$?
pid=
[[ $status == 0 ]] || fail "the server exited $status"
# ok: the first push, the scrape, the inbox, the scrapes while waiting, the push in flight.
ok=$((3 + scrapes + 1))
expected="stopped after $((ok + 3)) requests: $ok ok, 1 handled, 1 rejected, 1 panicked, 0 in flight"
last=$(tail -n 1 "$work/stdout")
[[ $last == "$expected" ]] || fail "last line: \`$last\`, expected \`$expected\`"
echo "quickstart.sh: every answer and count as expected; SIGTERM waited for the request in flight"
