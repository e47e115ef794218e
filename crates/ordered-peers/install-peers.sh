#!/usr/bin/env bash
# Installs and builds everything the peer suite (cairn-ordered-peers) needs, idempotently:
#   apt:   librocksdb-dev rocksdb-tools (RocksDB 7.8.3, linked instead of compiled),
#          libsnappy-dev, tinycdb libcdb-dev, liblmdb-dev lmdb-utils, libclang-dev
#          (bindgen for the RocksDB bindings), gcc
#   Go:    the Go driver (pebble, badger, bbolt) -> target/cairn-ordered-peers-go, when
#          `go` is installed (the Go stores are skipped otherwise)
#   Rust:  cargo build --release -p cairn-ordered-peers, linked to Debian's librocksdb
# Run from anywhere; builds into the repository's target/.
set -euo pipefail
cd "$(dirname "$0")/../.."

packages=(librocksdb-dev rocksdb-tools libsnappy-dev tinycdb libcdb-dev liblmdb-dev lmdb-utils libclang-dev gcc)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-peers.sh: need root or sudo for: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if command -v go >/dev/null; then
  echo "building the Go driver (pebble, badger, bbolt)"
  (cd crates/ordered-peers/go && go build -o ../../../target/cairn-ordered-peers-go .)
else
  echo "go not found: the Go stores (pebble, badger, bbolt) will be skipped" >&2
fi

libdir=$(dirname "$(find /usr/lib -name 'librocksdb.so' -print -quit)")
echo "building cairn-ordered-peers (RocksDB from $libdir)"
ROCKSDB_LIB_DIR="$libdir" SNAPPY_LIB_DIR="$libdir" cargo build --release --locked -p cairn-ordered-peers
