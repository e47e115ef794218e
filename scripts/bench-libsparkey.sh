#!/usr/bin/env bash
# Lookups/s and puts/s of the constant store from C: the reference Sparkey C library,
# Cairn's drop-in libsparkey.so (one benchmark program, crates/libsparkey/bench/
# sparkey_bench.c, linked once per library) and libcairn's own C API (the same loops in
# crates/ffi/bench/hash_bench.c, reading with cairn_hash_reader_get_into), on the same
# files.
#
# Usage: scripts/bench-libsparkey.sh [REF_PREFIX]
#   REF_PREFIX  install prefix of the reference library (REF_PREFIX/lib/libsparkey.so,
#               REF_PREFIX/include/sparkey/sparkey.h), e.g. built from spotify/sparkey with
#               crates/libsparkey/bench/build-reference.sh SRC REF_PREFIX. When absent or
#               missing, only Cairn is measured.
# Environment: N (entries, default 1000000), LOOKUPS (default 1000000), REPEAT (best of,
# default 3), BENCH_DIR (where files go; default a temporary directory, removed at exit).
#
# For each compression (none, snappy): each library writes its own log of N entries
# (16-byte keys, 100-byte values; puts/s includes close) and indexes it; then each library
# runs LOOKUPS random lookups on the reference-written files and on the files Cairn's
# libsparkey wrote, and libcairn runs the same keys in batches of 1,024 through
# cairn_hash_reader_get_many (a malloc'ed copy per value) and get_many_into (values packed
# into one reused buffer). libcairn's single and batched lookups run once more with both
# files in memory (ReadOptions::pin_index and load_log through cairn_hash_reader_open_with:
# the index locked, the log copied into huge-page memory at open, which is not timed); the
# reference has no such mode. Prints every figure and the ratios to the reference. Rates are
# per CPU second of the process (user + system), best of REPEAT runs: on a shared machine
# wall-clock rates vary by ±25% between runs, CPU-time rates much less.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:-}
N=${N:-1000000}
LOOKUPS=${LOOKUPS:-1000000}
REPEAT=${REPEAT:-3}
target=${CARGO_TARGET_DIR:-target}

cargo build --release --locked -q -p cairn-libsparkey -p cairn-ffi
if [ -n "${BENCH_DIR:-}" ]; then
    work=$BENCH_DIR
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/cairn-lib"
cp "$target/release/libsparkey.so" "$work/cairn-lib/libsparkey.so.0"
ln -sf libsparkey.so.0 "$work/cairn-lib/libsparkey.so"

bench_src=crates/libsparkey/bench/sparkey_bench.c
cc -O2 -std=c99 -Icrates/libsparkey/include "$bench_src" -L"$work/cairn-lib" -lsparkey \
    -Wl,-rpath,"$work/cairn-lib" -o "$work/bench-cairn"
mkdir -p "$work/libcairn"
cp "$target/release/libcairn.so" "$work/libcairn/libcairn.so.0"
ln -sf libcairn.so.0 "$work/libcairn/libcairn.so"
cc -O2 -std=c99 -Icrates/ffi/include crates/ffi/bench/hash_bench.c -L"$work/libcairn" -lcairn \
    -Wl,-rpath,"$work/libcairn" -o "$work/bench-libcairn"
libs=(cairn libcairn)
if [ -n "$ref" ] && [ -e "$ref/lib/libsparkey.so" ]; then
    cc -O2 -std=c99 -I"$ref/include" "$bench_src" -L"$ref/lib" -lsparkey \
        -Wl,-rpath,"$ref/lib" -o "$work/bench-reference"
    libs=(reference cairn libcairn)
else
    echo "bench-libsparkey: no reference library at '${ref:-<none>}': measuring Cairn only" >&2
fi

# best RATE_OF_OP CMD...: the highest per_second of op $1 over REPEAT runs of CMD.
best() {
    local op=$1 best=0 rate
    shift
    for _ in $(seq "$REPEAT"); do
        rate=$("$@" | awk -v op="$op" '$1 == "op=" op { sub("per_cpu_second=", "", $6); print $6 }')
        best=$(awk -v a="$best" -v b="$rate" 'BEGIN { print (b > a) ? b : a }')
    done
    echo "$best"
}

# in_memory CMD...: CMD with libcairn's reader opened with both files in memory.
in_memory() { CAIRN_BENCH_PIN_INDEX=1 CAIRN_BENCH_LOAD_LOG=1 "$@"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else print "-" }'; }

has_ref=0
[ "${libs[0]}" = reference ] && has_ref=1
# row COMPRESSION MEASUREMENT REF CAIRN LIBCAIRN
row() {
    printf '%-7s %-27s %12s %12s %12s %8s %8s\n' "$1" "$2" "${3:--}" "$4" "$5" \
        "$(ratio "$4" "${3:-0}")" "$(ratio "$5" "${3:-0}")"
}
printf '%-7s %-27s %12s %12s %12s %8s %8s\n' compr. measurement reference libsparkey libcairn \
    'lsp/ref' 'lc/ref'
for comp in none snappy; do
    declare -A put=() get_ref=() get_cairn=()
    for lib in "${libs[@]}"; do
        put[$lib]=$(best put "$work/bench-$lib" write "$work/$lib-$comp.spl" "$N" "$comp")
    done
    for lib in "${libs[@]}"; do
        if [ "$has_ref" = 1 ]; then
            get_ref[$lib]=$(best get "$work/bench-$lib" read "$work/reference-$comp.spl" "$N" "$LOOKUPS")
        fi
        get_cairn[$lib]=$(best get "$work/bench-$lib" read "$work/cairn-$comp.spl" "$N" "$LOOKUPS")
    done
    row "$comp" "puts/s ($N)" "${put[reference]:-}" "${put[cairn]}" "${put[libcairn]}"
    if [ "$has_ref" = 1 ]; then
        row "$comp" "lookups/s, reference files" "${get_ref[reference]}" "${get_ref[cairn]}" "${get_ref[libcairn]}"
    fi
    row "$comp" "lookups/s, Cairn files" "${get_cairn[reference]:-}" "${get_cairn[cairn]}" "${get_cairn[libcairn]}"
    # Batches of 1,024 keys through libcairn (the reference has no batched lookup; the
    # ratio is to its single lookups on the same files).
    files=cairn
    [ "$has_ref" = 1 ] && files=reference
    many=$(best get_many "$work/bench-libcairn" readmany "$work/$files-$comp.spl" "$N" "$LOOKUPS")
    many_into=$(best get_many "$work/bench-libcairn" readmanyinto "$work/$files-$comp.spl" "$N" "$LOOKUPS")
    ref_single=${get_ref[reference]:-}
    row "$comp" "get_many/s, $files files" "$ref_single" - "$many"
    row "$comp" "get_many_into/s, $files files" "$ref_single" - "$many_into"
    # Both files in memory (the open, with its load, is not timed).
    mem_single=$(best get in_memory "$work/bench-libcairn" read "$work/$files-$comp.spl" "$N" "$LOOKUPS")
    mem_many=$(best get_many in_memory "$work/bench-libcairn" readmanyinto "$work/$files-$comp.spl" "$N" "$LOOKUPS")
    row "$comp" "in memory: lookups/s" "$ref_single" - "$mem_single"
    row "$comp" "in memory: get_many_into/s" "$ref_single" - "$mem_many"
    unset put get_ref get_cairn
done
echo "(N=$N entries, $LOOKUPS lookups, operations per CPU second, best of $REPEAT;"
echo " libsparkey = Cairn's libsparkey.so, libcairn = cairn_hash_* of libcairn.so; ratios to the reference)"
