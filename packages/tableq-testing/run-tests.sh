#!/usr/bin/env bash
# The tableq-testing package's own test: packs this directory (npm pack), makes a fresh node
# project in a temporary directory (removed at the end), npm-installs the packed package and
# @azure/data-tables there, and runs the example node:test suite (example/test) against the
# tableq binary — under the package's `tableq-run` (the run's server) and with startTableq()
# (a test's own server) — then checks that the run's server is gone.
#
# npm's cache (~/.npm, as scripts/sdk-tests.sh's `npm ci` uses it) is preferred over the
# network: a second run installs offline.
#
# Usage: packages/tableq-testing/run-tests.sh
# Environment: TABLEQ_BIN (the binary; default: `tableq` on PATH).
# Exit status: node --test's; 1 when the run's server outlived the run; 2 for a setup error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { printf 'tableq-testing: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

command -v node >/dev/null || die "node not found (Node.js >= 20)"
command -v npm >/dev/null || die "npm not found"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' ||
    die "node is $(node --version); tableq-testing needs >= 20"
if [ -n "${TABLEQ_BIN:-}" ]; then
    [ -x "$TABLEQ_BIN" ] || die "TABLEQ_BIN=$TABLEQ_BIN is not an executable file"
else
    command -v tableq >/dev/null || die "set TABLEQ_BIN or put tableq on PATH"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tableq-testing.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
npm=(npm --no-audit --no-fund --loglevel=error --prefer-offline)
tarball=$(cd "$work" && "${npm[@]}" pack --silent "$here") || die "npm pack $here failed"
mkdir "$work/project"
cd "$work/project"
printf '{ "name": "example", "private": true, "type": "module" }\n' >package.json
"${npm[@]}" install "$work/$tarball" @azure/data-tables@13.3.2 >/dev/null ||
    die "npm install of the package and @azure/data-tables failed"
[ -f node_modules/tableq-testing/index.js ] && [ ! -L node_modules/tableq-testing ] ||
    die "tableq-testing is not installed as a package in node_modules"
cp -R "$here/example/test" .
say "installed tableq-testing into a fresh node project in $((SECONDS - started)) s"

status=0
TABLEQ_PID_FILE="$work/pid" ./node_modules/.bin/tableq-run node --test --test-reporter=spec \
    --test-timeout=120000 test/ || status=$?
if [ -f "$work/pid" ]; then
    pid=$(cat "$work/pid")
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        say "the run's server (pid $pid) still runs 10 s after the run"
        kill -TERM "$pid" 2>/dev/null || true
        [ "$status" -ne 0 ] || status=1
    fi
else
    say "the suite wrote no pid of the run's server"
    [ "$status" -ne 0 ] || status=1
fi
if [ "$status" -eq 0 ]; then
    say "example suite: passed"
else
    say "example suite: FAILED (status $status)"
fi
exit "$status"
