#!/usr/bin/env bash
# Cairn's whole test suite, as CI runs it (.ci/run calls this script).
#
# Installs what it needs on a fresh machine with only stable Rust (scripts/setup.sh,
# idempotent), then runs, in order:
#   1. formatting and lints (cargo fmt --check, clippy -D warnings on every crate but the
#      peer suite crates/ordered-peers, which links peers CI does not install, and on the
#      engine built without its optional features)
#   2. every Rust test of the workspace (unit, integration, doc tests), including libcairn's
#      C tests (built with cc, run plainly and under AddressSanitizer) and its cgo example
#   3. interoperability with sparkey-java, an independent Sparkey implementation
#   4. sparkey-python (PyPI) run unchanged against Cairn's libsparkey.so
#   5. the Python package (crates/python): build the abi3 wheel with maturin, pytest
#   6. the Redis-protocol server (cairn serve): a redis-py suite, redis-cli and
#      redis-benchmark checks
#   7. a short fuzzing run of every decoder and of the server's request parser
#      (FUZZ_SECONDS each, default 30)
#   8. the tests of the memtable's unsafe skip list under Miri
# Exits non-zero on the first failure. Prints how long each step took.
#
# CAIRN_SOAK=N (a whole number, default 1) runs the long tests N times longer: the kill -9
# cycles, the model tests' cases, the concurrency stress batches, the multi-process run
# and the fuzz run of each target (FUZZ_SECONDS, default 30 s, times N). CI runs the
# bounded suite (N = 1, about 20-35 minutes on 2 cores); a nightly soak is
# `CAIRN_SOAK=10 bash scripts/test.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

soak="${CAIRN_SOAK:-1}"
case "$soak" in
    '' | *[!0-9]* | 0) echo "test.sh: CAIRN_SOAK must be a whole number >= 1, not '$soak'" >&2; exit 2 ;;
esac
export FUZZ_SECONDS="${FUZZ_SECONDS:-$((30 * soak))}"

started=$SECONDS
step_started=
step() {
    [ -z "$step_started" ] || printf '    (%d s)\n' "$((SECONDS - step_started))"
    step_started=$SECONDS
    printf '\n==> %s\n' "$*"
}

step "installing what the tests need (clippy, rustfmt, nightly with miri, a JDK, Maven, libsnappy, tinycdb, python3 venv, redis-tools)"
bash scripts/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (every crate but the peer suite, all targets, -D warnings)"
cargo clippy --workspace --exclude cairn-ordered-peers --all-targets --locked -- -D warnings

step "the engine without its optional features (zstd, transfer): cargo check, cargo clippy"
cargo check -p cairn --no-default-features --locked && cargo clippy -p cairn --no-default-features --all-targets --locked -- -D warnings

step "cargo test (workspace but the peer suite)"
cargo test --workspace --exclude cairn-ordered-peers --locked

step "interoperability with sparkey-java"
cargo build --release --locked -p cairn-cli
bash interop/run.sh target/release/cairn

step "sparkey-python 0.3.0 against Cairn's libsparkey.so"
bash crates/libsparkey/tests/python/run.sh

step "the Python package: build the abi3 wheel, pytest"
bash crates/python/tests/run.sh

step "the Redis-protocol server: redis-py suite and redis-cli/redis-benchmark checks"
bash crates/server/tests/python/run.sh

step "fuzz smoke run"
bash scripts/fuzz-smoke.sh

step "Miri (the memtable's unsafe code)"
bash scripts/miri.sh

step "all checks passed in $((SECONDS - started)) s"
