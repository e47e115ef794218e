#!/usr/bin/env bash
# The peer suite: Cairn and its peers, the same workloads in one run. Installs and builds
# the peers (crates/ordered-peers/install-peers.sh), then runs cairn-ordered-peers and writes the report
# to docs/bench/peers.{md,json,svg}. Extra arguments go to cairn-ordered-peers, e.g.
#   scripts/bench-peers.sh --num 10000000 --threads 1 --out docs/bench/peers-10m
# Read-only opens and reader processes beside a writer process (docs/BENCHMARKS.md,
# "Read-only opens and reader processes"), at 1M and 10M keys:
#   scripts/bench-peers.sh --num 1000000 --workloads open-ro,mp-readers \
#       --stores cairn,rocksdb,redb,lmdb --no-large --no-constant --out docs/bench/processes-1m
#   scripts/bench-peers.sh --num 10000000 --workloads open-ro,mp-readers \
#       --stores cairn,rocksdb,redb,lmdb --no-large --no-constant --out docs/bench/processes-10m
# Takes about 30 minutes with the defaults on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash crates/ordered-peers/install-peers.sh
exec target/release/cairn-ordered-peers "$@"
