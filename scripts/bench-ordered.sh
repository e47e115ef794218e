#!/usr/bin/env bash
# Runs `cairn bench ordered` and RocksDB's own db_bench one after the other on the same
# machine, with the same workload, and prints each benchmark's ops/sec for both and the
# ratio Cairn / RocksDB.
#
#   scripts/bench-ordered.sh                  # 1M keys
#   NUM=10000000 READS=1000000 scripts/bench-ordered.sh   # 10M keys, 1M operations per read benchmark
#   BENCHMARKS=fillrandom,readrandom scripts/bench-ordered.sh
#
# Workload: 16-byte keys, 100-byte values (compressible to half), LZ4, a 64 MiB block
# cache, bloom filters of 10 bits per key, one thread, writes handed to the OS without
# fsync (Cairn `--durability buffered`, db_bench `--sync=0` with its WAL on): db_bench's
# defaults. RocksDB comes from Debian's `rocksdb-tools` (installed here if missing).
# Stores go to $DIR (default: a temporary directory on the same file system as /tmp).
set -euo pipefail

num="${NUM:-1000000}"
reads="${READS:-$num}"
benchmarks="${BENCHMARKS:-fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,seekrandom,deleterandom}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${DIR:-$(mktemp -d /tmp/cairn-vs-rocksdb.XXXXXX)}"
mkdir -p "$dir"
trap 'rm -rf "$dir/cairn" "$dir/rocksdb"' EXIT

if ! command -v db_bench >/dev/null 2>&1; then
    echo "bench-ordered: installing rocksdb-tools (db_bench)" >&2
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq rocksdb-tools >/dev/null
fi

cargo build --release -q -p cairn-cli --manifest-path "$root/Cargo.toml"
cairn="$root/target/release/cairn"

echo "== Cairn ($(git -C "$root" rev-parse --short HEAD)), $num keys"
"$cairn" bench ordered --num "$num" --reads "$reads" --benchmarks "$benchmarks" --key-size 16 --value-size 100 \
    --compression lz4 --cache-size 67108864 --durability buffered --dir "$dir/cairn" \
    | tee "$dir/cairn.out"

echo "== RocksDB db_bench ($(dpkg-query -W -f '${Version}' rocksdb-tools 2>/dev/null || echo unknown)), $num keys"
db_bench --benchmarks="$benchmarks" --num="$num" --reads="$reads" --key_size=16 --value_size=100 \
    --compression_type=lz4 --cache_size=67108864 --bloom_bits=10 --sync=0 \
    --threads=1 --compression_ratio=0.5 --db="$dir/rocksdb" --statistics=0 \
    --histogram=1 2>&1 | tee "$dir/rocksdb.out"

echo
echo "== ops/sec, Cairn / RocksDB (same machine, run back to back)"
printf '%-14s %14s %14s %8s\n' benchmark cairn rocksdb ratio
IFS=',' read -r -a names <<<"$benchmarks"
for b in "${names[@]}"; do
    c=$(awk -v b="$b" '$1 == b && $2 == ":" { for (i = 3; i <= NF; i++) if ($(i) == "ops/sec;" || $(i) == "ops/sec") { print $(i-1); exit } }' "$dir/cairn.out")
    r=$(awk -v b="$b" '$1 == b && $2 == ":" { for (i = 3; i <= NF; i++) if ($(i) == "ops/sec;" || $(i) == "ops/sec") { print $(i-1); exit } }' "$dir/rocksdb.out")
    if [ -n "$c" ] && [ -n "$r" ] && [ "$r" != "0" ]; then
        printf '%-14s %14s %14s %7.2fx\n' "$b" "$c" "$r" "$(awk -v c="$c" -v r="$r" 'BEGIN { print c / r }')"
    else
        printf '%-14s %14s %14s %8s\n' "$b" "${c:--}" "${r:--}" "-"
    fi
done
