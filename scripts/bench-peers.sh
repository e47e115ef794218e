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
# Transactions (docs/BENCHMARKS.md, "Transactions"): bank transfers over 1k (contended) and
# 1M (uncontended) accounts, a read-modify-write mix and compare-and-swap loops, with 1, 2
# and 8 threads, on Cairn (snapshot isolation and serializable) and on fjall's optimistic
# and single-writer transactions, RocksDB's OptimisticTransactionDB and TransactionDB, redb
# and LMDB write transactions (about 8 minutes on 2 cores):
#   scripts/bench-peers.sh --workloads txn-transfer,txn-rmw,txn-cas --no-large --no-constant \
#       --out docs/bench/txn
#   scripts/bench-peers.sh --workloads txn-transfer --txn-accounts 1000 --txn-threads 8 \
#       --txn-stores cairn,fjall-optimistic,rocksdb-optimistic --no-large --no-constant --out /tmp/txn
# Takes about 30 minutes with the defaults on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash crates/ordered-peers/install-peers.sh
exec target/release/cairn-ordered-peers "$@"
