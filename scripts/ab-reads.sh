#!/usr/bin/env bash
# A/B of the read paths of two builds, alternating runs so both see the same machine: the
# ordered store's random reads, seeks and full scans on one store whose data is larger than
# the block cache (`cairn bench ordered --use-existing-db`, one process per benchmark:
# ops per wall-clock second, and as `NAME/cpu` ops per CPU-second of the whole process,
# which a machine shared with other work disturbs less), and the constant store's lookups
# in compressed logs (`cairn-bench --peers cairn`, lookups per CPU-second). Prints one line
# per run and workload, then the median per binary with B/A.
#
#   scripts/ab-reads.sh OLD/ NEW/        # directories holding `cairn` and `cairn-bench`
#   RUNS=5 CACHES="8388608" HASH_SIZES="10000000" scripts/ab-reads.sh A B
#   HASH_SIZES="" scripts/ab-reads.sh A B                  # the ordered store only
#
# Build each side with `cargo build --release --locked -p cairn-cli -p cairn-bench` and copy
# target/release/{cairn,cairn-bench} aside. The ordered store (1M keys: fillrandom, then
# overwrite; 100-byte values that compress to half, about 116 MB decoded) is built once, by
# A, and read by both. CACHES are block-cache sizes in bytes (default 8 MiB and 64 MiB).
# Needs /usr/bin/time (Debian's package `time`).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 <dir of A's binaries> <dir of B's binaries>" >&2; exit 2; }
a=$1
b=$2
runs=${RUNS:-3}
caches=${CACHES:-"8388608 67108864"}
benches=${BENCHES:-readrandom,seekrandom,readseq}
hash_sizes=${HASH_SIZES-"1000000 10000000"}   # HASH_SIZES="" skips the constant store

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
store=$work/ordered
"$a/cairn" bench ordered --num 1000000 --benchmarks fillrandom,overwrite --dir "$store" >/dev/null

ordered() { # bin cache -> "benchmark ops/s" and "benchmark/cpu ops/CPU-s" lines
    for bench in ${benches//,/ }; do
        /usr/bin/time -f "cpu %U %S" -o "$work/time" "$1/cairn" bench ordered --num 1000000 \
            --reads 1000000 --use-existing-db --dir "$store" --cache-size "$2" \
            --benchmarks "$bench" --json >"$work/out" 2>/dev/null
        sed -n 's/.*"benchmark":"\([a-z]*\)".*"ops":\([0-9]*\),"ops_per_sec":\([0-9.]*\).*/\1 \3\n\1\/cpu \2/p' "$work/out" |
            awk -v t="$(awk '$1 == "cpu" {print $2 + $3}' "$work/time")" '
                /\/cpu/ {printf "%s %.0f\n", $1, $2 / t; next} {print}'
    done
}

constant() { # bin entries -> "variant lookups/cpu-s" lines
    rm -rf "$work/constant"
    "$1/cairn-bench" --peers cairn --sizes "$2" --compressions snappy:1024,zstd:4096 \
        --dir "$work/constant" --json 2>/dev/null |
        tr -d ' \n' | sed 's/},{/}\n{/g' | awk 1 |
        sed -n 's/.*"variant":"\([^"]*\)".*"lookups_per_cpu_s":\([0-9.]*\).*/\1 \2/p'
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

results=$work/results
for i in $(seq 1 "$runs"); do
    for side in A B; do
        bin=$a
        [ "$side" = B ] && bin=$b
        sync
        for cache in $caches; do
            ordered "$bin" "$cache" | while read -r w v; do
                echo "ordered cache=$cache $w $side $v"
            done
        done
        for n in $hash_sizes; do
            constant "$bin" "$n" | while read -r w v; do
                echo "constant n=$n $w $side $v"
            done
        done
    done | tee -a "$results" | sed "s/^/run $i: /"
done

cut -d' ' -f1-3 "$results" | sort -u | while read -r store_kind size workload; do
    pick() { awk -v k="$store_kind $size $workload" -v s="$1" '$1" "$2" "$3 == k && $4 == s {print $5}' "$results" | median; }
    ma=$(pick A)
    mb=$(pick B)
    echo "$store_kind $size $workload median: A $ma, B $mb, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.3f", b/a}')"
done
