#!/bin/bash
# A/B of full scans between Cairn binaries on one existing store.
#
#   scripts/ab-scans.sh ROUNDS DB BINARY...
#
# DB is a store filled once beforehand, e.g.
#   target/release/cairn bench ordered --dir /tmp/scan-db --num 1000000 --benchmarks fillrandom
# Each round runs every BINARY in turn (alternated, so drift in the machine's speed hits
# them alike) with `cairn bench ordered --use-existing-db`: four readseq and three
# readreverse passes, of which the first readseq and readreverse warm the process and are
# dropped. Prints, per binary, the median and range of the warm passes, entries/s.
# Environment: THREADS (default 1), OPTIONS (default "--mmap-reads --compression none").
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n 2,12p "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
rounds=$1
db=$2
shift 2
threads=${THREADS:-1}
options=${OPTIONS:---mmap-reads --compression none}
declare -A seq rev
for _ in $(seq "$rounds"); do
    for bin in "$@"; do
        # shellcheck disable=SC2086 # options are words
        out=$("$bin" bench ordered --dir "$db" --use-existing-db --num 1000000 \
            --threads "$threads" $options \
            --benchmarks readseq,readseq,readseq,readseq,readreverse,readreverse,readreverse \
            2>&1 | grep '^read')
        seq[$bin]+=" $(echo "$out" | grep readseq | tail -n 3 | awk '{print $5}' | tr '\n' ' ')"
        rev[$bin]+=" $(echo "$out" | grep readreverse | tail -n 2 | awk '{print $5}' | tr '\n' ' ')"
    done
done
median() {
    tr ' ' '\n' | grep . | sort -n |
        awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)], "(" a[1] "-" a[NR] ")"}'
}
for bin in "$@"; do
    echo "$bin readseq $(echo "${seq[$bin]}" | median) readreverse $(echo "${rev[$bin]}" | median)"
done
