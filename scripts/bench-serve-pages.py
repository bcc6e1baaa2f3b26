#!/usr/bin/env python3
"""Query pages through `tableq serve`: the latency of page 1 and of page N of one `$filter`
(`GET /<account>/<table>()?$filter=…`, following the continuation tokens), on one keep-alive
HTTP/1.1 connection — whether a page's cost depends on how many pages came before it.

For each server the script first walks the filter's pages up to page N (keeping the tokens
of page N), then measures the servers in alternation (round 1 of each, round 2 of each, …),
each round requesting page 1 and page N alternately; every reply must be 200 with the row
count seen on the walk. Only the standard library (http.client), as bench-serve-get.py;
the client's cost is in every figure, the same for each store.

    scripts/bench-serve-pages.py [--filter F] [--page N] [--requests R] [--rounds K] NAME=PORT ...

e.g. `scripts/bench-serve-pages.py --filter "Age lt 10" --page 50 durable=10002 pg=10003`.
Prints, per server and round, the median latency of page 1 and of page N in milliseconds,
then the medians over the rounds and each server's ratio to the first one.
"""

import argparse
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from importlib import import_module  # noqa: E402

get = import_module("bench-serve-get")


def page(conn, table, query, token):
    """One page: (rows, next token or None, seconds)."""
    path = f"/{get.ACCOUNT}/{table}()"
    params = {"$filter": query}
    if token:
        params["NextPartitionKey"], params["NextRowKey"] = token
    url = path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    headers = get.signed(path)
    began = time.perf_counter()
    conn.request("GET", url, headers=headers)
    reply = conn.getresponse()
    body = reply.read()
    elapsed = time.perf_counter() - began
    if reply.status != 200:
        sys.exit(f"{url} answered {reply.status}: {body[:300]!r}")
    rows = body.count(b'"PartitionKey"')
    npk = reply.getheader("x-ms-continuation-NextPartitionKey")
    nrk = reply.getheader("x-ms-continuation-NextRowKey")
    return rows, ((npk, nrk or "") if npk else None), elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default="bench")
    parser.add_argument("--filter", default="Age lt 10")
    parser.add_argument("--page", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20, help="requests of each page per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("servers", nargs="+", metavar="NAME=PORT")
    args = parser.parse_args()
    servers = get.parse_servers(parser, args.servers)
    walked = {}
    for name, port in servers:
        conn = get.http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        token, counts, tokens = None, [], [None]
        for n in range(args.page):
            rows, token, _ = page(conn, args.table, args.filter, token)
            counts.append(rows)
            if token is None and n + 1 < args.page:
                sys.exit(f"{name}: the filter has only {n + 1} pages")
            tokens.append(token)
        conn.close()
        walked[name] = (tokens[args.page - 1], counts[0], counts[args.page - 1])
        print(f"{name}: page 1 has {counts[0]} rows, page {args.page} has {counts[-1]} rows "
              f"(starts at {tokens[args.page - 1]})", flush=True)
    medians = {name: ([], []) for name, _ in servers}
    for r in range(args.rounds):
        for name, port in servers:
            token, rows1, rowsn = walked[name]
            conn = get.http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            first, nth = [], []
            for _ in range(args.requests):
                rows, _, t = page(conn, args.table, args.filter, None)
                assert rows == rows1, (name, rows, rows1)
                first.append(t * 1e3)
                rows, _, t = page(conn, args.table, args.filter, token)
                assert rows == rowsn, (name, rows, rowsn)
                nth.append(t * 1e3)
            conn.close()
            a, b = statistics.median(first), statistics.median(nth)
            medians[name][0].append(a)
            medians[name][1].append(b)
            print(f"round {r + 1} {name:>10}: page 1 {a:8.2f} ms  page {args.page} {b:8.2f} ms", flush=True)
    base = [statistics.median(m) for m in medians[servers[0][0]]]
    for name, _ in servers:
        a, b = (statistics.median(m) for m in medians[name])
        print(f"{name:>10}: page 1 {a:8.2f} ms ({a / base[0]:.1f}× {servers[0][0]})  "
              f"page {args.page} {b:8.2f} ms ({b / base[1]:.1f}×)  page {args.page} / page 1 = {b / a:.2f}")


if __name__ == "__main__":
    main()
