#!/usr/bin/env bash
# Scale: the durable default at 10 M entities next to the same steps at 100 k, one run.
#
#   scripts/scale.sh [--entities 10000000] [--partitions 100] [--baseline 100000]
#                    [--seconds 5] [--rounds 3] [--serve-args "--cache-size 1GiB"]
#                    [--block-size SIZE] [--tableq BIN]
#
# For the baseline size and the large one (same partition count):
#   1. `tableq gen` writes the JSON lines (their size is the data ratio's denominator; kept
#      in the work directory and reused);
#   2. `tableq import --data` loads them into a fresh data directory: entities/s and the
#      import's peak RSS (/usr/bin/time) (with --block-size, the blocks are cut at that
#      size: it is given to both `import` and `serve`);
#   3. the data directory's size over the JSON's.
# Then both are served at once (durable default plus --serve-args; time to the ready file),
# and every compared figure alternates between them, so that the machine's drift over
# minutes falls on both sides of each ratio alike:
#   4. random point gets with wrk (keep-alive, account SAS; 1 and 8 connections, S seconds
#      each) after a warm-up at 8 connections (not measured), in R rounds that alternate
#      which server goes first: the median p50 and requests/s of the rounds, and their
#      range;
#   5. a full scan with a selective residual (`Age eq 42 and Score lt 500.0`) followed
#      through every page, three times on each server, twice, alternating: the fastest, and
#      ns per entity (scan linear in N: the large size's ns per entity over the baseline's);
#   6. the first page of that scan after a write and its flush (one insert, then 1.5 s:
#      the default flush interval is 1 s), three times: the median in milliseconds, beside
#      the same page after the same pause with no write (a page after an idle second costs
#      more than one right after another, write or not);
#   7. each server's peak RSS (VmHWM) after all of it;
#   8. `kill -9`, then a restart on the same directory: time to the ready file.
# The table at the end sets the large size beside the baseline, with issue 31's targets
# (import ≥ 200 k/s, peak RSS ≤ 300 MiB, point-get p50 ≤ 1.2× the baseline's, scan ns per
# entity ≤ 1.2× the baseline's, data ≤ 1.0× the JSON). Installs wrk (apt-get as root) and
# builds the release binary unless --tableq names one. Needs ~0.4 KB of JSON and ~0.3 KB of
# data per entity on disk under the work directory ($SCALE_WORK, default a new temporary
# directory, printed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LUA_DIR="$ROOT/benches/duel"
ENTITIES=10000000
PARTITIONS=100
BASELINE=100000
SECONDS_PER_FIGURE=5
ROUNDS=3
SERVE_ARGS=""
BLOCK_ARGS=""
TABLEQ_BIN=""

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --entities) ENTITIES="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        --baseline) BASELINE="$2"; shift 2 ;;
        --seconds) SECONDS_PER_FIGURE="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --serve-args) SERVE_ARGS="$2"; shift 2 ;;
        --block-size) BLOCK_ARGS="--block-size $2"; shift 2 ;;
        --tableq) TABLEQ_BIN="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "scale: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$ENTITIES" "$BASELINE"; do
    if [ $((n % PARTITIONS)) -ne 0 ]; then
        echo "scale: --entities and --baseline must be multiples of --partitions" >&2
        exit 2
    fi
done
BENCH_NAME=scale
# shellcheck source=lib/bench.sh
. "$ROOT/scripts/lib/bench.sh"
bench_need wrk wrk
bench_tableq
bench_work "${SCALE_WORK:-}"

export DUEL_LUA_DIR="$LUA_DIR"

# The running servers by name (the baseline's, the large one's, a restart's).
declare -A SERVER_PIDS SERVER_PORTS
cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
    bench_cleanup
}
trap cleanup EXIT

# start_server DIR NAME -> SERVER_PIDS[NAME], SERVER_PORTS[NAME], START_MS (milliseconds to the ready file)
start_server() {
    local dir=$1 name=$2 port pid
    port=$(free_port)
    rm -f "$WORK/$name.ready"
    local t0
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    "$TABLEQ_BIN" serve --port "$port" --data "$dir" --ready-file "$WORK/$name.ready" $BLOCK_ARGS $SERVE_ARGS \
        > "$WORK/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 6000); do
        [ -f "$WORK/$name.ready" ] && break
        kill -0 "$pid" 2> /dev/null || { echo "scale: serve exited (see $WORK/$name.log)" >&2; exit 1; }
        sleep 0.005
    done
    [ -f "$WORK/$name.ready" ] || { echo "scale: serve not ready (see $WORK/$name.log)" >&2; exit 1; }
    START_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    SERVER_PIDS[$name]=$pid
    SERVER_PORTS[$name]=$port
}

# stop_server NAME [SIGNAL]
stop_server() {
    local name=$1 signal=${2:-TERM}
    kill "-$signal" "${SERVER_PIDS[$name]}"
    wait "${SERVER_PIDS[$name]}" 2> /dev/null || true
    unset "SERVER_PIDS[$name]"
}

# wrk_get CONNS ROWS NAME LABEL -> "p50_us rps" (point gets against server NAME)
wrk_get() {
    local conns=$1 rows=$2 name=$3 label=$4 out
    out="$WORK/wrk-$name-$label-c$conns.txt"
    DUEL_PARTITIONS="$PARTITIONS" DUEL_ROWS="$rows" DUEL_TABLE=bench \
        wrk --latency -t "$(( conns < 2 ? 1 : 2 ))" -c "$conns" -d "${SECONDS_PER_FIGURE}s" --timeout 10s \
        -s "$LUA_DIR/point_get.lua" "http://127.0.0.1:${SERVER_PORTS[$name]}" > "$out" 2>&1
    if grep -q 'Non-2xx\|Socket errors' "$out"; then cat "$out" >&2; exit 1; fi
    python3 - "$out" << 'EOF'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", t, re.M)
p50 = float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
print(f"{p50:.0f} {rps:.0f}")
EOF
}

# scan_seconds NAME -> seconds of the fastest of three whole selective scans (every page)
scan_seconds() {
    python3 - "${SERVER_PORTS[$1]}" "$ACCOUNT" "$DUEL_SAS" << 'EOF'
import http.client, sys, time, urllib.parse
port, account, sas = sys.argv[1], sys.argv[2], sys.argv[3]
filt = urllib.parse.quote("Age eq 42 and Score lt 500.0", safe="")
headers = {"Accept": "application/json;odata=nometadata", "x-ms-version": "2019-02-02"}
best = None
for _ in range(3):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=600)
    t0 = time.perf_counter()
    path, rows = f"/{account}/bench()?{sas}&$filter={filt}", 0
    while True:
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit(f"scan: {r.status} {body[:200]!r}")
        npk = r.getheader("x-ms-continuation-NextPartitionKey")
        nrk = r.getheader("x-ms-continuation-NextRowKey")
        if not npk:
            break
        path = f"/{account}/bench()?{sas}&$filter={filt}&NextPartitionKey={npk}" + (f"&NextRowKey={nrk}" if nrk else "")
    dt = time.perf_counter() - t0
    best = dt if best is None else min(best, dt)
print(f"{best:.6f}")
EOF
}

# page_after_write NAME -> "quiet_ms written_ms": the selective scan's first page 1.5 s after
# the last request, median of three with no write in the pause and of three each after an
# insert (flushed in the pause)
page_after_write() {
    python3 - "${SERVER_PORTS[$1]}" "$ACCOUNT" "$DUEL_SAS" << 'EOF'
import http.client, json, statistics, sys, time, urllib.parse
port, account, sas = sys.argv[1], sys.argv[2], sys.argv[3]
filt = urllib.parse.quote("Age eq 42 and Score lt 500.0", safe="")
headers = {"Accept": "application/json;odata=nometadata", "x-ms-version": "2019-02-02"}
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=600)
def page():
    t0 = time.perf_counter()
    c.request("GET", f"/{account}/bench()?{sas}&$filter={filt}", headers=headers)
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        sys.exit(f"page: {r.status} {body[:200]!r}")
    return (time.perf_counter() - t0) * 1e3
def write(i):
    entity = {"PartitionKey": "scale-writes", "RowKey": f"w{time.time_ns()}{i}", "Age": 42, "Score": 1.0}
    c.request("POST", f"/{account}/bench?{sas}", body=json.dumps(entity),
              headers={**headers, "Content-Type": "application/json", "Prefer": "return-no-content"})
    r = c.getresponse()
    body = r.read()
    if r.status not in (201, 204):
        sys.exit(f"insert: {r.status} {body[:200]!r}")
page()
quiet = []
for _ in range(3):
    time.sleep(1.5)
    quiet.append(page())
quiet = statistics.median(quiet)
written = []
for i in range(3):
    write(i)
    time.sleep(1.5)
    written.append(page())
print(f"{quiet:.1f} {statistics.median(written):.1f}")
EOF
}

# load N NAME: writes the JSON lines (once), imports them into a fresh data directory and
# records "NAME import RATE", "NAME irss MIB", "NAME json BYTES", "NAME data BYTES"
load() {
    local n=$1 name=$2
    # The JSON lines are named by what they hold, so that a work directory reused with
    # other sizes never serves one size's lines for another.
    local json="$WORK/gen-$n-$PARTITIONS.jsonl" dir="$WORK/$name-data"
    [ -s "$json" ] || "$TABLEQ_BIN" gen --entities "$n" --partitions "$PARTITIONS" > "$json"
    rm -rf "$dir"
    echo "scale: $name: importing $n entities" >&2
    local t0 t1
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$WORK/$name-import.time" \
        "$TABLEQ_BIN" import --table bench "$json" --data "$dir" $BLOCK_ARGS 2> "$WORK/$name-import.log"
    t1=$(date +%s.%N)
    {
        echo "$name n $n"
        echo "$name rate $(python3 -c "print(f'{$n / ($t1 - $t0):.0f}')")"
        echo "$name irss $(( $(tail -1 "$WORK/$name-import.time") / 1024 ))"
        echo "$name json $(stat -L -c %s "$json")"
        echo "$name data $(du -sb "$dir" | cut -f1)"
    } >> "$WORK/results.txt"
}

record() { echo "$*" >> "$WORK/results.txt"; }

: > "$WORK/results.txt"
echo "scale: $BASELINE and $ENTITIES entities in $PARTITIONS partitions, serve ${BLOCK_ARGS:+$BLOCK_ARGS }${SERVE_ARGS:-(durable default)}" >&2
load "$BASELINE" baseline
load "$ENTITIES" large

# Both servers run at once and every figure that is compared alternates between them, so
# that the machine's drift over minutes (the same figure can move by a third) falls on
# both sides of each ratio alike.
declare -A ROWS=([baseline]=$(( BASELINE / PARTITIONS )) [large]=$(( ENTITIES / PARTITIONS )))
for name in baseline large; do
    start_server "$WORK/$name-data" "$name"
    record "$name start $START_MS"
done
echo "scale: point gets, $ROUNDS rounds alternating" >&2
for name in baseline large; do
    # Warm-up (not measured): the first gets fill redb's cache and start the walk that
    # lists a large table's blocks for them (`DurableSnapshot::point_map`).
    wrk_get 8 "${ROWS[$name]}" "$name" warmup > /dev/null
done
for round in $(seq 1 "$ROUNDS"); do
    order="baseline large"
    [ $((round % 2)) -eq 0 ] && order="large baseline"
    for conns in 1 8; do
        for name in $order; do
            record "$name c$conns $(wrk_get "$conns" "${ROWS[$name]}" "$name" "r$round")"
        done
    done
done
echo "scale: scans" >&2
for order in "baseline large" "large baseline"; do
    for name in $order; do record "$name scan $(scan_seconds "$name")"; done
done
for name in baseline large; do
    record "$name pages $(page_after_write "$name")"
    record "$name hwm $(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/${SERVER_PIDS[$name]}/status")"
    stop_server "$name" 9
    start_server "$WORK/$name-data" "$name-restart"
    record "$name restart $START_MS"
    stop_server "$name-restart"
done

python3 - "$WORK/results.txt" << 'EOF'
import statistics, sys
rows = {"baseline": {}, "large": {}}
for line in open(sys.argv[1]):
    name, key, *values = line.split()
    rows[name].setdefault(key, []).append([float(v) for v in values])
def one(r, key, i=0):
    return r[key][0][i]
def median(r, key, i):
    return statistics.median(v[i] for v in r[key])
b, l = rows["baseline"], rows["large"]
n = lambda r: one(r, "n")
scan = lambda r: min(v[0] for v in r["scan"])
ns = lambda r: scan(r) * 1e9 / n(r)
def row(what, fb, fl, ratio="", target=""):
    print(f"| {what} | {fb} | {fl} | {ratio} | {target} |")
def spread(r, key, i):
    vs = sorted(v[i] for v in r[key])
    return f"{vs[0]:.0f}–{vs[-1]:.0f}" if len(vs) > 1 else f"{vs[0]:.0f}"
print(f"| figure | {n(b):,.0f} | {n(l):,.0f} | large / baseline | target |".replace(",", " "))
print("|---|---|---|---|---|")
row("import (`import --data`), entities/s", f"{one(b, 'rate'):,.0f}".replace(",", " "), f"{one(l, 'rate'):,.0f}".replace(",", " "), "", "≥ 200 000")
row("import peak RSS", f"{one(b, 'irss'):.0f} MiB", f"{one(l, 'irss'):.0f} MiB")
row("data / JSON", f"{one(b, 'data') / one(b, 'json'):.2f}×", f"{one(l, 'data') / one(l, 'json'):.2f}×", "", "≤ 1.0×")
row("start (to ready file)", f"{one(b, 'start'):.0f} ms", f"{one(l, 'start'):.0f} ms")
for c in (1, 8):
    key = f"c{c}"
    mb, ml = median(b, key, 0), median(l, key, 0)
    row(f"point get p50, {c} connection{'s' if c > 1 else ''} (median of {len(b[key])} alternating rounds; range)",
        f"{mb:.0f} µs ({spread(b, key, 0)})", f"{ml:.0f} µs ({spread(l, key, 0)})", f"{ml / mb:.2f}×", "≤ 1.2×")
row("point get req/s, 1 / 8 connections (medians)", f"{median(b, 'c1', 1):.0f} / {median(b, 'c8', 1):.0f}", f"{median(l, 'c1', 1):.0f} / {median(l, 'c8', 1):.0f}")
row(f"selective full scan, every page (best of {3 * len(b['scan'])}, alternating)", f"{scan(b) * 1e3:.2f} ms ({ns(b):.1f} ns/entity)", f"{scan(l):.2f} s ({ns(l):.1f} ns/entity)", f"{ns(l) / ns(b):.2f}× per entity", "≤ 1.2× (linear)")
row("selective scan's first page 1.5 s after the last request: no write / a write, flushed", f"{one(b, 'pages', 0)} / {one(b, 'pages', 1)} ms", f"{one(l, 'pages', 0)} / {one(l, 'pages', 1)} ms")
row("serve peak RSS (VmHWM) after all figures", f"{one(b, 'hwm'):.0f} MiB", f"{one(l, 'hwm'):.0f} MiB", "", "≤ 300 MiB")
row("restart after `kill -9` (to ready file)", f"{one(b, 'restart'):.0f} ms", f"{one(l, 'restart'):.0f} ms")
EOF
