#!/usr/bin/env bash
# The pytest-tableq package's own test: builds and installs the package from this directory
# into a fresh virtual environment (in a temporary directory, removed at the end), with
# azure-data-tables and pytest (example/requirements.txt), and runs the example suite
# (example/test_example.py) against the tableq binary.
#
# The dependencies' wheels are downloaded once into a wheel cache,
#   ${TABLEQ_FIXTURE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tableq-fixture-tests}/python-<key>,
# keyed by example/requirements.txt and the interpreter's version (as scripts/sdk-tests.sh
# keys its environments), so a later run creates its fresh environment without the network;
# the cache also keeps a small environment whose pip installs into the fresh one (which is
# then made without a pip of its own: ensurepip is most of a venv's creation time).
#
# Usage: packages/pytest-tableq/run-tests.sh [pytest arguments]
# Environment: TABLEQ_BIN (the binary; default: `tableq` on PATH), PYTHON (default python3).
# Exit status: pytest's; 2 for a setup error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
say() { printf 'pytest-tableq: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

command -v "$python" >/dev/null || die "$python not found"
"$python" -c 'import venv, ensurepip' 2>/dev/null ||
    die "$python has no working venv module (on Debian/Ubuntu: apt-get install python3-venv)"
if [ -n "${TABLEQ_BIN:-}" ]; then
    [ -x "$TABLEQ_BIN" ] || die "TABLEQ_BIN=$TABLEQ_BIN is not an executable file"
else
    command -v tableq >/dev/null || die "set TABLEQ_BIN or put tableq on PATH"
fi

# --- the wheel cache ------------------------------------------------------------------
key=$( { cat "$here/example/requirements.txt"; "$python" --version; uname -m; } | sha256sum | cut -c1-16)
cache_root=${TABLEQ_FIXTURE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tableq-fixture-tests}
wheels="$cache_root/python-$key"
mkdir -p "$cache_root"
exec 9>"$cache_root/python.lock"
flock 9 || die "cannot lock $cache_root/python.lock"
if [ ! -f "$wheels/.complete" ]; then
    say "downloading the example's wheels into $wheels (once per requirements.txt and interpreter)"
    rm -rf "$wheels.tmp"
    "$python" -m venv "$wheels.tmp/.pip"
    # `pip --python ENV` (used below) needs pip >= 22.3; older interpreters bundle older ones.
    "$wheels.tmp/.pip/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        'pip>=22.3' || die "pip could not upgrade itself to >= 22.3"
    "$wheels.tmp/.pip/bin/python" -m pip download --quiet --disable-pip-version-check --no-input \
        --dest "$wheels.tmp" -r "$here/example/requirements.txt" 'setuptools>=61' ||
        die "pip could not download example/requirements.txt"
    rm -rf "$wheels"
    touch "$wheels.tmp/.complete"
    mv "$wheels.tmp" "$wheels"
fi
flock -u 9

# --- a fresh environment --------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/pytest-tableq.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
"$python" -m venv --without-pip "$work/venv"
# Built from a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
mkdir "$work/src"
cp -R "$here/pyproject.toml" "$here/README.md" "$here/src" "$work/src/"
# The package is built from source here (setuptools from the cache, in pip's isolated build
# environment) and installed like any user installs it; nothing comes from the network.
"$wheels/.pip/bin/python" -m pip --python "$work/venv/bin/python" install --quiet \
    --disable-pip-version-check --no-input --no-index --find-links "$wheels" -r "$here/example/requirements.txt" "$work/src" ||
    die "pip could not install the package and example/requirements.txt from $wheels"
installed=$("$work/venv/bin/python" -c 'import pytest_tableq, os; print(os.path.dirname(pytest_tableq.__file__))')
case "$installed" in
    "$work/venv/"*) ;;
    *) die "pytest_tableq was imported from $installed, not from the fresh environment" ;;
esac
say "installed pytest-tableq into a fresh environment in $((SECONDS - started)) s"

# --- the example suite ----------------------------------------------------------------
# Copied out of the source tree so that only the installed package can provide the plugin.
cp "$here/example/test_example.py" "$work/"
cd "$work"
status=0
PYTHONDONTWRITEBYTECODE=1 "$work/venv/bin/python" -m pytest -p no:cacheprovider -v \
    --rootdir "$work" "$work/test_example.py" "$@" || status=$?
if [ "$status" -eq 0 ]; then
    say "example suite: passed"
else
    say "example suite: FAILED (pytest exit status $status)"
fi
exit "$status"
