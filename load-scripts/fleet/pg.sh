# shellcheck shell=bash disable=SC2034 # PG_URL and the like are for the sourcing script
# A throwaway PostgreSQL server for the fleet scripts; sourced, never run.
#
#   pg_start WORKDIR   initdb in WORKDIR/pg (owned by the `postgres` user, since PostgreSQL
#                      refuses to run as root), start on 127.0.0.1 and a free port with a
#                      password for the `ingest` role; sets PG_URL, PG_PASSWORD and PG_PID
#   pg_stop            stops it by its PID (fast shutdown), waiting for it to exit
#   pg_restart         pg_stop, then the same server on the same data directory and port
#   pg_sql SQL         runs SQL on the database, prints unaligned rows
#
# Needs Debian's `postgresql` package (binaries under /usr/lib/postgresql/<version>/bin),
# runuser when run as root, and python3 to pick a free port.

source "$(dirname "${BASH_SOURCE[0]}")/../proc.sh"

# The server is up within seconds; a cold start on a loaded 2-core machine may take longer.
PG_START_TIMEOUT_SECS=60
PG_DB=ingest
PG_USER=ingest

pg_bin() {
    local dir
    dir=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -1)
    [[ -n $dir && -x $dir/initdb ]] || {
        echo "pg.sh: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin;" \
            "install with: apt-get install postgresql" >&2
        return 1
    }
    printf '%s' "$dir"
}

# Runs a command as the postgres user when we are root, as ourselves otherwise.
pg_as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_start() {
    local work=$1 bin
    bin=$(pg_bin) || return 1
    PG_BIN=$bin
    PG_DIR=$work/pg
    PG_PORT=$(free_port)
    PG_PASSWORD=pw-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    mkdir -p "$PG_DIR"
    chmod 755 "$work"
    [[ $(id -u) -eq 0 ]] && chown postgres: "$PG_DIR"
    # The superuser logs in over the Unix socket only (peer); the service's role over TCP
    # with its password (SCRAM), as a production database would ask.
    pg_as_owner "$bin/initdb" -D "$PG_DIR/data" -U postgres --auth-local=peer \
        --auth-host=scram-sha-256 -E UTF8 >"$PG_DIR/initdb.log" 2>&1 || {
        cat "$PG_DIR/initdb.log" >&2
        return 1
    }
    _pg_launch || return 1
    pg_as_owner "$bin/psql" -h "$PG_DIR" -p "$PG_PORT" -U postgres -d postgres -qAt \
        -v ON_ERROR_STOP=1 -v pw="$PG_PASSWORD" >/dev/null <<SQL || return 1
CREATE ROLE $PG_USER LOGIN PASSWORD :'pw';
CREATE DATABASE $PG_DB OWNER $PG_USER;
SQL
    PG_URL="postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB"
}

# Starts the server on $PG_DIR/data and waits until it accepts connections. PG_PID is the
# postmaster's own PID (from postmaster.pid), the one to signal; when root, runuser is its
# parent and exits with it.
_pg_launch() {
    local args=("$PG_BIN/postgres" -D "$PG_DIR/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1
        -c unix_socket_directories="$PG_DIR" -c max_connections=200)
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "${args[@]}" >>"$PG_DIR/server.log" 2>&1 &
    else
        "${args[@]}" >>"$PG_DIR/server.log" 2>&1 &
    fi
    PG_LAUNCHER_PID=$!
    PG_PID=
    if ! wait_for "$PG_LAUNCHER_PID" "$PG_START_TIMEOUT_SECS" \
        pg_as_owner "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then
        echo "pg.sh: postgres did not start; its log ends:" >&2
        tail -n 20 "$PG_DIR/server.log" >&2
        kill "$PG_LAUNCHER_PID" 2>/dev/null || true
        return 1
    fi
    PG_PID=$(head -1 "$PG_DIR/data/postmaster.pid")
}

pg_stop() {
    [[ -n ${PG_LAUNCHER_PID:-} ]] || return 0
    # SIGINT is PostgreSQL's fast shutdown: sessions are ended, the data stays consistent.
    if [[ -n ${PG_PID:-} ]]; then
        kill -INT "$PG_PID" 2>/dev/null || true
    else
        kill "$PG_LAUNCHER_PID" 2>/dev/null || true
    fi
    wait "$PG_LAUNCHER_PID" 2>/dev/null || true
    PG_PID=''
    PG_LAUNCHER_PID=''
}

pg_restart() {
    pg_stop
    _pg_launch
}

pg_sql() {
    pg_as_owner "$PG_BIN/psql" -h "$PG_DIR" -p "$PG_PORT" -U postgres -d "$PG_DB" -qAt \
        -v ON_ERROR_STOP=1 -c "$1"
}
