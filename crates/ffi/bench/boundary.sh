#!/usr/bin/env bash
# The cost of libcairn's C boundary: the same loops (1M puts, then 1M gets of 16-byte keys
# and 100-byte values, durability NONE) through the C API (bench/boundary.c, linked to the
# static library, so both sides get the same optimised engine) and the Rust API
# (examples/boundary_rust.rs). Runs each ROUNDS times (default 5), alternating, in fresh stores.
#
#   bash crates/ffi/bench/boundary.sh [COUNT] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
count=${1:-1000000}
rounds=${2:-5}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -p cairn-ffi --lib --example boundary_rust
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${CC:-cc}" -O2 -Icrates/ffi/include crates/ffi/bench/boundary.c "$target/release/libcairn.a" \
    -lpthread -ldl -lm -o "$work/boundary"
for round in $(seq "$rounds"); do
    echo "round $round, C API:"
    "$work/boundary" "$work/c$round" "$count"
    rm -rf "$work/c$round"
    echo "round $round, Rust API:"
    "$target/release/examples/boundary_rust" "$work/r$round" "$count"
    rm -rf "$work/r$round"
done
