#!/usr/bin/env bash
# Lookups/s and puts/s through the Sparkey C API: Cairn's libsparkey.so against the
# reference C library, on the same files, with one benchmark program
# (crates/libsparkey/bench/sparkey_bench.c) linked once per library.
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
# runs LOOKUPS random lookups (hash_get + fill_value) on the reference-written files and on
# the Cairn-written files. Prints every figure and the ratio Cairn / reference. Rates are
# per CPU second of the process (user + system), best of REPEAT runs: on a shared machine
# wall-clock rates vary by ±25% between runs, CPU-time rates much less.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:-}
N=${N:-1000000}
LOOKUPS=${LOOKUPS:-1000000}
REPEAT=${REPEAT:-3}
target=${CARGO_TARGET_DIR:-target}

cargo build --release --locked -q -p cairn-libsparkey
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
libs=(cairn)
if [ -n "$ref" ] && [ -e "$ref/lib/libsparkey.so" ]; then
    cc -O2 -std=c99 -I"$ref/include" "$bench_src" -L"$ref/lib" -lsparkey \
        -Wl,-rpath,"$ref/lib" -o "$work/bench-reference"
    libs=(reference cairn)
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

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

printf '%-8s %-28s %14s %14s %8s\n' compression measurement reference cairn ratio
for comp in none snappy; do
    declare -A put=() get_ref=() get_cairn=()
    for lib in "${libs[@]}"; do
        put[$lib]=$(best put "$work/bench-$lib" write "$work/$lib-$comp.spl" "$N" "$comp")
    done
    for files in "${libs[@]}"; do
        for lib in "${libs[@]}"; do
            rate=$(best get "$work/bench-$lib" read "$work/$files-$comp.spl" "$N" "$LOOKUPS")
            if [ "$files" = reference ]; then get_ref[$lib]=$rate; else get_cairn[$lib]=$rate; fi
        done
    done
    r=${put[reference]:-0}
    printf '%-8s %-28s %14s %14s %8s\n' "$comp" "puts/s ($N)" "$r" "${put[cairn]}" "$(ratio "${put[cairn]}" "$r")"
    if [ "${#libs[@]}" -eq 2 ]; then
        printf '%-8s %-28s %14s %14s %8s\n' "$comp" "lookups/s, reference files" "${get_ref[reference]}" "${get_ref[cairn]}" "$(ratio "${get_ref[cairn]}" "${get_ref[reference]}")"
    fi
    r=${get_cairn[reference]:-0}
    printf '%-8s %-28s %14s %14s %8s\n' "$comp" "lookups/s, Cairn files" "$r" "${get_cairn[cairn]}" "$(ratio "${get_cairn[cairn]}" "$r")"
    unset put get_ref get_cairn
done
echo "(N=$N entries, $LOOKUPS lookups, operations per CPU second, best of $REPEAT; ratio = Cairn / reference)"
