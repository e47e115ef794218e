#!/usr/bin/env bash
# The cost of libcairn's C boundary in instructions, which other processes do not disturb
# (callgrind counts are the same on every run of the same binaries): the same 100k puts
# and gets (hits, then misses) through the C API and the Rust API, counting only inside
# the entry point (`cairn_put`, `cairn_get_into`) and the Rust function a Rust program
# calls for the same work (`Keyspace::insert*`, `Keyspace::get_into`).
#
#   bash crates/ffi/bench/boundary-callgrind.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/../../.."
count=${1:-100000}
target=${CARGO_TARGET_DIR:-target}
command -v valgrind >/dev/null || { echo "boundary-callgrind.sh: needs valgrind" >&2; exit 2; }
cargo build --release -p cairn-ffi --lib --example boundary_rust
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${CC:-cc}" -O2 -Icrates/ffi/include crates/ffi/bench/boundary.c "$target/release/libcairn.a" \
    -lpthread -ldl -lm -o "$work/boundary"

# instructions PROGRAM FUNCTION: instructions counted inside FUNCTION (and what it calls).
instructions() {
    local program=$1 function=$2
    rm -rf "$work/store"
    valgrind --tool=callgrind --callgrind-out-file="$work/out" --toggle-collect="$function" \
        $program "$work/store" "$count" >/dev/null 2>&1
    sed -n 's/^summary: //p' "$work/out"
}

c_put=$(instructions "$work/boundary" 'cairn_put')
rust_put=$(instructions "$target/release/examples/boundary_rust" 'cairn::db::keyspace::Keyspace::insert*')
c_get=$(instructions "$work/boundary" 'cairn_get_into')
rust_get=$(instructions "$target/release/examples/boundary_rust" 'cairn::db::keyspace::Keyspace::get_into_in')
# Gets are counted over `count` hits and `count` misses on both sides.
awk -v n="$count" -v cp="$c_put" -v rp="$rust_put" -v cg="$c_get" -v rg="$rust_get" 'BEGIN {
    printf "%-28s %12s %12s %9s\n", "call (instructions per op)", "C API", "Rust API", "C / Rust"
    printf "%-28s %12.0f %12.0f %+8.1f%%\n", "put", cp / n, rp / n, (cp / rp - 1) * 100
    printf "%-28s %12.0f %12.0f %+8.1f%%\n", "get_into (hits and misses)", cg / (2 * n), rg / (2 * n), (cg / rg - 1) * 100
}'
