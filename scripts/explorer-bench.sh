#!/usr/bin/env bash
# The explorer's first page of a 1 M-entity table, end to end in headless Chromium (issue
# 21: < 200 ms). Loads `tableq gen --entities N --partitions 1000` into a durable data
# directory with `tableq import`, starts `tableq serve --data DIR` on a free loopback port,
# runs tests/browser/bench/first-page.mjs against it, and stops the server by its pid.
# Figures: benches/README.md, "explorer".
#
# Usage: scripts/explorer-bench.sh [ENTITIES]          (default 1000000)
# Environment:
#   TABLEQ_BIN           the tableq binary (default: cargo build --release, target/release/tableq)
#   TABLEQ_BENCH_ROUNDS  page loads per query (default 15)
#   TABLEQ_CHROMIUM      the browser (default /usr/bin/chromium)
# Needs Node.js and tests/browser/node_modules (scripts/browser-tests.sh installs them).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helper="$repo/tests/sdk/python/tableq_server.py"
entities=${1:-1000000}
say() { printf 'explorer-bench: %s\n' "$*" >&2; }

bin=${TABLEQ_BIN:-}
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --quiet --release --bin tableq)
    bin="${CARGO_TARGET_DIR:-$repo/target}/release/tableq"
fi
[ -d "$repo/tests/browser/node_modules/playwright-core" ] ||
    { say "tests/browser/node_modules is missing: run scripts/browser-tests.sh once"; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tableq-explorer-bench.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

say "loading $entities entities (1000 partitions) into $work/data"
SECONDS=0
"$bin" gen --entities "$entities" --partitions 1000 | "$bin" import --table big --data "$work/data" >&2
say "loaded in $SECONDS s"

port=$(python3 "$helper" free-port)
"$bin" serve --host 127.0.0.1 --port "$port" --data "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
python3 "$helper" wait "$port" "$server_pid" 120 || { tail -n 20 "$work/server.log" >&2; exit 1; }

cd "$repo/tests/browser"
TABLEQ_BENCH_ORIGIN="http://127.0.0.1:$port" TABLEQ_BENCH_TABLE=big node bench/first-page.mjs
