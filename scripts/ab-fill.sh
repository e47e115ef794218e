#!/usr/bin/env bash
# A/B of the ordered store's write path across `cairn` binaries, alternating runs so every
# binary sees the same machine: `cairn bench ordered` fillrandom then overwrite (1M keys,
# one put per write, `buffered` durability, no wait for compactions at the end) on a fresh
# temporary store, printing ops/s of both and the process's CPU time (user + system),
# which a machine shared with other work disturbs less than wall-clock rates.
#
#   scripts/ab-fill.sh OLD/cairn NEW/cairn [MORE/cairn ...]
#   RUNS=5 NUM=2000000 scripts/ab-fill.sh A B
#
# Needs /usr/bin/time (Debian's package `time`).
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 <cairn A> <cairn B> [<cairn C> ...]" >&2; exit 2; }
runs=${RUNS:-3}
num=${NUM:-1000000}
for r in $(seq 1 "$runs"); do
    for bin in "$@"; do
        dir=$(mktemp -d)
        out=$( { /usr/bin/time -f "CPU %U %S" "$bin" bench ordered --num "$num" \
            --benchmarks fillrandom,overwrite --durability buffered --batch-size 1 \
            --dir "$dir/store" --no-compact-wait; } 2>&1 )
        rm -rf "$dir"
        fill=$(echo "$out" | sed -n 's/^fillrandom .* \([0-9]*\) ops\/sec.*/\1/p' | head -n 1)
        over=$(echo "$out" | sed -n 's/^overwrite .* \([0-9]*\) ops\/sec.*/\1/p' | head -n 1)
        cpu=$(echo "$out" | awk '/^CPU/ { printf "%.2f", $2 + $3 }')
        echo "run $r $bin: fillrandom $fill ops/s, overwrite $over ops/s, cpu ${cpu} s"
    done
done
