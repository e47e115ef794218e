#!/usr/bin/env bash
# Runs the tests of the engine's unsafe memtable code (memtable/skiplist.rs) under Miri,
# which reports undefined behaviour (out-of-bounds or misaligned accesses, use after free,
# invalid references) and data races between the threads of a test.
#
#   scripts/miri.sh
#   MIRI_JOBS=1 scripts/miri.sh   # one test at a time (default: one per core)
#
# Needs the nightly toolchain; installs its miri and rust-src components if they are
# missing (a missing component is a failure, not a skip). The tests shrink their sizes
# under Miri (cfg!(miri)), which runs them about a thousand times slower than native.
# Miri interprets every thread of a test on one core, so each test runs in a process of
# its own, MIRI_JOBS at a time; a test that fails prints its whole output.
set -euo pipefail
cd "$(dirname "$0")/.."

filter=memtable::skiplist

fail() {
    echo "miri: FAIL: $*" >&2
    exit 1
}

jobs="${MIRI_JOBS:-$(nproc)}"
case "$jobs" in
    '' | *[!0-9]* | 0) fail "MIRI_JOBS must be a whole number >= 1, not '$jobs'" ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    fail "the nightly toolchain is not installed; run: rustup toolchain install nightly"
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri: installing the miri and rust-src components of nightly"
    rustup component add --toolchain nightly miri rust-src || fail "cannot install miri"
fi
echo "miri: $(cargo +nightly miri --version)"

miri_test() {
    cargo +nightly miri test --locked -p cairn --lib "$@"
}

miri_test --no-run
mapfile -t tests < <(miri_test "$filter" -- --list --format=terse 2>/dev/null | sed -n 's/: test$//p')
[ "${#tests[@]}" -gt 0 ] || fail "no tests match $filter"
echo "miri: ${#tests[@]} tests, $jobs at a time"

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

run_one() { # index -> "$logs/<index>.log", and "$logs/<index>.ok" if the test passed
    local i="$1" started=$SECONDS
    if miri_test -- --exact "${tests[$i]}" >"$logs/$i.log" 2>&1 &&
        grep -q '^test result: ok\. 1 passed' "$logs/$i.log"; then
        touch "$logs/$i.ok"
    fi
    echo "miri: ${tests[$i]}: $([ -e "$logs/$i.ok" ] && echo ok || echo FAILED) in $((SECONDS - started)) s"
}

running=0
for i in "${!tests[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    run_one "$i" &
    running=$((running + 1))
done
wait || true

failed=0
for i in "${!tests[@]}"; do
    if [ ! -e "$logs/$i.ok" ]; then
        failed=$((failed + 1))
        echo "----- ${tests[$i]} -----" >&2
        cat "$logs/$i.log" >&2
    fi
done
[ "$failed" -eq 0 ] || fail "$failed of ${#tests[@]} tests failed"
echo "miri: all ${#tests[@]} tests passed"
