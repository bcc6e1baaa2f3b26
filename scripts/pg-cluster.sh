#!/usr/bin/env bash
# pg-cluster.sh — local PostgreSQL servers for tableq: one server, or a coordinator whose
# entity table is hash-partitioned on PartitionKey into N foreign tables (postgres_fdw) on N
# other servers. Everything lives in one temporary directory; servers listen on 127.0.0.1
# only, on free ports, with TRUST authentication (no password: for tests and local
# experiments, never for a shared machine).
#
#   scripts/pg-cluster.sh up [--shards N] [--dir DIR] [--owner-pid PID] [--no-fsync]
#       Starts the servers and prints shell assignments (eval them):
#         TABLEQ_PG_DIR=…     the directory (pass it to `down`)
#         TABLEQ_PG_URL=…     the URL for `tableq serve --store …` (the coordinator)
#         TABLEQ_PG_SOCKET_URL=…  the same server through its Unix socket (in the
#                             directory, percent-encoded as the URL's host)
#         TABLEQ_PG_SHARDS=…  space-separated URLs of the shards (empty without --shards)
#       --shards N     N ≥ 2: a coordinator and N shards (default 0: one plain server)
#       --dir DIR      use DIR (must not exist) instead of a new temporary directory
#       --owner-pid P  tear everything down by itself once process P has exited (tests pass
#                      their own pid, so a crashed test run leaves no server behind)
#       --no-fsync     fsync=off, synchronous_commit=off: faster, NOT crash-safe (tests)
#   scripts/pg-cluster.sh env  DIR   prints the same assignments for a running cluster
#   scripts/pg-cluster.sh down DIR   stops the servers by their recorded pids, removes DIR
#   scripts/pg-cluster.sh reap       tears down clusters whose --owner-pid has exited
#   scripts/pg-cluster.sh freeze DIR  stops every server process of the cluster (SIGSTOP to
#                                    each postmaster and its children, by pid): the servers
#                                    keep their connections open but answer nothing (a hung
#                                    database, for fault tests); `thaw DIR` resumes them
#   scripts/pg-cluster.sh restart DIR  restarts every server (pg_ctl restart -m fast): open
#                                    connections are closed by the servers
#   scripts/pg-cluster.sh pids DIR   prints the pids of every server process of the cluster
#                                    (each postmaster and its children, one a line: for
#                                    measuring PostgreSQL's CPU, scripts/pg-cost.sh)
#   scripts/pg-cluster.sh bindir     prints the directory of the server binaries it would use,
#                                    or fails (exit 1) when they are not installed
#
# PostgreSQL refuses to run as root. Run as root (as CI does), the script runs initdb,
# pg_ctl and psql as the unprivileged `postgres` system user (via runuser) and says so on
# stderr; the directory is then owned by that user.
#
# The binaries are taken from $PG_BINDIR, else `pg_config --bindir`, else the newest
# /usr/lib/postgresql/*/bin (Debian's postgresql-15 package).
#
# The sharded layout (what `up --shards N` creates, and what tableq's
# `tableq_store::postgres::provision_sharded` creates from Rust):
#   on every shard:       the schema `tableq` with the entity table (primary key on
#                         (table_id, pk, rk): uniqueness is enforced here, on each shard);
#   on the coordinator:   extension postgres_fdw, one foreign server `shard<i>` per shard
#                         with a user mapping, and `tableq.entities` PARTITION BY HASH (pk)
#                         with partition i = FOREIGN TABLE on shard i (MODULUS N, REMAINDER i);
#                         fetch_size 100: a page merges the shards' ordered scans and pulls
#                         rows from each as it needs them, so a shard reads at most 100 rows
#                         past its share of the page (postgres_fdw's default, 100, is kept;
#                         1000 made every shard read 1000 matches for any page).
# tableq creates the rest (catalog, metadata) on first use.
set -euo pipefail

die() { echo "pg-cluster: $*" >&2; exit 1; }
note() { echo "pg-cluster: $*" >&2; }

find_bindir() {
    if [[ -n "${PG_BINDIR:-}" ]]; then
        [[ -x "$PG_BINDIR/initdb" && -x "$PG_BINDIR/pg_ctl" ]] || return 1
        echo "$PG_BINDIR"
        return
    fi
    if command -v pg_config >/dev/null 2>&1; then
        local d
        d=$(pg_config --bindir 2>/dev/null || true)
        if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then echo "$d"; return; fi
    fi
    local best=""
    for d in /usr/lib/postgresql/*/bin; do
        [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && best="$d"
    done
    [[ -n "$best" ]] || return 1
    echo "$best"
}

# Runs a command as the server user (postgres when we are root).
as_pg() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# A port no socket holds now: the kernel's pick for a bind to port 0. (Probing with a
# connect only finds listeners; a port that an outgoing connection holds as its local port
# refuses a server's bind too, and during a test suite's connection churn a random port in
# the ephemeral range often is one: CI saw five picks in a row fail.)
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
        || die "no free port found"
}

print_env() {
    local dir=$1
    [[ -f "$dir/urls" ]] || die "$dir is not a running cluster (no $dir/urls)"
    echo "TABLEQ_PG_DIR=$dir"
    cat "$dir/urls"
}

# start_server NAME: initdb + pg_ctl start in $DIR/NAME on a free port; echoes the port.
start_server() {
    local name=$1 data="$DIR/$1" port attempt
    as_pg "$BINDIR/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C >"$DIR/$name.initdb.log" 2>&1 \
        || { cat "$DIR/$name.initdb.log" >&2; die "initdb failed for $name"; }
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        port=$(free_port)
        if as_pg "$BINDIR/pg_ctl" -D "$data" -l "$DIR/$name.log" -w -t 60 start \
            -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$DIR $SERVER_OPTS" \
            >/dev/null 2>&1; then
            echo "$port" >"$DIR/$name.port"
            echo "$port"
            return
        fi
        note "$name: start on port $port failed (attempt $attempt), retrying"
        tail -n 5 "$DIR/$name.log" >&2 || true
    done
    die "could not start $name"
}

psql_at() { # psql_at PORT DB SQL...
    local port=$1 db=$2
    shift 2
    as_pg "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

ENTITY_COLUMNS="table_id bigint NOT NULL,
    pk text COLLATE \"C\" NOT NULL,
    rk text COLLATE \"C\" NOT NULL,
    ts bigint NOT NULL,
    props jsonb NOT NULL"

cmd_up() {
    local shards=0 owner="" fsync=1
    DIR=""
    while [[ $# -gt 0 ]]; do
        case $1 in
            --shards) shards=$2; shift 2 ;;
            --dir) DIR=$2; shift 2 ;;
            --owner-pid) owner=$2; shift 2 ;;
            --no-fsync) fsync=0; shift ;;
            *) die "unknown option $1 (see the header of $0)" ;;
        esac
    done
    [[ "$shards" =~ ^[0-9]+$ ]] || die "--shards wants a number"
    [[ "$shards" -eq 0 || "$shards" -ge 2 ]] || die "--shards wants 0 (one server) or at least 2"
    BINDIR=$(find_bindir) || die "PostgreSQL binaries not found (install postgresql-15, or set PG_BINDIR)"
    if [[ $(id -u) -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || die "running as root, but there is no 'postgres' user to run the servers as"
        note "running as root: the servers run as the unprivileged 'postgres' user (PostgreSQL refuses root)"
    fi
    cmd_reap_quiet
    if [[ -z "$DIR" ]]; then
        DIR=$(mktemp -d "${TMPDIR:-/tmp}/tableq-pg.XXXXXX")
    else
        [[ -e "$DIR" ]] && die "$DIR exists"
        mkdir -p "$DIR"
    fi
    chmod 0755 "$DIR"
    [[ $(id -u) -eq 0 ]] && chown postgres: "$DIR"
    SERVER_OPTS="-c max_connections=200"
    [[ $fsync -eq 0 ]] && SERVER_OPTS="$SERVER_OPTS -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    echo "$BINDIR" >"$DIR/bindir"
    # Tear down on failure from here on.
    trap 'note "start-up failed; tearing down $DIR"; cmd_down "$DIR" >/dev/null 2>&1 || true' ERR

    local coord shard_ports=() i port
    coord=$(start_server coordinator)
    echo coordinator >>"$DIR/servers"
    psql_at "$coord" postgres -c "CREATE DATABASE tableq"
    for ((i = 0; i < shards; i++)); do
        port=$(start_server "shard$i")
        echo "shard$i" >>"$DIR/servers"
        shard_ports+=("$port")
        psql_at "$port" postgres -c "CREATE DATABASE tableq"
        psql_at "$port" tableq -c "CREATE SCHEMA tableq;
CREATE TABLE tableq.entities (
    $ENTITY_COLUMNS,
    PRIMARY KEY (table_id, pk, rk)
);"
    done
    if [[ $shards -gt 0 ]]; then
        local sql="CREATE EXTENSION postgres_fdw;
CREATE SCHEMA tableq;
CREATE TABLE tableq.entities (
    $ENTITY_COLUMNS
) PARTITION BY HASH (pk);"
        for ((i = 0; i < shards; i++)); do
            sql="$sql
CREATE SERVER shard$i FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '${shard_ports[$i]}', dbname 'tableq', fetch_size '100', batch_size '100');
CREATE USER MAPPING FOR PUBLIC SERVER shard$i OPTIONS (user 'postgres');
CREATE FOREIGN TABLE tableq.entities_shard$i PARTITION OF tableq.entities
    FOR VALUES WITH (MODULUS $shards, REMAINDER $i)
    SERVER shard$i OPTIONS (schema_name 'tableq', table_name 'entities');"
        done
        psql_at "$coord" tableq -c "$sql"
    fi
    {
        echo "TABLEQ_PG_URL=postgres://postgres@127.0.0.1:$coord/tableq"
        echo "TABLEQ_PG_SOCKET_URL=postgres://postgres@$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$DIR"):$coord/tableq"
        local urls=""
        for port in "${shard_ports[@]}"; do urls="$urls postgres://postgres@127.0.0.1:$port/tableq"; done
        echo "TABLEQ_PG_SHARDS='${urls# }'"
    } >"$DIR/urls"
    trap - ERR
    if [[ -n "$owner" ]]; then
        echo "$owner" >"$DIR/owner"
        # A watcher outside our process group: tears down once the owner has exited.
        setsid bash -c 'while kill -0 "$1" 2>/dev/null && [[ -d "$2" ]]; do sleep 1; done; [[ -d "$2" ]] && "$3" down "$2" >/dev/null 2>&1' \
            _ "$owner" "$DIR" "$(readlink -f "$0")" </dev/null >/dev/null 2>&1 &
        echo $! >"$DIR/watcher.pid"
    fi
    note "up: ${shards} shard(s) in $DIR"
    print_env "$DIR"
}

cmd_down() {
    local dir=${1:-}
    [[ -n "$dir" ]] || die "usage: down DIR"
    [[ -d "$dir" ]] || die "$dir does not exist"
    [[ -f "$dir/bindir" ]] || die "$dir is not a pg-cluster directory"
    BINDIR=$(cat "$dir/bindir")
    local name pid
    # A frozen cluster (a fault test that stopped half-way) must run again to stop.
    if [[ -f "$dir/frozen.pids" ]]; then
        # shellcheck disable=SC2046
        kill -CONT $(cat "$dir/frozen.pids") 2>/dev/null || true
    fi
    if [[ -f "$dir/servers" ]]; then
        # Shards after the coordinator has gone: stop in reverse order of start.
        for name in $(tac "$dir/servers"); do
            if [[ -f "$dir/$name/postmaster.pid" ]]; then
                pid=$(head -n 1 "$dir/$name/postmaster.pid")
                as_pg "$BINDIR/pg_ctl" -D "$dir/$name" -m fast -w -t 30 stop >/dev/null 2>&1 \
                    || { note "pg_ctl stop failed for $name (pid $pid); sending SIGQUIT to that pid"; kill -QUIT "$pid" 2>/dev/null || true; }
            fi
        done
    fi
    if [[ -f "$dir/watcher.pid" ]]; then
        pid=$(cat "$dir/watcher.pid")
        [[ "$pid" != "$$" && "$pid" != "$PPID" ]] && kill "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
    note "down: removed $dir"
}

cmd_reap_quiet() {
    local d owner watcher
    for d in "${TMPDIR:-/tmp}"/tableq-pg.*; do
        [[ -f "$d/owner" ]] || continue
        owner=$(cat "$d/owner" 2>/dev/null) || continue
        kill -0 "$owner" 2>/dev/null && continue
        # A live watcher is tearing it down already.
        watcher=$(cat "$d/watcher.pid" 2>/dev/null || true)
        [[ -n "$watcher" ]] && kill -0 "$watcher" 2>/dev/null && continue
        note "reaping $d (owner pid $owner has exited)"
        (cmd_down "$d") >/dev/null 2>&1 || true
    done
}

# The pids of every process of the cluster's servers: each postmaster and its children.
server_pids() {
    local dir=$1 name pid
    [[ -f "$dir/servers" ]] || die "$dir is not a running cluster (no $dir/servers)"
    for name in $(cat "$dir/servers"); do
        [[ -f "$dir/$name/postmaster.pid" ]] || continue
        pid=$(head -n 1 "$dir/$name/postmaster.pid")
        echo "$pid"
        pgrep -P "$pid" || true
    done
}

cmd_freeze() {
    local dir=${1:?usage: freeze DIR}
    server_pids "$dir" >"$dir/frozen.pids"
    # shellcheck disable=SC2046
    kill -STOP $(cat "$dir/frozen.pids")
    note "froze $(wc -l <"$dir/frozen.pids") server processes of $dir"
}

cmd_thaw() {
    local dir=${1:?usage: thaw DIR}
    [[ -f "$dir/frozen.pids" ]] || die "$dir is not frozen"
    # shellcheck disable=SC2046
    kill -CONT $(cat "$dir/frozen.pids") 2>/dev/null || true
    rm -f "$dir/frozen.pids"
    note "thawed $dir"
}

cmd_restart() {
    local dir=${1:?usage: restart DIR} name
    [[ -f "$dir/bindir" ]] || die "$dir is not a pg-cluster directory"
    BINDIR=$(cat "$dir/bindir")
    for name in $(cat "$dir/servers"); do
        as_pg "$BINDIR/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -m fast -w -t 60 restart >/dev/null \
            || die "pg_ctl restart failed for $name"
    done
    note "restarted $dir"
}

case ${1:-} in
    up) shift; cmd_up "$@" ;;
    freeze) shift; cmd_freeze "$@" ;;
    thaw) shift; cmd_thaw "$@" ;;
    restart) shift; cmd_restart "$@" ;;
    down) shift; cmd_down "$@" ;;
    env) shift; print_env "${1:?usage: env DIR}" ;;
    pids) shift; server_pids "${1:?usage: pids DIR}" ;;
    reap) cmd_reap_quiet ;;
    bindir) find_bindir || die "PostgreSQL binaries not found (install postgresql-15, or set PG_BINDIR)" ;;
    *) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
