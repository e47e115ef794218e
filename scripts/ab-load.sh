#!/usr/bin/env bash
# A/B of two `cairn` binaries under `cairn load`, alternating runs so both see the same
# machine: for each durability mode, RUNS runs of each binary, A then B, each on a fresh
# temporary store. Prints one line per run and the median ops/s per binary and mode.
#
#   scripts/ab-load.sh OLD/cairn NEW/cairn                 # sync, periodic:1000, buffered
#   RUNS=5 SECONDS_PER_RUN=5 MODES="sync none" scripts/ab-load.sh A B
#
# Extra `cairn load` flags go in LOAD_ARGS (default: 2 threads, 20% writes).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 <cairn A> <cairn B>" >&2; exit 2; }
a=$1
b=$2
runs=${RUNS:-3}
secs=${SECONDS_PER_RUN:-5}
modes=${MODES:-"sync periodic:1000 buffered"}
load_args=${LOAD_ARGS:-"--threads 2 --mix read=80,write=20,delete=0"}

ops() { # binary mode -> ops/s of one run
    # shellcheck disable=SC2086
    "$1" load --durability "$2" --duration "${secs}s" $load_args --json |
        sed -n 's/.*"total_ops_per_sec":\([0-9.]*\).*/\1/p' | head -n 1
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

for mode in $modes; do
    ra=()
    rb=()
    for i in $(seq 1 "$runs"); do
        sync
        x=$(ops "$a" "$mode")
        sync
        y=$(ops "$b" "$mode")
        echo "$mode run $i: A $x ops/s, B $y ops/s"
        ra+=("$x")
        rb+=("$y")
    done
    ma=$(printf '%s\n' "${ra[@]}" | median)
    mb=$(printf '%s\n' "${rb[@]}" | median)
    echo "$mode median: A $ma, B $mb, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.3f", b/a}')"
done
