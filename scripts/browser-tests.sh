#!/usr/bin/env bash
# Runs the browser tests (tests/browser, node --test with playwright-core) against
# `tableq serve`: headless Chromium from Debian's `chromium` package at /usr/bin/chromium
# (Playwright's own browser downloads are not used). When it is missing, the script installs
# it with apt-get where it can (as root, with apt-get on the PATH); where it cannot, it prints
# `SKIPPED: <reason>` and exits 0 — except in CI (`CI` set to anything but `false` or `0`,
# as `.ci/run` is run with CI=true), where a browser test that cannot run is a failure: it
# prints `FAILED: the browser tests cannot run in CI: <reason>` and exits 1.
#
# The script installs playwright-core into tests/browser/node_modules (npm ci, from the
# pinned package-lock.json; reused while the lock file and node are unchanged), starts
# `tableq serve --in-memory` on a free loopback port (authorization on), runs the tests with
# TABLEQ_BROWSER_ENDPOINT and TABLEQ_BROWSER_SAS (an account SAS the caller passes in the
# environment), and stops the server by the pid it started.
#
# Usage: scripts/browser-tests.sh [TEST...]   (files under tests/browser; default test/*.test.mjs)
# Environment:
#   TABLEQ_BIN          the tableq binary (default: cargo build --bin tableq, target/debug/tableq)
#   TABLEQ_BROWSER_SAS  an account SAS token of devstoreaccount1 (srt=sco, sp=rwdlacu), required
#   TABLEQ_CHROMIUM     the browser (default /usr/bin/chromium)
#   CI                  set (and not `false`/`0`): a skip is a failure
# Exit status: 0 passed (or skipped outside CI), 1 a test failed or (in CI) could not run,
# 2 usage or setup error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$repo/tests/browser"
helper="$repo/tests/sdk/python/tableq_server.py"
chromium=${TABLEQ_CHROMIUM:-/usr/bin/chromium}

say() { printf 'browser-tests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }
in_ci() { case "${CI:-}" in "" | false | 0) return 1 ;; *) return 0 ;; esac; }
skip() {
    if in_ci; then
        printf 'FAILED: the browser tests cannot run in CI (CI=%s): %s\n' "$CI" "$*"
        exit 1
    fi
    printf 'SKIPPED: %s (the browser tests did not run; in CI this is a failure)\n' "$*"
    exit 0
}

[ -n "${TABLEQ_BROWSER_SAS:-}" ] || die "TABLEQ_BROWSER_SAS is not set (tests/browser_cors.rs sets it)"
command -v node >/dev/null || skip "node is not installed (the browser tests need Node.js >= 20)"
command -v npm >/dev/null || skip "npm is not installed"
command -v python3 >/dev/null || skip "python3 is not installed (used to find a free port)"

# --- the browser ----------------------------------------------------------------------
if [ ! -x "$chromium" ]; then
    if [ "$chromium" != /usr/bin/chromium ]; then
        skip "TABLEQ_CHROMIUM=$chromium is not an executable file"
    fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        skip "$chromium is missing and cannot be installed here (needs root and apt-get: apt-get install chromium)"
    fi
    say "installing Debian's chromium with apt-get (once per machine)"
    exec 8>"${TMPDIR:-/tmp}/tableq-browser-tests.apt.lock"
    flock 8 || die "cannot lock ${TMPDIR:-/tmp}/tableq-browser-tests.apt.lock"
    if [ ! -x "$chromium" ]; then
        if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
            { apt-get update >/dev/null 2>&1 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; }; }; then
            skip "apt-get could not install chromium (no package source reachable?)"
        fi
    fi
    flock -u 8
    [ -x "$chromium" ] || skip "apt-get installed chromium, but $chromium does not exist"
fi

# --- playwright-core ------------------------------------------------------------------
want=$( { cat "$dir/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)
exec 9>"${TMPDIR:-/tmp}/tableq-browser-tests.npm.lock"
flock 9 || die "cannot lock ${TMPDIR:-/tmp}/tableq-browser-tests.npm.lock"
if [ "$(cat "$dir/node_modules/.tableq-stamp" 2>/dev/null)" != "$want" ]; then
    say "installing playwright-core into tests/browser/node_modules (npm ci, package-lock.json)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed in tests/browser"
    printf '%s\n' "$want" >"$dir/node_modules/.tableq-stamp"
fi
flock -u 9

# --- the server -----------------------------------------------------------------------
bin=${TABLEQ_BIN:-}
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --quiet --bin tableq) || die "cargo build failed"
    bin="${CARGO_TARGET_DIR:-$repo/target}/debug/tableq"
fi
[ -x "$bin" ] || die "TABLEQ_BIN=$bin is not an executable file"

work=$(mktemp -d "${TMPDIR:-/tmp}/tableq-browser-tests.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    [ -z "$server_pid" ] || wait "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=$(python3 "$helper" free-port)
"$bin" serve --host 127.0.0.1 --port "$port" --in-memory >"$work/server.log" 2>&1 &
server_pid=$!
if ! python3 "$helper" wait "$port" "$server_pid" 60; then
    tail -n 40 "$work/server.log" >&2 || true
    die "tableq serve did not start"
fi

export TABLEQ_BROWSER_ENDPOINT="http://127.0.0.1:$port/devstoreaccount1"
export TABLEQ_CHROMIUM="$chromium"
say "running tests/browser against $TABLEQ_BROWSER_ENDPOINT with $chromium"
if [ $# -eq 0 ]; then set -- test/*.test.mjs; fi
if (cd "$dir" && node --test --test-reporter=spec --test-timeout=120000 "$@"); then
    say "browser tests passed"
else
    status=$?
    tail -n 40 "$work/server.log" >&2 || true
    say "FAILED (node --test exit status $status)"
    exit 1
fi
