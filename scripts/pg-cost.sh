#!/usr/bin/env bash
# PostgreSQL point gets against the durable engine (issue 31 §5), side by side in one run:
# requests a second, p50, and the CPU a get costs tableq and PostgreSQL.
#
#   scripts/pg-cost.sh [--shards 0|N] [--runs 3] [--seconds 3] [--entities 100000]
#                      [--partitions 100] [--socket] [--tableq BIN]
#
# Starts local PostgreSQL servers with `scripts/pg-cluster.sh up --no-fsync` (one server, or
# with --shards N a coordinator and N shards; fsync off, as for tests: durability is not
# what is measured) and two `tableq serve` processes — one on that PostgreSQL store, one on a
# fresh durable data directory — loads the same N `tableq gen` entities in P partitions into
# both through `tableq import --endpoint`, and restarts the durable server on its directory
# (so that its gets read stored blocks, as in request-cost.sh). Each run then measures, with
# wrk and `benches/duel/point_get.lua` (random existing keys, the account SAS), at 1
# connection (`-t1 -c1`) and at 8 (`-t2 -c8`), the two servers alternating which goes first:
#   * requests a second and the p50 latency;
#   * tableq's CPU per get (utime + stime of the serving process, /proc/PID/stat);
#   * PostgreSQL's CPU per get (every server process of the cluster, `pg-cluster.sh pids`:
#     each postmaster with the children it reaped, and its live children), which for the
#     durable engine shows PostgreSQL's background work (≈ 0).
# With --socket, tableq reaches the one server (or the coordinator) through its Unix
# socket instead of loopback TCP (`TABLEQ_PG_SOCKET_URL`; routed gets still reach the
# shards by TCP, as the coordinator's catalog names them). Every reply must be a success. The table printed at the end holds each figure's runs and
# the ratio durable ÷ PostgreSQL of requests a second per run: the issue's targets are ≤ 2×
# on one server and ≤ 3× on 3 shards. tableq, PostgreSQL and wrk share the machine's cores:
# PostgreSQL's CPU per get is part of what a get costs the machine.
#
# Installs wrk (Debian package, apt-get as root) when missing and builds the release binary
# unless --tableq names one. Needs PostgreSQL 15 with postgres_fdw (see pg-cluster.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LUA_DIR="$ROOT/benches/duel"
SHARDS=0
RUNS=3
SECONDS_PER_FIGURE=3
ENTITIES=100000
PARTITIONS=100
TABLEQ_BIN=""
SOCKET=0

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --shards) SHARDS="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_FIGURE="$2"; shift 2 ;;
        --entities) ENTITIES="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        --tableq) TABLEQ_BIN="$2"; shift 2 ;;
        --socket) SOCKET=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "pg-cost: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ $((ENTITIES % PARTITIONS)) -ne 0 ]; then
    echo "pg-cost: --entities must be a multiple of --partitions" >&2
    exit 2
fi

BENCH_NAME=pg-cost
# shellcheck source=lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"
bench_need wrk wrk
bench_tableq
bench_work "${PG_COST_WORK:-}"
export DUEL_LUA_DIR="$LUA_DIR" DUEL_PARTITIONS="$PARTITIONS" DUEL_ROWS=$((ENTITIES / PARTITIONS)) DUEL_TABLE=bench

eval "$("$ROOT/scripts/pg-cluster.sh" up --shards "$SHARDS" --no-fsync --owner-pid $$)"
cleanup() {
    bench_cleanup
    "$ROOT/scripts/pg-cluster.sh" down "$TABLEQ_PG_DIR" > /dev/null 2>&1 || true
}
trap cleanup EXIT

if [ ! -s "$WORK/entities.jsonl" ]; then
    "$TABLEQ_BIN" gen --entities "$ENTITIES" --partitions "$PARTITIONS" > "$WORK/entities.jsonl"
fi

declare -A PORT PID
serve() { # name args...
    local name=$1
    shift
    PORT[$name]=$(free_port)
    "$TABLEQ_BIN" serve --port "${PORT[$name]}" "$@" >> "$WORK/$name.log" 2>&1 &
    PID[$name]=$!
    PIDS+=("${PID[$name]}")
    wait_port "${PORT[$name]}" "${PID[$name]}" "tableq ($name)"
}
if [ "$SOCKET" = 1 ]; then PG_STORE_URL=$TABLEQ_PG_SOCKET_URL; else PG_STORE_URL=$TABLEQ_PG_URL; fi
serve postgres --store "$PG_STORE_URL"
serve durable --data "$WORK/durable"
for name in postgres durable; do
    "$TABLEQ_BIN" import --table bench "$WORK/entities.jsonl" \
        --endpoint "http://127.0.0.1:${PORT[$name]}/$ACCOUNT" 2> "$WORK/import-$name.log"
done
kill "${PID[durable]}"
wait "${PID[durable]}" 2> /dev/null || true
serve durable --data "$WORK/durable"
for name in postgres durable; do
    wrk -t1 -c8 -d2s -s "$LUA_DIR/point_get.lua" "http://127.0.0.1:${PORT[$name]}" > /dev/null
done
echo "pg-cost: $ENTITIES entities loaded; PostgreSQL: $([ "$SHARDS" = 0 ] && echo "one server" || echo "$SHARDS shards"), $([ "$SOCKET" = 1 ] && echo "Unix socket" || echo "loopback TCP")" >&2

# measure NAME CONNS RUN -> appends "name|conns|run|tableq_ticks|postgres_ticks|requests|rps|p50us"
measure() {
    local name=$1 conns=$2 run=$3 threads=1
    [ "$conns" -gt 1 ] && threads=2
    local out="$WORK/wrk-r$run-c$conns-$name.txt"
    local t0 g0 t1 g1
    t0=$(cpu_ticks "${PID[$name]}")
    # PostgreSQL's processes: each postmaster with the backends and workers it reaped.
    # shellcheck disable=SC2046
    g0=$(cpu_ticks $("$ROOT/scripts/pg-cluster.sh" pids "$TABLEQ_PG_DIR"))
    wrk --latency -t "$threads" -c "$conns" -d "${SECONDS_PER_FIGURE}s" --timeout 10s \
        -s "$LUA_DIR/point_get.lua" "http://127.0.0.1:${PORT[$name]}" > "$out" 2>&1 \
        || { cat "$out" >&2; exit 1; }
    t1=$(cpu_ticks "${PID[$name]}")
    # shellcheck disable=SC2046
    g1=$(cpu_ticks $("$ROOT/scripts/pg-cluster.sh" pids "$TABLEQ_PG_DIR"))
    local figures
    figures=$(wrk_figures "$out" "$name, $conns connections")
    echo "$name|$conns|$run|$((t1 - t0))|$((g1 - g0))|$figures" >> "$WORK/results.txt"
}

: > "$WORK/results.txt"
for run in $(seq 1 "$RUNS"); do
    for conns in 1 8; do
        if [ $(((run + conns) % 2)) -eq 0 ]; then order="durable postgres"; else order="postgres durable"; fi
        for name in $order; do measure "$name" "$conns" "$run"; done
    done
    echo "pg-cost: run $run done" >&2
done

python3 - "$WORK/results.txt" "$(getconf CLK_TCK)" "$SHARDS" << 'EOF'
import statistics, sys
from collections import defaultdict
tick_us = 1e6 / int(sys.argv[2])
shards = int(sys.argv[3])
rows = defaultdict(dict)
for line in open(sys.argv[1]):
    name, conns, run, tq, pg, n, rps, p50 = line.strip().split("|")
    rows[(name, int(conns))][int(run)] = (int(n), int(tq) * tick_us, int(pg) * tick_us, float(rps), float(p50))
def fmt(values, unit=""):
    return f"{statistics.median(values):.0f}{unit} ({', '.join(f'{v:.0f}' for v in values)})"
target = 2 if shards == 0 else 3
print(f"| engine, connections | req/s | p50 | tableq CPU a get | PostgreSQL CPU a get | durable ÷ PostgreSQL (req/s) |")
print("|---|---|---|---|---|---|")
for conns in (1, 8):
    for name in ("durable", "postgres"):
        runs = rows[(name, conns)]
        order = sorted(runs)
        rps = [runs[r][3] for r in order]
        p50 = [runs[r][4] for r in order]
        tq = [runs[r][1] / runs[r][0] for r in order]
        pg = [runs[r][2] / runs[r][0] for r in order]
        ratio = ""
        if name == "postgres":
            d = rows[("durable", conns)]
            ratio = ", ".join(f"{d[r][3] / runs[r][3]:.2f}×" for r in order) + f" (target ≤ {target}×)"
        label = "durable" if name == "durable" else ("PostgreSQL, one server" if shards == 0 else f"PostgreSQL, {shards} shards")
        print(f"| {label}, c{conns} | {fmt(rps)} | {fmt(p50, ' µs')} | {fmt(tq, ' µs')} | {fmt(pg, ' µs')} | {ratio} |")
EOF
