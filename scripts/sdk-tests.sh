#!/usr/bin/env bash
# Runs the real-client suites against `tableq serve`:
#   tests/sdk/python  azure-data-tables (PyPI), pytest, in tests/sdk/python/.venv
#   tests/sdk/js      @azure/data-tables (npm), node --test, in tests/sdk/js/node_modules
# Both environments are installed here from pinned files (requirements.txt, package-lock.json)
# and reused while those files (and the interpreter versions) are unchanged.
#
# The script starts `tableq serve` on a free loopback port — on the durable default store, in
# a fresh data directory of this run (--store durable, the default), or --in-memory — waits
# until it answers, runs the suites against it, and stops it by the pid it started. The restart and
# UseDevelopmentStorage=true tests start their own servers from TABLEQ_BIN.
#
# With --store pg or pg-sharded the server is `tableq serve --store postgres://…` instead, on
# PostgreSQL servers that scripts/pg-cluster.sh starts for this run (one server, or a
# coordinator hash-partitioned over 3 shards through postgres_fdw; fsync off) with
# `--owner-pid` of this script, and stops (`down`, by their recorded pids) at the end. The
# tests that start their own `tableq serve` (restart, UseDevelopmentStorage=true) do not use
# the store under test: the Python suite skips them there, with that reason (conftest.py).
#
# Usage: scripts/sdk-tests.sh [--suite all|python|js] [--store durable|memory|pg|pg-sharded]
#                             [--endpoint URL] [--install-only]
#   --endpoint URL   use an already running server, e.g. http://127.0.0.1:10002/devstoreaccount1
#                    (nothing is started; the restart tests need TABLEQ_BIN, else they skip)
#   --suite S        run only one suite (default: all)
#   --store S        the store behind the started server (default: durable, the emulator's
#                    default store, in a fresh --data directory removed at the end);
#                    memory: --in-memory; pg: one PostgreSQL server; pg-sharded: a
#                    coordinator and 3 shards
#                    (needs PostgreSQL 15 server binaries, see scripts/pg-cluster.sh)
#   --install-only   install the two client environments and stop
# Environment:
#   TABLEQ_BIN       the tableq binary (default: `cargo build --bin tableq`, target/debug/tableq)
#   PYTEST_ADDOPTS   extra pytest options, e.g. "-k paging -x"
# Exit status: 0 all suites passed, 1 a suite failed, 2 usage or setup error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py_dir="$repo/tests/sdk/python"
js_dir="$repo/tests/sdk/js"
venv="$py_dir/.venv"
helper="$py_dir/tableq_server.py"

suite=all
store=durable
endpoint=""
install_only=false

say() { printf 'sdk-tests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --endpoint) [ $# -ge 2 ] || die "--endpoint needs a URL"; endpoint=${2%/}; shift 2 ;;
        --endpoint=*) endpoint=${1#--endpoint=}; endpoint=${endpoint%/}; shift ;;
        --suite) [ $# -ge 2 ] || die "--suite needs all, python or js"; suite=$2; shift 2 ;;
        --suite=*) suite=${1#--suite=}; shift ;;
        --store) [ $# -ge 2 ] || die "--store needs durable, memory, pg or pg-sharded"; store=$2; shift 2 ;;
        --store=*) store=${1#--store=}; shift ;;
        --install-only) install_only=true; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage; die "unknown argument: $1" ;;
    esac
done
case "$suite" in all | python | js) ;; *) die "--suite must be all, python or js, not '$suite'" ;; esac
case "$store" in durable | memory | pg | pg-sharded) ;; *) die "--store must be durable, memory, pg or pg-sharded, not '$store'" ;; esac
want_py=false; want_js=false
[ "$suite" = js ] || want_py=true
[ "$suite" = python ] || want_js=true

# --- the interpreters (CI has them; nothing else is preinstalled) ---------------------
command -v python3 >/dev/null || die "python3 not found: the Python SDK suite needs CPython >= 3.8 with venv"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' ||
    die "python3 is $(python3 --version 2>&1); azure-data-tables 12.7.0 needs >= 3.8"
if $want_py; then
    python3 -c 'import venv, ensurepip' 2>/dev/null ||
        die "python3 has no working venv module (on Debian/Ubuntu: apt-get install python3-venv)"
fi
if $want_js; then
    command -v node >/dev/null || die "node not found: the JS SDK suite needs Node.js >= 20"
    command -v npm >/dev/null || die "npm not found: the JS SDK suite installs @azure/data-tables with npm ci"
    node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' ||
        die "node is $(node --version); @azure/data-tables 13.3.2 and node --test need >= 20"
fi

# --- client environments ------------------------------------------------------------
fingerprint() { sha256sum | cut -d' ' -f1; }

install_python() {
    local want
    want=$( { cat "$py_dir/requirements.txt"; python3 --version; } | fingerprint)
    if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.tableq-stamp" 2>/dev/null)" = "$want" ]; then
        return
    fi
    say "installing the Python client into tests/sdk/python/.venv (requirements.txt)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$py_dir/requirements.txt" || die "pip could not install tests/sdk/python/requirements.txt"
    printf '%s\n' "$want" >"$venv/.tableq-stamp"
}

install_js() {
    local want
    want=$( { cat "$js_dir/package-lock.json"; node --version; } | fingerprint)
    if [ "$(cat "$js_dir/node_modules/.tableq-stamp" 2>/dev/null)" = "$want" ]; then
        return
    fi
    say "installing the JS client into tests/sdk/js/node_modules (npm ci, package-lock.json)"
    (cd "$js_dir" && npm ci --no-audit --no-fund --loglevel=error) ||
        die "npm ci failed in tests/sdk/js"
    printf '%s\n' "$want" >"$js_dir/node_modules/.tableq-stamp"
}

# Concurrent runs (cargo test runs the memory and PostgreSQL suites in parallel) install
# one at a time; the later ones find the stamp and reuse the environment.
exec 9>"${TMPDIR:-/tmp}/tableq-sdk-tests.install.lock"
flock 9 || die "cannot lock ${TMPDIR:-/tmp}/tableq-sdk-tests.install.lock"
$want_py && install_python
$want_js && install_js
flock -u 9
$install_only && { say "client environments are installed"; exit 0; }

# --- the server -----------------------------------------------------------------------
bin=${TABLEQ_BIN:-}
if [ -z "$bin" ] && [ -z "$endpoint" ]; then
    say "building tableq (cargo build --bin tableq)"
    (cd "$repo" && cargo build --quiet --bin tableq) || die "cargo build failed"
    bin="${CARGO_TARGET_DIR:-$repo/target}/debug/tableq"
fi
if [ -n "$bin" ]; then
    [ -x "$bin" ] || die "TABLEQ_BIN=$bin is not an executable file"
    bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tableq-sdk-tests.XXXXXX")
server_pid=""
pg_dir=""

stop_server() {
    [ -n "$server_pid" ] || return 0
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$server_pid" 2>/dev/null; then
            say "the server (pid $server_pid) ignored SIGTERM for 5 s: SIGKILL"
            kill -KILL "$server_pid" 2>/dev/null || true
        fi
    fi
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
stop_pg() {
    [ -n "$pg_dir" ] || return 0
    bash "$repo/scripts/pg-cluster.sh" down "$pg_dir" || say "pg-cluster.sh down $pg_dir failed"
    pg_dir=""
}
cleanup() { stop_server; stop_pg; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

server_log_tail() {
    say "server log ($work/server.log), last lines:"
    tail -n 40 "$work/server.log" >&2 || true
}

case "$store" in
    durable) store_args=(--data "$work/data") ;;
    memory) store_args=(--in-memory) ;;
    *) store_args=() ;;
esac
if [ -z "$endpoint" ] && [ "$store" != memory ] && [ "$store" != durable ]; then
    shards=0
    [ "$store" = pg-sharded ] && shards=3
    started=$SECONDS
    # The cluster's watcher tears it down if this script dies without reaching `down`.
    pg_env=$(bash "$repo/scripts/pg-cluster.sh" up --no-fsync --shards "$shards" --owner-pid $$) ||
        die "scripts/pg-cluster.sh up --shards $shards failed (its messages are above)"
    pg_dir=$(printf '%s\n' "$pg_env" | sed -n 's/^TABLEQ_PG_DIR=//p')
    pg_url=$(printf '%s\n' "$pg_env" | sed -n 's/^TABLEQ_PG_URL=//p')
    [ -n "$pg_dir" ] && [ -n "$pg_url" ] || die "scripts/pg-cluster.sh up printed no TABLEQ_PG_DIR/TABLEQ_PG_URL"
    say "PostgreSQL is up in $((SECONDS - started)) s ($shards shard(s), $pg_dir): $pg_url"
    store_args=(--store "$pg_url")
fi

if [ -z "$endpoint" ]; then
    port=$(python3 "$helper" free-port)
    "$bin" serve --host 127.0.0.1 --port "$port" "${store_args[@]}" >"$work/server.log" 2>&1 &
    server_pid=$!
    if ! python3 "$helper" wait "$port" "$server_pid" 60; then
        server_log_tail
        die "'$bin serve --host 127.0.0.1 --port $port ${store_args[*]}' did not start"
    fi
    endpoint="http://127.0.0.1:$port/devstoreaccount1"
    say "tableq serve ${store_args[*]} is running on $endpoint (pid $server_pid)"
else
    say "using the server at $endpoint"
fi

# The HTTPS and bearer-token tests (tests/sdk/*/…tokens…) run against a second server of
# this run: in memory, HTTP on one free port and HTTPS (`--tls self-signed`, the CA in
# $work/keys) on another, with principal `reader-app` assigned Storage Table Data Reader.
# Only with a binary and on the durable or memory runs (the PostgreSQL runs test the store).
tls_pid=""
stop_tls() {
    [ -n "$tls_pid" ] || return 0
    kill -TERM "$tls_pid" 2>/dev/null || true
    wait "$tls_pid" 2>/dev/null || true
    tls_pid=""
}
trap 'stop_tls; cleanup' EXIT
unset TABLEQ_SDK_TLS_ENDPOINT TABLEQ_SDK_TLS_HTTP_ENDPOINT TABLEQ_SDK_TLS_AUTHORITY TABLEQ_SDK_TLS_CA
if [ -n "$bin" ] && { [ "$store" = durable ] || [ "$store" = memory ]; }; then
    tls_http=$(python3 "$helper" free-port)
    tls_https=$(python3 "$helper" free-port)
    # The local issuer's registered clients (tests/sdk/*/tokens tests use these secrets).
    printf '%s\n' '[{"principalId": "reader-app", "clientSecret": "reader-secret", "role": "Storage Table Data Reader"},' \
        ' {"principalId": "contributor-app", "clientSecret": "contributor-secret", "role": "Storage Table Data Contributor"}]' \
        >"$work/roles.json"
    "$bin" serve --host 127.0.0.1 --port "$tls_http" --https-port "$tls_https" --in-memory \
        --tls self-signed --local-issuer --keys "$work/keys" --role-assignments "$work/roles.json" \
        >"$work/tls-server.log" 2>&1 &
    tls_pid=$!
    if ! python3 "$helper" wait "$tls_http" "$tls_pid" 60; then
        tail -n 40 "$work/tls-server.log" >&2 || true
        die "the HTTPS server ('$bin serve --tls self-signed …') did not start"
    fi
    export TABLEQ_SDK_TLS_ENDPOINT="https://127.0.0.1:$tls_https/devstoreaccount1"
    export TABLEQ_SDK_TLS_HTTP_ENDPOINT="http://127.0.0.1:$tls_http/devstoreaccount1"
    export TABLEQ_SDK_TLS_AUTHORITY="https://127.0.0.1:$tls_https"
    export TABLEQ_SDK_TLS_CA="$work/keys/ca.pem"
    say "tableq serve --tls self-signed is running on $TABLEQ_SDK_TLS_ENDPOINT (pid $tls_pid)"
fi

export TABLEQ_SDK_ENDPOINT="$endpoint"
export TABLEQ_SDK_STORE="$store"
if [ -n "$bin" ]; then export TABLEQ_BIN="$bin"; else unset TABLEQ_BIN; fi
export PYTHONDONTWRITEBYTECODE=1

# --- the suites -----------------------------------------------------------------------
failed=()
summary=()

if $want_py; then
    say "running the Python suite (azure-data-tables 12.7.0, pytest)"
    if (cd "$py_dir" && COLUMNS=${COLUMNS:-200} "$venv/bin/python" -m pytest --basetemp="$work/pytest" .); then
        summary+=("python suite (azure-data-tables, store $store): passed")
    else
        status=$?
        summary+=("python suite (azure-data-tables, store $store): FAILED (pytest exit status $status)")
        failed+=(python)
    fi
fi

if $want_js; then
    say "running the JS suite (@azure/data-tables 13.3.2, node --test)"
    # NODE_EXTRA_CA_CERTS is read when node starts: the HTTPS server's CA, as users set it.
    if (cd "$js_dir" && env ${TABLEQ_SDK_TLS_CA:+NODE_EXTRA_CA_CERTS="$TABLEQ_SDK_TLS_CA"} node --test --test-reporter=spec --test-timeout=120000 test/*.test.mjs); then
        summary+=("js suite (@azure/data-tables, store $store): passed")
    else
        status=$?
        summary+=("js suite (@azure/data-tables, store $store): FAILED (node --test exit status $status)")
        failed+=(js)
    fi
fi

if [ -n "$server_pid" ] && ! kill -0 "$server_pid" 2>/dev/null; then
    summary+=("the server (pid $server_pid) exited during the tests")
    failed+=(server)
    server_log_tail
elif [ ${#failed[@]} -gt 0 ] && [ -n "$server_pid" ]; then
    server_log_tail
fi
stop_server
stop_tls
stop_pg

for line in "${summary[@]}"; do say "$line"; done
if [ ${#failed[@]} -gt 0 ]; then
    say "FAILED: ${failed[*]}"
    exit 1
fi
say "all suites passed"
