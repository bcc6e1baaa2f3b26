#!/usr/bin/env bash
# Request cost against the machine's limit: server CPU per request of `tableq serve`
# beside nginx serving the same reply bytes as a static file, measured in one run.
#
#   scripts/request-cost.sh [--runs 3] [--seconds 5] [--entities 100000] [--partitions 100]
#                           [--connections 8] [--workers 1|default] [--tableq-args "--fsync always"]
#                           [--tableq BIN] [--floor BIN]
#
# Installs what it needs (wrk and nginx: Debian packages, apt-get as root when missing) and
# builds the release binary unless --tableq names one, and the floor (below) unless --floor
# names one. Each run starts tableq on a fresh
# durable data directory (its request log goes to a file, as nginx's access log does),
# loads N entities in P partitions through `tableq import --endpoint` and restarts on the
# same directory (so that point gets read stored blocks, not the memtable of the last
# writes); one point get's reply
# body becomes nginx's static file, so both servers send the same bytes. nginx runs one
# worker process (`master_process off`), keep-alive, access log on; tableq likewise serves
# with one worker thread (`serve --workers 1`; `--workers default` gives it one per core).
# Then, with wrk
# (`-t2 -c8`, keep-alive, the account SAS in the URL), each run measures, alternating
# which server goes first:
#   * point get (random existing key) on tableq, the static file on nginx;
#   * the same reply from the floor: `examples/static_reply.rs`, tableq's own HTTP stack
#     (one single-threaded tokio runtime, hyper's HTTP/1.1, the binary's allocator)
#     answering every request with the reply body and nothing else — what a request costs
#     in this stack before tableq does any work;
#   * single insert (POST, Prefer: return-no-content) on tableq.
# The server's CPU time is read from /proc/PID/stat (utime + stime of all its threads)
# before and after each figure: CPU per request = CPU time / requests answered. Every reply
# must be a success. The table printed at the end holds the medians over the runs and the
# ratios to nginx's CPU per request (issue 31's targets: point get ≤ 1.5×, insert ≤ 2.5×).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LUA_DIR="$ROOT/benches/duel"
RUNS=3
SECONDS_PER_FIGURE=5
ENTITIES=100000
PARTITIONS=100
CONNS=8
WORKERS=1
TABLEQ_ARGS=""
TABLEQ_BIN=""
FLOOR_BIN=""

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_FIGURE="$2"; shift 2 ;;
        --entities) ENTITIES="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        --connections) CONNS="$2"; shift 2 ;;
        --workers) WORKERS="$2"; shift 2 ;;
        --tableq-args) TABLEQ_ARGS="$2"; shift 2 ;;
        --tableq) TABLEQ_BIN="$2"; shift 2 ;;
        --floor) FLOOR_BIN="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "request-cost: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ $((ENTITIES % PARTITIONS)) -ne 0 ]; then
    echo "request-cost: --entities must be a multiple of --partitions" >&2
    exit 2
fi
ROWS=$((ENTITIES / PARTITIONS))

# --- tools -------------------------------------------------------------------------------
BENCH_NAME=request-cost
# shellcheck source=lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"
bench_need wrk wrk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { bench_need nginx nginx-light; NGINX=$(command -v nginx || echo /usr/sbin/nginx); }
bench_tableq
if [ -z "$FLOOR_BIN" ]; then
    (cd "$ROOT" && cargo build --release --quiet --example static_reply)
    FLOOR_BIN="$ROOT/target/release/examples/static_reply"
fi

bench_work "${COST_WORK:-}"

export DUEL_LUA_DIR="$LUA_DIR" DUEL_PARTITIONS="$PARTITIONS" DUEL_ROWS="$ROWS"

if [ ! -s "$WORK/entities.jsonl" ]; then
    "$TABLEQ_BIN" gen --entities "$ENTITIES" --partitions "$PARTITIONS" > "$WORK/entities.jsonl"
fi

# measure NAME PID URL SCRIPT RUN -> appends "name|run|cpu_ticks|requests|rps|p50us" to results
measure() {
    local name=$1 pid=$2 url=$3 script=$4 run=$5
    local out="$WORK/wrk-r$run-$name.txt"
    local before after
    before=$(cpu_ticks "$pid")
    local args=(--latency -t 2 -c "$CONNS" -d "${SECONDS_PER_FIGURE}s" --timeout 10s)
    [ -n "$script" ] && args+=(-s "$script")
    DUEL_PREFIX="r$run" DUEL_TABLE=$([ "$name" = insert ] && echo ins || echo bench) \
        wrk "${args[@]}" "$url" > "$out" 2>&1 || { cat "$out" >&2; exit 1; }
    after=$(cpu_ticks "$pid")
    local figures
    figures=$(wrk_figures "$out" "$name")
    echo "$name|$run|$((after - before))|$figures" >> "$WORK/results.txt"
}

: > "$WORK/results.txt"
echo "request-cost: $RUNS runs, $ENTITIES entities, ${SECONDS_PER_FIGURE}s per figure, wrk -t2 -c$CONNS, tableq --workers $WORKERS ${TABLEQ_ARGS:-(durable default)} vs nginx $("$NGINX" -v 2>&1 | sed 's/.*\///')" >&2
for run in $(seq 1 "$RUNS"); do
    TQ_PORT=$(free_port)
    WORKER_ARGS=""
    [ "$WORKERS" = default ] || WORKER_ARGS="--workers $WORKERS"
    # shellcheck disable=SC2086
    "$TABLEQ_BIN" serve --port "$TQ_PORT" --data "$WORK/tableq-$run" $WORKER_ARGS $TABLEQ_ARGS \
        > "$WORK/tableq-$run.log" 2>&1 &
    TQ_PID=$!
    PIDS+=("$TQ_PID")
    wait_port "$TQ_PORT" "$TQ_PID" tableq
    endpoint="http://127.0.0.1:$TQ_PORT/$ACCOUNT"
    "$TABLEQ_BIN" import --table bench "$WORK/entities.jsonl" --endpoint "$endpoint" 2> "$WORK/import-$run.log"
    curl -sf -o /dev/null -X POST "$endpoint/Tables?$DUEL_SAS" -H 'Content-Type: application/json' \
        -H 'Accept: application/json;odata=nometadata' -H 'x-ms-version: 2019-02-02' \
        -d '{"TableName":"ins"}'
    # Restarted on the same directory (a clean stop checkpoints): point gets then read the
    # stored blocks, as on a server whose data is older than its last flush, not the
    # memtable of the import's last writes.
    kill "$TQ_PID"
    wait "$TQ_PID" 2> /dev/null || true
    # shellcheck disable=SC2086
    "$TABLEQ_BIN" serve --port "$TQ_PORT" --data "$WORK/tableq-$run" $WORKER_ARGS $TABLEQ_ARGS \
        >> "$WORK/tableq-$run.log" 2>&1 &
    TQ_PID=$!
    PIDS+=("$TQ_PID")
    wait_port "$TQ_PORT" "$TQ_PID" tableq

    # nginx serves one point get's reply body, byte for byte.
    mkdir -p "$WORK/www" "$WORK/nginx-$run"
    key="(PartitionKey='$(gen_pk $((PARTITIONS / 2)) "$PARTITIONS")',RowKey='$(gen_rk $((ROWS / 2)))')"
    curl -sf -o "$WORK/www/entity.json" "$endpoint/bench$key?$DUEL_SAS" \
        -H 'Accept: application/json;odata=nometadata' -H 'x-ms-version: 2019-02-02' -H 'DataServiceVersion: 3.0'
    NG_PORT=$(free_port)
    cat > "$WORK/nginx-$run/nginx.conf" << EOF
daemon off;
master_process off;
worker_processes 1;
pid $WORK/nginx-$run/nginx.pid;
error_log $WORK/nginx-$run/error.log;
events { worker_connections 1024; }
http {
    access_log $WORK/nginx-$run/access.log;
    client_body_temp_path $WORK/nginx-$run;
    proxy_temp_path $WORK/nginx-$run;
    fastcgi_temp_path $WORK/nginx-$run;
    uwsgi_temp_path $WORK/nginx-$run;
    scgi_temp_path $WORK/nginx-$run;
    keepalive_requests 100000000;
    types { application/json json; }
    server {
        listen 127.0.0.1:$NG_PORT;
        root $WORK/www;
    }
}
EOF
    "$NGINX" -c "$WORK/nginx-$run/nginx.conf" -p "$WORK/nginx-$run" > "$WORK/nginx-$run/stdout.log" 2>&1 &
    NG_PID=$!
    PIDS+=("$NG_PID")
    wait_port "$NG_PORT" "$NG_PID" nginx
    FL_PORT=$(free_port)
    "$FLOOR_BIN" --port "$FL_PORT" --body "$WORK/www/entity.json" > "$WORK/floor-$run.log" 2>&1 &
    FL_PID=$!
    PIDS+=("$FL_PID")
    wait_port "$FL_PORT" "$FL_PID" static_reply
    # The three send the same body.
    for url in "http://127.0.0.1:$NG_PORT/entity.json" "http://127.0.0.1:$FL_PORT/entity.json"; do
        curl -sf "$url" | cmp -s - "$WORK/www/entity.json" \
            || { echo "request-cost: $url does not send the point get's body" >&2; exit 1; }
    done
    echo "request-cost: run $run: loaded; reply $(stat -c %s "$WORK/www/entity.json") bytes" >&2

    if [ $((run % 2)) -eq 1 ]; then order="nginx floor get insert"; else order="insert get floor nginx"; fi
    for fig in $order; do
        case $fig in
            nginx) measure nginx "$NG_PID" "http://127.0.0.1:$NG_PORT/entity.json" "" "$run" ;;
            floor) measure floor "$FL_PID" "http://127.0.0.1:$FL_PORT/entity.json" "" "$run" ;;
            get) measure get "$TQ_PID" "http://127.0.0.1:$TQ_PORT" "$LUA_DIR/point_get.lua" "$run" ;;
            insert) measure insert "$TQ_PID" "http://127.0.0.1:$TQ_PORT" "$LUA_DIR/insert.lua" "$run" ;;
        esac
    done
    kill "$TQ_PID" "$NG_PID" "$FL_PID"
    wait "$TQ_PID" 2> /dev/null || true
    wait "$NG_PID" 2> /dev/null || true
    wait "$FL_PID" 2> /dev/null || true
    PIDS=()
    echo "request-cost: run $run done" >&2
done

python3 - "$WORK" "$(getconf CLK_TCK)" << 'EOF'
import statistics, sys
from collections import defaultdict
tick_us = 1e6 / int(sys.argv[2])
rows = defaultdict(list)
for line in open(f"{sys.argv[1]}/results.txt"):
    name, run, ticks, n, rps, p50 = line.strip().split("|")
    rows[name].append((int(ticks) * tick_us / int(n), float(rps), float(p50)))
def med(name, i):
    return statistics.median(r[i] for r in rows[name])
anchor = med("nginx", 0)
labels = {"nginx": "nginx, static file (anchor)", "floor": "floor: hyper + tokio, fixed reply", "get": "tableq point get", "insert": "tableq single insert"}
targets = {"get": 1.5, "insert": 2.5}
print("| request | server CPU per request | ratio to nginx | target | req/s | p50 |")
print("|---|---|---|---|---|---|")
for name in ("nginx", "floor", "get", "insert"):
    if name not in rows:
        continue
    cpu = med(name, 0)
    runs = ", ".join(f"{r[0]:.1f}" for r in rows[name])
    target = f"≤ {targets[name]}×" if name in targets else ""
    print(f"| {labels[name]} | {cpu:.1f} µs ({runs}) | {cpu / anchor:.2f}× | {target} | {med(name, 1):.0f} | {med(name, 2):.0f} µs |")
if "floor" in rows:
    floor = med("floor", 0)
    own = ", ".join(f"{name} {med(name, 0) - floor:.1f} µs" for name in ("get", "insert") if name in rows)
    print(f"\nOver the floor (tableq's own work a request, medians): {own}; "
          f"the 1.5× target leaves {1.5 * anchor - floor:.1f} µs for a point get's.")
EOF
