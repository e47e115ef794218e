#!/usr/bin/env bash
# Runs the tests of the engine's unsafe memtable code (memtable/skiplist.rs) under Miri,
# which reports undefined behaviour (out-of-bounds or misaligned accesses, use after free,
# invalid references) and data races between the threads of a test.
#
#   scripts/miri.sh
#
# Needs the nightly toolchain; installs its miri and rust-src components if they are
# missing (a missing component is a failure, not a skip). The tests shrink their sizes
# under Miri (cfg!(miri)), which runs them about a thousand times slower than native.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "miri: FAIL: $*" >&2
    exit 1
}

if ! cargo +nightly --version >/dev/null 2>&1; then
    fail "the nightly toolchain is not installed; run: rustup toolchain install nightly"
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri: installing the miri and rust-src components of nightly"
    rustup component add --toolchain nightly miri rust-src || fail "cannot install miri"
fi
echo "miri: $(cargo +nightly miri --version)"

cargo +nightly miri test --locked -p cairn --lib memtable::skiplist
