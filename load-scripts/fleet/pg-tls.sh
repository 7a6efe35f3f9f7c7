#!/usr/bin/env bash
# TLS from webhook-ingest to a real PostgreSQL with ssl=on, all on 127.0.0.1.
#
# Makes a CA and a server certificate (for 127.0.0.1 alone) with openssl, and a second
# CA that signed nothing; starts a throwaway PostgreSQL with that certificate and ssl=on. Then
# starts the service against it once per case and checks:
#   - sslmode=verify-full with --db-ca (here through WEBHOOK_INGEST_DB_CA) naming the right CA
#     connects, serves /health, and its connections to the database are encrypted;
#   - sslmode=verify-full with the wrong CA stops at start-up with an error naming the
#     certificate's unknown issuer;
#   - sslmode=verify-full against a host name the certificate does not name is refused too;
#   - sslmode=require (no CA) and the default (prefer) connect encrypted, sslmode=disable
#     connects in plain text;
#   - the database password is in no output of any run.
# Everything it starts is stopped by PID at the end.
#
# usage: load-scripts/fleet/pg-tls.sh [--release]
# needs: cargo, python3, openssl, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

fleet_require openssl python3
fleet_begin '[--release]' '' "$@"
work=$FLEET_WORK

# A CA, a server certificate it signs for 127.0.0.1 only, and a CA that signed nothing.
certs=$work/certs
mkdir -p "$certs"
make_ca() {
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=$2" \
        -keyout "$certs/$1.key" -out "$certs/$1.crt" 2>/dev/null
}
make_ca ca "faultline test CA"
make_ca wrong-ca "faultline wrong CA"
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$certs/server.key" -out "$certs/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$certs/server.ext"
openssl x509 -req -in "$certs/server.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" \
    -CAcreateserial -days 1 -extfile "$certs/server.ext" -out "$certs/server.crt" 2>/dev/null

pg_start "$work"
# PostgreSQL reads its key only if the server's user owns it and nobody else can read it.
cp "$certs/server.crt" "$certs/server.key" "$PG_DIR/"
chmod 600 "$PG_DIR/server.key"
[[ $(id -u) -eq 0 ]] && chown postgres: "$PG_DIR/server.crt" "$PG_DIR/server.key"
pg_sql "ALTER SYSTEM SET ssl_cert_file = '$PG_DIR/server.crt'" >/dev/null
pg_sql "ALTER SYSTEM SET ssl_key_file = '$PG_DIR/server.key'" >/dev/null
pg_sql "ALTER SYSTEM SET ssl = on" >/dev/null
pg_sql "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
[[ $(pg_sql 'SHOW ssl') == on ]] || { echo "pg-tls: postgres did not turn ssl on" >&2; exit 1; }
echo "pg-tls: postgres $(pg_sql 'SHOW server_version') on 127.0.0.1:$PG_PORT with ssl=on"

# Whether the service's connections to the database are encrypted: t or f.
encrypted() {
    pg_sql "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
            WHERE a.usename = '$PG_USER'"
}

# The CA file the next node trusts, through its environment variable; none when empty.
use_ca() {
    if [[ -n $1 ]]; then
        export WEBHOOK_INGEST_DB_CA=$1
    else
        unset WEBHOOK_INGEST_DB_CA
    fi
}

# Starts node NAME on URL with CA (may be empty), expecting it to serve, then checks
# /health and whether its connections are encrypted (WANT: t or f), and stops it.
expect_serves() {
    local name=$1 url=$2 ca=$3 want=$4
    use_ca "$ca"
    ingest_start "$name" "$url"
    curl -fsS --max-time 10 "$(ingest_url "$name")/health" >/dev/null
    local got
    got=$(encrypted)
    ingest_kill "$name" TERM
    if [[ $got != "$want" ]]; then
        echo "pg-tls: $name: connections encrypted: $got, expected $want" >&2
        exit 1
    fi
    echo "pg-tls: $name: serves, connections encrypted: $got"
}

# Starts the service on URL with CA, expecting it to stop at start-up with PATTERN on stderr.
expect_refused() {
    local name=$1 url=$2 ca=$3 pattern=$4 status=0
    use_ca "$ca"
    timeout 60 "$INGEST_BIN" --port 0 --db "$url" \
        >"$work/$name.out" 2>"$work/$name.log" || status=$?
    if ((status == 0 || status == 124)) || [[ -s $work/$name.out ]]; then
        echo "pg-tls: $name: expected a refusal at start-up, got status $status" >&2
        exit 1
    fi
    if ! grep -q "$pattern" "$work/$name.log"; then
        echo "pg-tls: $name: the start-up error does not say \`$pattern\`:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
    echo "pg-tls: $name: refused at start-up: $(tail -n 1 "$work/$name.log")"
}

expect_serves verify-full "$PG_URL?sslmode=verify-full" "$certs/ca.crt" t
expect_serves require "$PG_URL?sslmode=require" "" t
expect_serves prefer "$PG_URL" "" t
expect_serves disable "$PG_URL?sslmode=disable" "" f
expect_refused wrong-ca "$PG_URL?sslmode=verify-full" "$certs/wrong-ca.crt" "UnknownIssuer"
expect_refused no-ca "$PG_URL?sslmode=verify-full" "" "UnknownIssuer"
# localhost reaches the same server, but the certificate names 127.0.0.1 only.
wrong_host=${PG_URL/@127.0.0.1:/@localhost:}
expect_refused wrong-host "$wrong_host?sslmode=verify-full" "$certs/ca.crt" "not valid for name"

if grep -l -F "$PG_PASSWORD" "$work"/*.out "$work"/*.log 2>/dev/null; then
    echo "pg-tls: the database password is in the output above" >&2
    exit 1
fi
echo "pg-tls: ok, and the password is in no output"
