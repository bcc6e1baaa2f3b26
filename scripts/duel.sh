#!/usr/bin/env bash
# The duel: `tableq serve` against Azurite, measured side by side with the same wrk client.
#
#   scripts/duel.sh [--runs 3] [--seconds 4] [--entities 100000] [--partitions 100]
#                   [--tableq-args "--fsync always"] [--tableq BIN] [--only NAME]...
#                   [--azurite-load-limit SECONDS]
#
# Installs what it needs into the checkout (git-ignored): Azurite (pinned, from npm) under
# .duel/azurite, and wrk (the Debian package; apt-get as root when it is missing). Builds the
# release binary unless --tableq names one. Each run starts both servers on free loopback
# ports (tableq on a fresh durable data directory unless --tableq-args says otherwise, Azurite
# in memory), loads the same N entities in P partitions into both through `tableq import
# --endpoint` ($batch changesets; the load rate is the batch-load figure), then runs every
# figure with wrk (keep-alive, account SAS in the URL, 1 and 8 connections, S seconds each),
# alternating which server goes first. Servers are stopped by pid. The table printed at the
# end holds medians over the runs: p50 latency and requests/s of each server, and the ratio
# of requests/s (tableq / Azurite). Every reply must be a success: a figure with any non-2xx
# reply or socket error stops the duel. Raw wrk output is kept under $DUEL_WORK (default: a
# temporary directory, printed).
#
# The 10 M mode (`--entities 10000000`, any N over 1 M): Azurite keeps every entity in one
# Node.js process's heap and cannot hold such a table in reasonable time and memory. Above
# 1 M entities Azurite is loaded in chunks of 100 k, through the same `tableq import`,
# until the table is whole or --azurite-load-limit (default 300 s) runs out or Azurite
# exits; the duel reports how many entities it took, at what rate and with what resident
# memory, and the figures then run on tableq alone (a comparison with a partial table would
# mean nothing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AZURITE_VERSION="3.37.0"
TOOLS="$ROOT/.duel"
LUA_DIR="$ROOT/benches/duel"

RUNS=3
SECONDS_PER_FIGURE=4
ENTITIES=100000
PARTITIONS=100
TABLEQ_ARGS=""
TABLEQ_BIN=""
ONLY=()
AZURITE_LOAD_LIMIT=300

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_FIGURE="$2"; shift 2 ;;
        --entities) ENTITIES="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        --tableq-args) TABLEQ_ARGS="$2"; shift 2 ;;
        --tableq) TABLEQ_BIN="$2"; shift 2 ;;
        --only) ONLY+=("$2"); shift 2 ;;
        --azurite-load-limit) AZURITE_LOAD_LIMIT="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "duel: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ $((ENTITIES % PARTITIONS)) -ne 0 ]; then
    echo "duel: --entities must be a multiple of --partitions (the random keys assume it)" >&2
    exit 2
fi
ROWS=$((ENTITIES / PARTITIONS))
# Above 1 M entities Azurite is loaded in chunks under a time limit (the 10 M mode).
CHUNKED_AZURITE=$([ "$ENTITIES" -gt 1000000 ] && echo 1 || echo 0)

# --- tools -------------------------------------------------------------------------------
BENCH_NAME=duel
# shellcheck source=lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"
bench_need wrk wrk
AZURITE="$TOOLS/azurite/node_modules/.bin/azurite-table"
installed_version() {
    node -p "require('$TOOLS/azurite/node_modules/azurite/package.json').version" 2> /dev/null || true
}
if [ "$(installed_version)" != "$AZURITE_VERSION" ]; then
    echo "duel: installing Azurite $AZURITE_VERSION into .duel/azurite (npm)" >&2
    mkdir -p "$TOOLS/azurite"
    [ -f "$TOOLS/azurite/package.json" ] || echo '{"private": true}' > "$TOOLS/azurite/package.json"
    (cd "$TOOLS/azurite" && npm install --no-audit --no-fund --silent "azurite@$AZURITE_VERSION")
fi
bench_tableq

bench_work "${DUEL_WORK:-}"

export DUEL_LUA_DIR="$LUA_DIR" DUEL_PARTITIONS="$PARTITIONS" DUEL_ROWS="$ROWS"

if [ ! -s "$WORK/entities.jsonl" ]; then
    "$TABLEQ_BIN" gen --entities "$ENTITIES" --partitions "$PARTITIONS" > "$WORK/entities.jsonl"
fi

# load_azurite_chunked ENDPOINT RUN: the 10 M mode's load of Azurite (see the header). Returns
# 0 when the whole table is in, 1 otherwise; appends a line to $WORK/azurite-load.txt.
load_azurite_chunked() {
    local endpoint=$1 run=$2 loaded=0 chunk=100000 start now rss why=""
    [ -d "$WORK/chunks" ] || { mkdir -p "$WORK/chunks" && split -l "$chunk" -d -a 4 "$WORK/entities.jsonl" "$WORK/chunks/part-"; }
    start=$(date +%s.%N)
    for part in "$WORK/chunks"/part-*; do
        now=$(date +%s.%N)
        if python3 -c "import sys; sys.exit(0 if $now - $start > $AZURITE_LOAD_LIMIT else 1)"; then
            why="stopped at the ${AZURITE_LOAD_LIMIT}-s limit"
            break
        fi
        if ! timeout $((AZURITE_LOAD_LIMIT + 60)) "$TABLEQ_BIN" import --table bench "$part" --endpoint "$endpoint" \
            2>> "$WORK/import-azurite-$run.log"; then
            kill -0 "$AZ_PID" 2> /dev/null && why="an import of 100 k failed (see import-azurite-$run.log)" \
                || why="Azurite exited (see azurite-$run.log)"
            break
        fi
        loaded=$((loaded + $(wc -l < "$part")))
    done
    now=$(date +%s.%N)
    rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$AZ_PID/status" 2> /dev/null || echo "?")
    local rate
    rate=$(python3 -c "print(f'{$loaded / ($now - $start):.0f}')")
    if [ "$loaded" -eq "$ENTITIES" ]; then
        echo "azurite|$run|$rate" >> "$WORK/load.txt"
        echo "run $run: Azurite took all $ENTITIES entities at $rate/s (RSS $rss MiB)" >> "$WORK/azurite-load.txt"
        return 0
    fi
    echo "run $run: Azurite took $loaded of $ENTITIES entities in $(python3 -c "print(f'{$now - $start:.0f}')") s ($rate/s, RSS $rss MiB), $why; figures on tableq only" >> "$WORK/azurite-load.txt"
    return 1
}

# --- the figures ---------------------------------------------------------------------------
# name | kind (get, insert, query: its first page; scan: every page) | query string
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="=&$,"))' "$1"; }
P_MID=$(gen_pk $((PARTITIONS / 2)) "$PARTITIONS")
R_MID=$(printf 'r%08d' $((ROWS / 2)))
R_LO=$(printf 'r%08d' $((ROWS / 4)))
R_HI=$(printf 'r%08d' $((ROWS / 4 + 100)))
OR5=""
for i in 1 2 3 4 5; do
    part="(PartitionKey eq '$(gen_pk $((i * 17 % PARTITIONS)) "$PARTITIONS")' and RowKey eq '$(gen_rk $((i * 131 % ROWS)))')"
    OR5="${OR5:+$OR5 or }$part"
done
FIGURES=(
    "single insert|insert|"
    "full scan, selective residual|scan|\$filter=$(enc "Age eq 42 and Score lt 500.0")"
    "point get|get|"
    "point \$filter|query|\$filter=$(enc "PartitionKey eq '$P_MID' and RowKey eq '$R_MID'")"
    "partition ($ROWS rows)|query|\$filter=$(enc "PartitionKey eq '$P_MID'")"
    "RowKey range (100 rows)|query|\$filter=$(enc "PartitionKey eq '$P_MID' and RowKey ge '$R_LO' and RowKey lt '$R_HI'")"
    "OR of 5 points|query|\$filter=$(enc "$OR5")"
    "\$select+\$top (Age lt 10, 50 rows)|query|\$filter=$(enc "Age lt 10")&\$select=Name,Age&\$top=50"
)
selected() {
    [ ${#ONLY[@]} -eq 0 ] && return 0
    for o in "${ONLY[@]}"; do [[ "$1" == *"$o"* ]] && return 0; done
    return 1
}

# run_wrk SERVER PORT FIGURE KIND QUERY CONNS RUN -> appends "server|figure|conns|run|reqs|p50us" to results
run_wrk() {
    local server=$1 port=$2 figure=$3 kind=$4 query=$5 conns=$6 run=$7
    local threads=$(( conns < 2 ? 1 : 2 ))
    local out="$WORK/wrk-r$run-$server-$conns-$(echo "$figure" | tr -c 'A-Za-z0-9' '_').txt"
    local script
    case "$kind" in
        get) script="$LUA_DIR/point_get.lua" ;;
        insert) script="$LUA_DIR/insert.lua" ;;
        query|scan) script="$LUA_DIR/query.lua" ;;
    esac
    DUEL_QUERY="$query" DUEL_PAGES=$([ "$kind" = scan ] && echo all || echo first) DUEL_PREFIX="r$run-c$conns" DUEL_TABLE=$([ "$kind" = insert ] && echo ins || echo bench) \
        wrk --latency -t "$threads" -c "$conns" -d "${SECONDS_PER_FIGURE}s" --timeout 10s \
        -s "$script" "http://127.0.0.1:$port" > "$out" 2>&1 || { cat "$out" >&2; exit 1; }
    if grep -q 'Non-2xx\|Socket errors' "$out"; then
        echo "duel: $server, $figure, $conns connections: failed replies (see $out):" >&2
        cat "$out" >&2
        exit 1
    fi
    python3 - "$out" "$server|$figure|$conns|$run|$SECONDS_PER_FIGURE" >> "$WORK/results.txt" << 'EOF'
import re, sys
text = open(sys.argv[1]).read()
tag, seconds = sys.argv[2].rsplit("|", 1)
def us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
m = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
p50 = us(*m.groups())
q = re.search(r"DUEL queries=(\d+) pages=(\d+)", text)
dur = re.search(r"requests in ([\d.]+)(us|ms|s)", text)
seconds = us(*dur.groups()) / 1e6
if q:   # whole queries (all pages) per second; p50 is per page
    rate = int(q.group(1)) / seconds
    pages = int(q.group(2)) / max(int(q.group(1)), 1)
else:
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    pages = 1
print(f"{tag}|{rate:.1f}|{p50:.1f}|{pages:.2f}")
EOF
}

: > "$WORK/results.txt"
: > "$WORK/load.txt"
: > "$WORK/rss.txt"
echo "duel: $RUNS runs, $ENTITIES entities in $PARTITIONS partitions, ${SECONDS_PER_FIGURE}s per figure, tableq ${TABLEQ_ARGS:-(durable default)} vs Azurite $AZURITE_VERSION (in memory)" >&2
for run in $(seq 1 "$RUNS"); do
    # A reused work directory (DUEL_WORK) keeps its generated entities, never a run's data.
    rm -rf "$WORK/tableq-$run"
    TQ_PORT=$(free_port)
    # shellcheck disable=SC2086
    "$TABLEQ_BIN" serve --port "$TQ_PORT" $( [[ "$TABLEQ_ARGS" == *--in-memory* || "$TABLEQ_ARGS" == *--store* ]] || echo --data "$WORK/tableq-$run" ) $TABLEQ_ARGS \
        > "$WORK/tableq-$run.log" 2>&1 &
    TQ_PID=$!
    PIDS+=("$TQ_PID")
    AZ_PORT=$(free_port)
    "$AZURITE" --inMemoryPersistence --silent --skipApiVersionCheck --loose --disableProductStyleUrl \
        --disableTelemetry --tableHost 127.0.0.1 --tablePort "$AZ_PORT" \
        > "$WORK/azurite-$run.log" 2>&1 &
    AZ_PID=$!
    PIDS+=("$AZ_PID")
    wait_port "$TQ_PORT" "$TQ_PID" tableq
    wait_port "$AZ_PORT" "$AZ_PID" Azurite

    SERVERS="tableq azurite"
    for server in tableq azurite; do
        port=$([ $server = tableq ] && echo "$TQ_PORT" || echo "$AZ_PORT")
        endpoint="http://127.0.0.1:$port/$ACCOUNT"
        if [ "$server" = azurite ] && [ "$CHUNKED_AZURITE" = 1 ]; then
            load_azurite_chunked "$endpoint" "$run" || SERVERS="tableq"
        else
            start=$(date +%s.%N)
            "$TABLEQ_BIN" import --table bench "$WORK/entities.jsonl" --endpoint "$endpoint" 2> "$WORK/import-$server-$run.log"
            end=$(date +%s.%N)
            echo "$server|$run|$(python3 -c "print(f'{$ENTITIES / ($end - $start):.0f}')")" >> "$WORK/load.txt"
        fi
        kill -0 "$AZ_PID" 2> /dev/null || break
        curl -sf -o /dev/null -X POST "$endpoint/Tables?$DUEL_SAS" -H 'Content-Type: application/json' \
            -H 'Accept: application/json;odata=nometadata' -H 'x-ms-version: 2019-02-02' \
            -d '{"TableName":"ins"}'
    done
    echo "duel: run $run: loaded $SERVERS ($(grep "|$run|" "$WORK/load.txt" | tr '\n' ' '))" >&2

    for fig in "${FIGURES[@]}"; do
        IFS='|' read -r figure kind query <<< "$fig"
        selected "$figure" || continue
        for conns in 1 8; do
            if [ $((run % 2)) -eq 1 ]; then order="tableq azurite"; else order="azurite tableq"; fi
            [ "$SERVERS" = tableq ] && order=tableq
            for server in $order; do
                port=$([ $server = tableq ] && echo "$TQ_PORT" || echo "$AZ_PORT")
                run_wrk "$server" "$port" "$figure" "$kind" "$query" "$conns" "$run"
            done
        done
    done
    echo "tableq|$run|$(awk '/VmHWM/ {print $2}' "/proc/$TQ_PID/status")" >> "$WORK/rss.txt"
    kill "$TQ_PID" "$AZ_PID" 2> /dev/null || true
    wait "$TQ_PID" 2> /dev/null || true
    wait "$AZ_PID" 2> /dev/null || true
    PIDS=()
    echo "duel: run $run done" >&2
done

# --- the table -------------------------------------------------------------------------
python3 - "$WORK" "$ROWS" << 'EOF'
import statistics, sys
from collections import defaultdict
work = sys.argv[1]
res = defaultdict(list)
pages = {}
order = []
for line in open(f"{work}/results.txt"):
    server, figure, conns, run, rate, p50, pg = line.strip().split("|")
    res[(server, figure, conns)].append((float(rate), float(p50)))
    pages[(server, figure)] = pg
    if figure not in order:
        order.append(figure)
def med(server, figure, conns, i):
    xs = [r[i] for r in res.get((server, figure, conns), [])]
    return statistics.median(xs) if xs else None
def lat(v):
    if v is None: return "–"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"
def rate(v):
    return "–" if v is None else f"{v:,.0f}".replace(",", " ")
print("| figure (1 / 8 connections) | tableq p50 | Azurite p50 | tableq req/s | Azurite req/s | ratio (req/s) |")
print("|---|---|---|---|---|---|")
for f in order:
    cells = []
    for key in ("p50t", "p50a", "rt", "ra", "ratio"):
        parts = []
        for c in ("1", "8"):
            t, a = med("tableq", f, c, 0), med("azurite", f, c, 0)
            if key == "p50t": parts.append(lat(med("tableq", f, c, 1)))
            if key == "p50a": parts.append(lat(med("azurite", f, c, 1)))
            if key == "rt": parts.append(rate(t))
            if key == "ra": parts.append(rate(a))
            if key == "ratio": parts.append("–" if not t or not a else f"**{t / a:.1f}×**")
        cells.append(" / ".join(parts))
    note = ""
    pt, pa = pages.get(("tableq", f)), pages.get(("azurite", f))
    if pt and pa and (pt != "1.00" or pa != "1.00"):
        note = f" (pages per query: {pt} / {pa})"
    print(f"| {f}{note} | " + " | ".join(cells) + " |")
loads = defaultdict(list)
for line in open(f"{work}/load.txt"):
    server, run, r = line.strip().split("|")
    loads[server].append(float(r))
if loads.get("tableq") and loads.get("azurite"):
    t, a = statistics.median(loads["tableq"]), statistics.median(loads["azurite"])
    print(f"| `$batch` load through `tableq import` (entities/s) | | | {t:,.0f} | {a:,.0f} | **{t / a:.1f}×** |".replace(",", " "))
elif loads.get("tableq"):
    t = statistics.median(loads["tableq"])
    print(f"| `$batch` load through `tableq import` (entities/s) | | | {t:,.0f} | – | – |".replace(",", " "))
try:
    lines = open(f"{work}/azurite-load.txt").read().splitlines()
    print("\n" + "\n".join(lines))
except FileNotFoundError:
    pass
try:
    rss = [int(l.strip().split("|")[2]) for l in open(f"{work}/rss.txt")]
    print(f"\ntableq peak RSS (VmHWM) after load and all figures: {', '.join(f'{r / 1024:.0f} MiB' for r in rss)}")
except FileNotFoundError:
    pass
print("\nThe full scan counts whole queries (every page) per second, its p50 is per page (request); the other queries are first pages.")
EOF
