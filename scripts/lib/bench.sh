# Shared by the HTTP benchmark scripts (duel.sh, request-cost.sh, scale.sh, pg-cost.sh); sourced, not
# run. Set BENCH_NAME (the prefix of messages) before sourcing.
#
#   bench_need CMD PACKAGE   installs a Debian package (apt-get, as root) when CMD is missing
#   bench_tableq             sets TABLEQ_BIN: the release binary, built unless already set
#   free_port                prints a free loopback port
#   wait_port PORT PID NAME  waits until PORT accepts, failing if PID exits first
#   bench_work DIR           sets WORK: DIR, or a new temporary directory (printed)
#   cpu_ticks PID...         CPU ticks (user + system, all threads; `getconf CLK_TCK` a
#                            second) the processes have used so far, summed — each with the
#                            children it has reaped, unless its parent is among the PIDs
#                            (a server's processes: its backends come and go)
#   wrk_figures FILE LABEL   prints "REQUESTS|REQ_PER_S|P50_US" of a `wrk --latency` output
#                            FILE; exits (printing FILE) when a reply failed (non-2xx, socket
#                            errors), LABEL naming the figure
#   gen_pk P PARTITIONS      prints partition P's PartitionKey as `tableq gen` writes it
#                            for PARTITIONS partitions (`p` + at least 3 digits, as many
#                            as PARTITIONS − 1 has)
#   gen_rk R                 prints row R's RowKey as `tableq gen` writes it (`r` + 8 digits)
#   PIDS                     servers to stop (by pid) when the script exits
# and exports DUEL_SAS (an account SAS of the development account, both servers know its
# key), DUEL_ACCOUNT and ACCOUNT for the wrk scripts in benches/duel/.

gen_pk() { # p partitions
    local last=$(( $2 - 1 )) width
    width=${#last}
    [ "$width" -ge 3 ] || width=3
    printf "p%0${width}d" "$1"
}

gen_rk() { printf 'r%08d' "$1"; }

bench_need() {
    command -v "$1" > /dev/null && return 0
    if [ "$(id -u)" = 0 ]; then
        echo "$BENCH_NAME: installing $2 (apt-get)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" > /dev/null \
            || { apt-get update -q > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" > /dev/null; }
    else
        echo "$BENCH_NAME: $1 is missing: install $2 (apt-get install $2) or run as root" >&2
        exit 2
    fi
}

bench_tableq() {
    if [ -z "${TABLEQ_BIN:-}" ]; then
        (cd "$ROOT" && cargo build --release --quiet --bin tableq)
        TABLEQ_BIN="$ROOT/target/release/tableq"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() { # port pid name
    for _ in $(seq 1 300); do
        if (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; then return 0; fi
        kill -0 "$2" 2> /dev/null || { echo "$BENCH_NAME: $3 exited while starting (log: ${WORK:-?})" >&2; exit 1; }
        sleep 0.1
    done
    echo "$BENCH_NAME: $3 did not listen on port $1" >&2
    exit 1
}

bench_work() {
    WORK="${1:-$(mktemp -d "/tmp/tableq-$BENCH_NAME.XXXXXX")}"
    mkdir -p "$WORK"
    echo "$BENCH_NAME: work directory $WORK" >&2
}

cpu_ticks() {
    python3 - "$@" << 'PY'
import sys
pids = set(sys.argv[1:])
total = 0
for pid in pids:
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue  # gone meanwhile: its parent, if listed, counts it as reaped
    ppid, times = fields[1], [int(v) for v in fields[11:15]]
    total += sum(times[:2]) if ppid in pids else sum(times)
print(total)
PY
}

wrk_figures() {
    if grep -q 'Non-2xx\|Socket errors' "$1"; then
        echo "$BENCH_NAME: $2: failed replies (see $1):" >&2
        cat "$1" >&2
        exit 1
    fi
    python3 - "$1" << 'PY'
import re, sys
text = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", text).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
m = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
p50 = float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
print(f"{n}|{rps:.0f}|{p50:.0f}")
PY
}

PIDS=()
bench_cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2> /dev/null || true; done
}
trap bench_cleanup EXIT

ACCOUNT=devstoreaccount1
ACCOUNT_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
DUEL_SAS="$(python3 - "$ACCOUNT" "$ACCOUNT_KEY" << 'PY'
import base64, hashlib, hmac, sys, urllib.parse
account, key = sys.argv[1], sys.argv[2]
fields = {"sv": "2019-02-02", "ss": "t", "srt": "sco", "sp": "rwdlacu",
          "se": "2099-01-01T00:00:00Z", "spr": "https,http"}
to_sign = "\n".join([account, fields["sp"], fields["ss"], fields["srt"], "", fields["se"], "",
                     fields["spr"], fields["sv"]]) + "\n"
sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
fields["sig"] = sig
print("&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in fields.items()))
PY
)"
export DUEL_SAS DUEL_ACCOUNT="$ACCOUNT"
