#!/usr/bin/env bash
# Large values: Cairn with values in the tables and with values in the value log (blob
# files), next to RocksDB 7.8.3's db_bench with values in its tables and in its BlobDB
# (--enable_blob_files), on the same workload, back to back on one machine.
#
#   scripts/bench-large-values.sh                         # 4 KiB, 64 KiB, 1 MiB, 8 MiB values
#   SIZES=65536 DATA=$((1<<30)) scripts/bench-large-values.sh
#
# For each value size: NUM = DATA / size keys (16-byte keys; DATA defaults to 256 MiB),
# fillrandom, then overwrite (the same number of random writes again, so on average every
# key is written twice), then compact (flush, full compaction, and for Cairn value-log GC:
# the space the store settles at), then readrandom over NUM lookups (and, for Cairn, headrandom: the
# same lookups of the entry's head, without the value). Values compress to half, LZ4, a
# 64 MiB block cache, no fsync (Cairn --durability buffered, db_bench --sync=0). Blob
# thresholds: 4096 bytes for both stores. "space" is the store directory's size once
# the benchmarks end (du), over the live data (NUM × (16 + size)): space amplification.
set -euo pipefail

sizes="${SIZES:-4096 65536 1048576 8388608}"
data="${DATA:-268435456}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${DIR:-$(mktemp -d /tmp/cairn-large-values.XXXXXX)}"
mkdir -p "$dir"
trap 'rm -rf "$dir/store"' EXIT

if ! command -v db_bench >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq rocksdb-tools >/dev/null
fi
cargo build --release -q -p cairn-cli --manifest-path "$root/Cargo.toml"
cairn="$root/target/release/cairn"

# ops/sec and MB/s of benchmark $2 in output file $1.
ops() { awk -v b="$2" '$1 == b && $2 == ":" { for (i = 3; i <= NF; i++) if ($(i) == "ops/sec;" || $(i) == "ops/sec") { print $(i-1); exit } }' "$1"; }
mbs() { awk -v b="$2" '$1 == b && $2 == ":" { for (i = 3; i <= NF; i++) if ($(i) == "MB/s") { print $(i-1); exit } }' "$1"; }

echo "== Cairn $(git -C "$root" rev-parse --short HEAD), RocksDB $(dpkg-query -W -f '${Version}' rocksdb-tools 2>/dev/null || echo '?'), DATA=$data bytes per size"
printf '%-9s %-15s %9s %11s %11s %12s %12s %9s\n' size store num "fill MB/s" "overw MB/s" "readrandom" "headrandom" "space"
for size in $sizes; do
    num=$((data / size))
    live=$((num * (16 + size)))
    for store in cairn cairn-vlog rocksdb rocksdb-blob; do
        rm -rf "$dir/store"
        out="$dir/$store-$size.out"
        case "$store" in
        cairn | cairn-vlog)
            extra=()
            [ "$store" = cairn-vlog ] && extra=(--blob-threshold 4096)
            "$cairn" bench ordered --num "$num" --reads "$num" --value-size "$size" --key-size 16 \
                --benchmarks fillrandom,overwrite,compact,readrandom,headrandom --compression lz4 \
                --cache-size 67108864 --durability buffered --dir "$dir/store" "${extra[@]}" >"$out"
            ;;
        rocksdb | rocksdb-blob)
            extra=()
            [ "$store" = rocksdb-blob ] && extra=(--enable_blob_files=true --min_blob_size=4096 --enable_blob_garbage_collection=true)
            db_bench --benchmarks=fillrandom,overwrite,compact,readrandom --num="$num" --reads="$num" \
                --key_size=16 --value_size="$size" --compression_type=lz4 --cache_size=67108864 \
                --bloom_bits=10 --sync=0 --threads=1 --compression_ratio=0.5 --db="$dir/store" \
                --statistics=0 "${extra[@]}" >"$out" 2>&1
            ;;
        esac
        space=$(du -sb "$dir/store" | cut -f1)
        head=$(ops "$out" headrandom)
        printf '%-9s %-15s %9s %11s %11s %12s %12s %8.2fx\n' "$size" "$store" "$num" \
            "$(mbs "$out" fillrandom)" "$(mbs "$out" overwrite)" "$(ops "$out" readrandom)" \
            "${head:--}" "$(awk -v s="$space" -v l="$live" 'BEGIN { print s / l }')"
    done
done
echo "(outputs in $dir)"
