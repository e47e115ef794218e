#!/usr/bin/env bash
# Peak resident memory against `Options::memory_budget`: for each budget, `cairn bench
# ordered --memory-budget` (fillrandom, then readrandom) and RocksDB's db_bench with the
# closest thing it has to one budget (a block cache of the budget's size that the
# memtables are charged to and that holds the index and filter blocks), one after the
# other; then Cairn and db_bench without a budget (their defaults: Cairn a 64 MiB block
# cache and 16 MiB memtables, db_bench an 8 MiB cache and 64 MiB memtables). Prints, per
# run, the peak RSS (`/usr/bin/time -v`, "Maximum resident set size"), the rates, and
# for Cairn each share of the budget as Stats reports it after the reads.
#
#   scripts/bench-memory.sh                                # 2M keys, 500k reads
#   NUM=10000000 READS=1000000 BUDGETS="268435456" scripts/bench-memory.sh
#   ROCKSDB=0 scripts/bench-memory.sh                      # Cairn alone
#
# Workload as scripts/bench-ordered.sh: 16-byte keys, 100-byte values (compressible to
# half), LZ4, bloom filters of 10 bits per key, one thread, writes without fsync.
set -euo pipefail

num="${NUM:-2000000}"
reads="${READS:-500000}"
budgets="${BUDGETS:-67108864 268435456 1073741824}"
with_rocksdb="${ROCKSDB:-1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${DIR:-$(mktemp -d /tmp/cairn-memory.XXXXXX)}"
mkdir -p "$dir"
trap 'rm -rf "$dir/cairn" "$dir/rocksdb"' EXIT

target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -q -p cairn-cli --manifest-path "$root/Cargo.toml"
cairn="$target/release/cairn"

peak_kib() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }

run_cairn() { # budget ("" for none)
    local budget=$1 extra=()
    [ -n "$budget" ] && extra=(--memory-budget "$budget")
    rm -rf "$dir/cairn"
    /usr/bin/time -v -o "$dir/time.out" "$cairn" bench ordered --num "$num" --reads "$reads" \
        --benchmarks fillrandom,readrandom --key-size 16 --value-size 100 --compression lz4 \
        --durability buffered --dir "$dir/cairn" "${extra[@]}" >"$dir/cairn.out"
    grep -E '^(fillrandom|readrandom) |memory:' "$dir/cairn.out"
    echo "  cairn peak RSS: $(( $(peak_kib "$dir/time.out") / 1024 )) MiB (budget ${budget:-none})"
}

run_rocksdb() { # budget ("" for db_bench's defaults)
    local budget=$1 extra=()
    if [ -n "$budget" ]; then
        extra=(--cache_size="$budget" --cost_write_buffer_to_cache=true
            --db_write_buffer_size=$((budget / 4)) --cache_index_and_filter_blocks=true)
    fi
    rm -rf "$dir/rocksdb"
    /usr/bin/time -v -o "$dir/time.out" db_bench --benchmarks=fillrandom,readrandom \
        --num="$num" --reads="$reads" --key_size=16 --value_size=100 --compression_type=lz4 \
        --bloom_bits=10 --threads=1 --sync=0 --db="$dir/rocksdb" "${extra[@]}" >"$dir/rocksdb.out" 2>&1
    grep -E '^(fillrandom|readrandom) ' "$dir/rocksdb.out"
    echo "  rocksdb peak RSS: $(( $(peak_kib "$dir/time.out") / 1024 )) MiB (budget ${budget:-none})"
}

echo "== $num keys, $reads reads; cairn $(git -C "$root" rev-parse --short HEAD), db_bench $(dpkg-query -W -f '${Version}' rocksdb-tools 2>/dev/null || echo unknown); load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in $budgets; do
    run_cairn "$b"
    [ "$with_rocksdb" = 1 ] && run_rocksdb "$b"
done
run_cairn ""
[ "$with_rocksdb" = 1 ] && run_rocksdb ""
exit 0
