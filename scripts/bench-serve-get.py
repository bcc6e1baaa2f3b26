#!/usr/bin/env python3
"""Point gets through `tableq serve`: latency of `GET /<account>/<table>(PartitionKey=…,RowKey=…)`
on one keep-alive HTTP/1.1 connection, the way an SDK issues them one after another.

Measures the servers given on the command line in alternation (round 1 of each, round 2 of
each, …), so a change in machine load hits every server alike. The table is the one
`cargo bench -p tableq-store --bench postgres` loads (`bench`: partitions `p0000`…, rows
`r0000`…`r0999`); keys are visited in a fixed pseudo-random order over all N entities, and
every reply must be 200 with the entity asked for.

Only the standard library (http.client): the client costs the same per request whichever
store the server runs on, and is included in every figure.

    scripts/bench-serve-get.py [--entities N] [--requests R] [--rounds K] NAME=PORT ...

e.g. `scripts/bench-serve-get.py durable=10002 pg=10003 pg3=10004`. Prints, per server and
round, the median, 90th percentile and mean latency in microseconds, then the medians over
the rounds and each server's ratio to the first one.
"""

import argparse
import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import statistics
import sys
import time

ACCOUNT = "devstoreaccount1"
# The development account's well-known key: requests are signed (SharedKeyLite, as the JS
# SDK signs) because `tableq serve` authorizes by default.
ACCOUNT_KEY = base64.b64decode(
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
TABLE = "bench"
ROWS_PER_PARTITION = 1000
HEADERS = {
    "Accept": "application/json;odata=nometadata",
    "x-ms-version": "2019-02-02",
    "DataServiceVersion": "3.0",
}


def signed(path):
    """HEADERS plus `x-ms-date` and a SharedKeyLite `Authorization` for a GET of `path`."""
    date = email.utils.formatdate(usegmt=True)
    to_sign = f"{date}\n/{ACCOUNT}{path}".encode()
    signature = base64.b64encode(hmac.new(ACCOUNT_KEY, to_sign, hashlib.sha256).digest()).decode()
    return {**HEADERS, "x-ms-date": date, "Authorization": f"SharedKeyLite {ACCOUNT}:{signature}"}


def key(i):
    return f"p{i // ROWS_PER_PARTITION:04}", f"r{i % ROWS_PER_PARTITION:04}"


def one_round(port, entities, requests, start):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies = []
    i = start
    try:
        for n in range(requests + requests // 10):
            i = (i + 7919) % entities
            pk, rk = key(i)
            path = f"/{ACCOUNT}/{TABLE}(PartitionKey='{pk}',RowKey='{rk}')"
            headers = signed(path)
            began = time.perf_counter()
            conn.request("GET", path, headers=headers)
            reply = conn.getresponse()
            body = reply.read()
            elapsed = time.perf_counter() - began
            if reply.status != 200:
                sys.exit(f"port {port}: {path} answered {reply.status}: {body[:300]!r}")
            entity = json.loads(body)
            if (entity.get("PartitionKey"), entity.get("RowKey")) != (pk, rk):
                sys.exit(f"port {port}: {path} returned another entity: {body[:300]!r}")
            if n >= requests // 10:  # the first tenth warms up
                latencies.append(elapsed * 1e6)
    finally:
        conn.close()
    latencies.sort()
    return {
        "median": statistics.median(latencies),
        "p90": latencies[int(len(latencies) * 0.9)],
        "mean": statistics.fmean(latencies),
    }


def parse_servers(parser, specs):
    """The `NAME=PORT` arguments as (name, port) pairs (also used by bench-serve-pages.py)."""
    servers = []
    for spec in specs:
        name, _, port = spec.partition("=")
        if not port.isdigit():
            parser.error(f"{spec!r}: want NAME=PORT")
        servers.append((name, int(port)))
    return servers


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=2000, help="measured requests per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("servers", nargs="+", metavar="NAME=PORT")
    args = parser.parse_args()
    servers = parse_servers(parser, args.servers)
    medians = {name: [] for name, _ in servers}
    for r in range(args.rounds):
        for name, port in servers:
            res = one_round(port, args.entities, args.requests, start=r * 104729)
            medians[name].append(res["median"])
            print(f"round {r + 1} {name:>10}: median {res['median']:7.0f} µs  p90 {res['p90']:7.0f} µs  "
                  f"mean {res['mean']:7.0f} µs  ({args.requests} gets)", flush=True)
    first = statistics.median(medians[servers[0][0]])
    for name, _ in servers:
        m = statistics.median(medians[name])
        print(f"{name:>10}: median of round medians {m:7.0f} µs  ({m / first:.2f}× {servers[0][0]})")


if __name__ == "__main__":
    main()
