#!/usr/bin/env bash
# sparkey-python 0.3.0 (PyPI's `sparkey-python`, a ctypes binding) run unchanged against
# Cairn's libsparkey.so in a fresh virtualenv: it writes a log with each compression (none,
# snappy, zstd), indexes it, reads and iterates it (sparkey_python_test.py); the files it
# leaves are then checked with Cairn's CLI (`cairn sparkey dump`, `get`, `verify`).
#
# Usage: crates/libsparkey/tests/python/run.sh   (builds what it needs; honours
# CARGO_TARGET_DIR). Needs python3 with venv and network access to PyPI (or a pip
# find-links directory holding sparkey-python and future).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
target=${CARGO_TARGET_DIR:-target}

cargo build --locked -q -p cairn-libsparkey -p cairn-cli
cairn="$target/debug/cairn"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib" "$work/out"
# The binding finds the library with ctypes.util.find_library("sparkey"): through
# LD_LIBRARY_PATH/LIBRARY_PATH it needs libsparkey.so, and loads the SONAME libsparkey.so.0.
cp "$target/debug/libsparkey.so" "$work/lib/libsparkey.so.0"
ln -s libsparkey.so.0 "$work/lib/libsparkey.so"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check sparkey-python==0.3.0
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$work/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
"$work/venv/bin/python" crates/libsparkey/tests/python/sparkey_python_test.py "$work/lib" "$work/out"

for name in none snappy zstd; do
    spi="$work/out/$name.spi" spl="$work/out/$name.spl"
    diff <("$cairn" sparkey dump "$spi" | LC_ALL=C sort) "$work/out/$name.expected"
    diff <("$cairn" sparkey dump --log "$spl") "$work/out/$name.log.expected"
    "$cairn" sparkey verify "$spi" >/dev/null
    [ "$("$cairn" sparkey get "$spi" key-03000 | od -An -c | tr -d ' \n' | head -c 3)" = v3- ]
    status=0
    "$cairn" sparkey get "$spi" key-00001 >/dev/null || status=$?
    [ "$status" -eq 2 ] # deleted: not found
    echo "cairn CLI reads the $name store written by sparkey-python: ok"
done
