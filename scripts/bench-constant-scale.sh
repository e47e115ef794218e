#!/usr/bin/env bash
# The constant store at scale (default 100M entries, uncompressed, 16-byte keys, 100-byte
# values): build time, CPU and peak memory of the build, and lookups per CPU second, the
# reference Sparkey C library against libcairn's own C API, on the same files.
#
# Usage: scripts/bench-constant-scale.sh REF_PREFIX
#   REF_PREFIX  install prefix of the reference library, built from spotify/sparkey with
#               crates/libsparkey/bench/build-reference.sh SRC REF_PREFIX.
# Environment: N (entries, default 100000000), LOOKUPS (default 5000000), ROUNDS (default
# 2), BENCH_DIR (where files go; default a temporary directory, removed at exit).
#
# Only one log and index exist at a time (about 13.9 GB at 100M entries): the reference
# writes its pair, both libraries look keys up in it (single lookups, and libcairn's
# get_many 1,024 keys at a time), it is deleted; then libcairn writes its pair and the same
# lookups run on it. Peak memory is /usr/bin/time's maximum resident set size, which
# counts the pages of the mapped log the index build reads. The page cache is warmed (the
# files are read once) before the lookups. Rates per CPU second; wall-clock figures are
# printed too.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:?usage: scripts/bench-constant-scale.sh REF_PREFIX}
N=${N:-100000000}
LOOKUPS=${LOOKUPS:-5000000}
ROUNDS=${ROUNDS:-2}
target=${CARGO_TARGET_DIR:-target}
[ -e "$ref/lib/libsparkey.so" ] || { echo "bench-constant-scale: no reference library at $ref" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench-constant-scale: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

cargo build --release --locked -q -p cairn-ffi
if [ -n "${BENCH_DIR:-}" ]; then
    work=$BENCH_DIR
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/libcairn"
cp "$target/release/libcairn.so" "$work/libcairn/libcairn.so.0"
ln -sf libcairn.so.0 "$work/libcairn/libcairn.so"
cc -O2 -std=c99 -Icrates/ffi/include crates/ffi/bench/hash_bench.c -L"$work/libcairn" -lcairn \
    -Wl,-rpath,"$work/libcairn" -o "$work/bench-libcairn"
cc -O2 -std=c99 -I"$ref/include" crates/libsparkey/bench/sparkey_bench.c -L"$ref/lib" -lsparkey \
    -Wl,-rpath,"$ref/lib" -o "$work/bench-reference"

# build LIB: writes LIB's pair of N entries; prints its op lines and the process's totals.
build() {
    local lib=$1
    /usr/bin/time -v "$work/bench-$lib" write "$work/$lib.spl" "$N" none 2> "$work/$lib.time"
    awk -F': ' -v lib="$lib" '
        /User time/ { user = $2 } /System time/ { sys = $2 } /Elapsed/ { wall = $2 }
        /Maximum resident/ { rss = $2 }
        END { printf "build %s: wall %s, cpu %.1f s (user %s + sys %s), peak RSS %.0f MiB\n",
              lib, wall, user + sys, user, sys, rss / 1024 }' "$work/$lib.time"
}

# lookups LIB: every reader on LIB's files, ROUNDS times.
lookups() {
    local files=$1
    cat "$work/$files.spl" "$work/$files.spi" > /dev/null
    for round in $(seq "$ROUNDS"); do
        echo "-- $files files, round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "reference: $("$work/bench-reference" read "$work/$files.spl" "$N" "$LOOKUPS")"
        echo "libcairn:  $("$work/bench-libcairn" read "$work/$files.spl" "$N" "$LOOKUPS")"
        echo "libcairn:  $("$work/bench-libcairn" readmany "$work/$files.spl" "$N" "$LOOKUPS")"
    done
    rm -f "$work/$files.spl" "$work/$files.spi"
}

echo "N=$N entries, $LOOKUPS lookups per run, load $(cut -d' ' -f1-3 /proc/loadavg)"
build reference
lookups reference
build libcairn
lookups libcairn
