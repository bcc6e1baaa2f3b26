#!/usr/bin/env bash
# Runs the client-compatibility suites against one `tableq serve`:
#   tests/compat/node-legacy    azure-storage 2.10.7 (npm), node --test
#   tests/compat/table-node     azure-table-node 1.5.0 (npm), node --test
#   tests/compat/python-legacy  azure-cosmosdb-table 1.0.6 (PyPI), pytest, in its .venv
#   tests/compat/rust           the azure_data_tables 0.21 crate, a small crate of its own
#                               (its own [workspace] and target dir, outside the tableq workspace)
#   tests/compat/azcli          the Azure CLI (`az storage …`), pytest driving `az`
# Each environment is installed here from pinned files (package-lock.json, requirements.txt,
# Cargo.lock) and reused while those files (and the tool versions) are unchanged. The Azure
# CLI is Debian's `azure-cli` package: installed with apt-get when this runs as root and `az`
# is missing; where it cannot be installed the CLI suite is skipped with the reason printed —
# except in CI (CI=true), where a missing client is a failure.
#
# The script starts `tableq serve` on a free loopback port — on the durable default store in
# a fresh data directory (--store durable, the default), or on one PostgreSQL server that
# scripts/pg-cluster.sh starts for this run (--store pg) — runs every suite against it (each
# suite names its tables with its own prefix), and stops it by the pid it started.
#
# Usage: scripts/compat-tests.sh [--store durable|memory|pg] [--suite all|node-legacy|table-node|python-legacy|rust|azcli]
#                                [--endpoint URL] [--install-only]
#   --endpoint URL   use an already running server, e.g. http://127.0.0.1:10002/devstoreaccount1
#   --suite S        run only one suite (default: all); may be given several times
#   --install-only   install the client environments and stop
# Environment:
#   TABLEQ_BIN       the tableq binary (default: `cargo build --bin tableq`, target/debug/tableq)
#   CI               when "true", a client that cannot be installed fails the run
# Exit status: 0 all suites passed, 1 a suite failed, 2 usage or setup error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
compat="$repo/tests/compat"
helper="$repo/tests/sdk/python/tableq_server.py"

store=durable
endpoint=""
install_only=false
suites=()
all_suites=(node-legacy table-node python-legacy rust azcli)

say() { printf 'compat-tests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --endpoint) [ $# -ge 2 ] || die "--endpoint needs a URL"; endpoint=${2%/}; shift 2 ;;
        --suite) [ $# -ge 2 ] || die "--suite needs a name"; [ "$2" = all ] || suites+=("$2"); shift 2 ;;
        --store) [ $# -ge 2 ] || die "--store needs durable, memory or pg"; store=$2; shift 2 ;;
        --install-only) install_only=true; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage; die "unknown argument: $1" ;;
    esac
done
case "$store" in durable | memory | pg) ;; *) die "--store must be durable, memory or pg, not '$store'" ;; esac
[ ${#suites[@]} -gt 0 ] || suites=("${all_suites[@]}")
for s in "${suites[@]}"; do
    case " ${all_suites[*]} " in *" $s "*) ;; *) die "unknown suite '$s' (one of: ${all_suites[*]})" ;; esac
done
want() { case " ${suites[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
in_ci() { [ "${CI:-}" = true ]; }

# --- the tools (CI has python3, node, npm and cargo; az is installed below) -------------
command -v python3 >/dev/null || die "python3 not found"
if want node-legacy || want table-node; then
    command -v node >/dev/null && command -v npm >/dev/null || die "node and npm are needed for the Node suites"
fi
if want python-legacy || want azcli; then
    python3 -c 'import venv, ensurepip' 2>/dev/null || die "python3 has no working venv module (apt-get install python3-venv)"
fi
want rust && { command -v cargo >/dev/null || die "cargo not found: the Rust crate suite builds tests/compat/rust"; }

fingerprint() { sha256sum | cut -d' ' -f1; }

install_node() { # dir
    local dir=$compat/$1 want
    want=$( { cat "$dir/package-lock.json"; node --version; } | fingerprint)
    [ "$(cat "$dir/node_modules/.tableq-stamp" 2>/dev/null)" = "$want" ] && return 0
    say "installing tests/compat/$1/node_modules (npm ci, package-lock.json)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed in tests/compat/$1"
    printf '%s\n' "$want" >"$dir/node_modules/.tableq-stamp"
}

venv="$compat/python-legacy/.venv"
install_python() {
    local want
    want=$( { cat "$compat/python-legacy/requirements.txt"; python3 --version; } | fingerprint)
    if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.tableq-stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    say "installing tests/compat/python-legacy/.venv (requirements.txt)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$compat/python-legacy/requirements.txt" || die "pip could not install tests/compat/python-legacy/requirements.txt"
    printf '%s\n' "$want" >"$venv/.tableq-stamp"
}

rust_bin="$compat/rust/target/debug/tableq-compat-rust"
install_rust() {
    say "building tests/compat/rust (azure_data_tables 0.21, Cargo.lock; its own target dir)"
    local started=$SECONDS
    # Its own workspace and target dir: never a member of the tableq workspace.
    (cd "$compat/rust" && env -u CARGO_TARGET_DIR CARGO_TARGET_DIR="$compat/rust/target" \
        cargo build --locked --quiet) || die "cargo build failed in tests/compat/rust"
    say "tests/compat/rust is built ($((SECONDS - started)) s)"
}

az_bin=""
az_skip=""
install_az() {
    if command -v az >/dev/null; then
        az_bin=$(command -v az)
        return 0
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing the Azure CLI (apt-get install azure-cli)"
        local started=$SECONDS
        if { apt-get install -y -q --no-install-recommends azure-cli >/dev/null 2>&1 ||
             { apt-get update -q >/dev/null 2>&1 &&
               apt-get install -y -q --no-install-recommends azure-cli >/dev/null 2>&1; }; } &&
           command -v az >/dev/null; then
            az_bin=$(command -v az)
            say "the Azure CLI is installed ($((SECONDS - started)) s)"
            return 0
        fi
        az_skip="apt-get install azure-cli failed"
    else
        az_skip="az is not installed and this is not root with apt-get (install Debian's azure-cli package)"
    fi
    in_ci && die "the Azure CLI suite cannot run in CI: $az_skip"
    say "SKIPPED: azcli suite: $az_skip"
}

# Concurrent runs (cargo test runs the durable and PostgreSQL tests in parallel) install one
# at a time; the later ones find the stamps and reuse the environments.
exec 9>"${TMPDIR:-/tmp}/tableq-compat-tests.install.lock"
flock 9 || die "cannot lock ${TMPDIR:-/tmp}/tableq-compat-tests.install.lock"
# The Rust crate's first build (minutes of compiling) runs beside the other installs (the
# Azure CLI's is mostly download and unpacking).
rust_pid=""
if want rust; then
    install_rust &
    rust_pid=$!
fi
want node-legacy && install_node node-legacy
want table-node && install_node table-node
{ want python-legacy || want azcli; } && install_python
want azcli && install_az
if [ -n "$rust_pid" ]; then
    wait "$rust_pid" || die "building tests/compat/rust failed (its messages are above)"
fi
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
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tableq-compat-tests.XXXXXX")
server_pid=""
pg_dir=""
stop_server() {
    [ -n "$server_pid" ] || return 0
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null
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

case "$store" in
    durable) store_args=(--data "$work/data") ;;
    memory) store_args=(--in-memory) ;;
    pg) store_args=() ;;
esac
if [ -z "$endpoint" ] && [ "$store" = pg ]; then
    started=$SECONDS
    pg_env=$(bash "$repo/scripts/pg-cluster.sh" up --no-fsync --shards 0 --owner-pid $$) ||
        die "scripts/pg-cluster.sh up failed (its messages are above)"
    pg_dir=$(printf '%s\n' "$pg_env" | sed -n 's/^TABLEQ_PG_DIR=//p')
    pg_url=$(printf '%s\n' "$pg_env" | sed -n 's/^TABLEQ_PG_URL=//p')
    [ -n "$pg_dir" ] && [ -n "$pg_url" ] || die "scripts/pg-cluster.sh up printed no TABLEQ_PG_DIR/TABLEQ_PG_URL"
    say "PostgreSQL is up in $((SECONDS - started)) s ($pg_dir)"
    store_args=(--store "$pg_url")
fi
if [ -z "$endpoint" ]; then
    port=$(python3 "$helper" free-port)
    "$bin" serve --host 127.0.0.1 --port "$port" "${store_args[@]}" >"$work/server.log" 2>&1 &
    server_pid=$!
    if ! python3 "$helper" wait "$port" "$server_pid" 60; then
        tail -n 40 "$work/server.log" >&2 || true
        die "'$bin serve --host 127.0.0.1 --port $port ${store_args[*]}' did not start"
    fi
    endpoint="http://127.0.0.1:$port/devstoreaccount1"
    say "tableq serve ${store_args[*]} is running on $endpoint (pid $server_pid)"
fi
[ -n "$server_pid" ] || store="external"
export TABLEQ_COMPAT_ENDPOINT="$endpoint"
export PYTHONDONTWRITEBYTECODE=1

# --- the suites -----------------------------------------------------------------------
failed=()
summary=()
run_suite() { # name description command...
    local suite=$1 what=$2 started=$SECONDS status=0
    shift 2
    say "running the $suite suite ($what)"
    "$@" || status=$?
    if [ "$status" = 0 ]; then
        summary+=("$suite suite ($what, store $store): passed in $((SECONDS - started)) s")
    else
        summary+=("$suite suite ($what, store $store): FAILED (exit status $status) in $((SECONDS - started)) s")
        failed+=("$suite")
    fi
}
node_suite() { (cd "$compat/$1" && node --test --test-reporter=spec --test-timeout=120000 test/*.test.js); }
pytest_suite() { (cd "$compat/$1" && COLUMNS=${COLUMNS:-200} "$venv/bin/python" -m pytest -c "$compat/python-legacy/pytest.ini" --rootdir "$compat/$1" --basetemp="$work/pytest-$1" .); }

want node-legacy && run_suite node-legacy "azure-storage 2.10.7" node_suite node-legacy
want table-node && run_suite table-node "azure-table-node 1.5.0" node_suite table-node
want python-legacy && run_suite python-legacy "azure-cosmosdb-table 1.0.6" pytest_suite python-legacy
want rust && run_suite rust "azure_data_tables 0.21" "$rust_bin"
if want azcli; then
    if [ -n "$az_bin" ]; then
        az_version=$("$az_bin" version --query '"azure-cli"' --output tsv 2>/dev/null || echo '?')
        export AZ="$az_bin"
        run_suite azcli "Azure CLI $az_version" pytest_suite azcli
    else
        summary+=("azcli suite: SKIPPED: $az_skip")
    fi
fi

if [ -n "$server_pid" ] && ! kill -0 "$server_pid" 2>/dev/null; then
    summary+=("the server (pid $server_pid) exited during the tests")
    failed+=(server)
fi
if [ ${#failed[@]} -gt 0 ] && [ -f "$work/server.log" ]; then
    say "server log ($work/server.log), last lines:"
    tail -n 30 "$work/server.log" >&2 || true
fi
stop_server
stop_pg

for line in "${summary[@]}"; do say "$line"; done
if [ ${#failed[@]} -gt 0 ]; then
    say "FAILED: ${failed[*]}"
    exit 1
fi
say "all suites passed"
