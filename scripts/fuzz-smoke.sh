#!/usr/bin/env bash
# Short fuzzing run of every cargo-fuzz target in fuzz/ (reliability plan T4, PR level).
#
#   scripts/fuzz-smoke.sh                 # every target, 30 s each
#   FUZZ_SECONDS=60 scripts/fuzz-smoke.sh  # longer
#   scripts/fuzz-smoke.sh sparkey_index   # some targets only
#   FUZZ_JOBS=1 scripts/fuzz-smoke.sh      # one target at a time (default: one per core)
#
# Needs the nightly toolchain (libFuzzer's sanitizer flags are nightly-only) and installs
# cargo-fuzz from crates.io if it is missing. Each target runs with debug assertions (so
# integer overflow is a crash), -rss_limit_mb=2048 and -timeout=5 (an input taking > 5 s is
# a hang). Small seed corpora are made from shared/vectors/sparkey on first use (the corpora
# stay out of git). Exits non-zero if any target crashes, hangs, runs out of memory or does
# not build; prints the executions each target reached.
set -euo pipefail

seconds="${FUZZ_SECONDS:-30}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz="$root/fuzz"
vectors="$root/../shared/vectors/sparkey"

fail() {
    echo "fuzz-smoke: FAIL: $*" >&2
    exit 1
}

case "$seconds" in
    '' | *[!0-9]*) fail "FUZZ_SECONDS must be a whole number of seconds, not '$seconds'" ;;
esac

# The toolchain: cargo-fuzz needs nightly. Missing nightly is a failure, not a skip.
if ! cargo +nightly --version >/dev/null 2>&1; then
    fail "the nightly toolchain is not installed; run: rustup toolchain install nightly"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz (cargo install --locked cargo-fuzz)"
    cargo install --locked cargo-fuzz || fail "cannot install cargo-fuzz"
fi
echo "fuzz-smoke: $(cargo +nightly --version), $(cargo fuzz --version)"

cd "$fuzz"
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
[ "${#targets[@]}" -gt 0 ] || fail "no fuzz targets found in $fuzz"

# `cargo fuzz build` takes one target or none (= all).
build=(cargo +nightly fuzz build --debug-assertions)
[ "${#targets[@]}" -eq 1 ] && build+=("${targets[0]}")
build_log="$(mktemp)"
if ! "${build[@]}" >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    fail "the fuzz targets do not build"
fi
rm -f "$build_log"

# --- Seed corpora (small, from the reference vectors) -------------------------------------
seed_dir() { # target -> corpus dir, created
    mkdir -p "corpus/$1"
    echo "corpus/$1"
}

u32_at() { # file offset -> unsigned 32-bit little-endian value
    od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '
}

# Index in cairn_fuzz::BLOCK_SIZES (fuzz/src/lib.rs), or 0.
block_size_index() {
    local sizes=(10 16 17 32 64 100 128 255 512 1000 1024 4096 16384 65536 262144 1048576) i
    for i in "${!sizes[@]}"; do
        if [ "${sizes[$i]}" = "$1" ]; then
            echo "$i"
            return
        fi
    done
    echo 0
}

seed() {
    local target="$1" dir small=()
    dir="$(seed_dir "$target")"
    [ -z "$(ls -A "$dir")" ] || return 0
    if [ -d "$vectors" ]; then
        # Vectors up to 40 KB (the larger ones would only slow every execution down).
        while IFS= read -r f; do small+=("$f"); done < <(find "$vectors" -name '*.spl' -size -40k | sort)
    fi
    case "$target" in
        sparkey_log_header)
            for f in "${small[@]}"; do cp "$f" "$dir/"; done
            ;;
        sparkey_log_entries)
            # Selector byte (compression | block-size index << 4), then the entry stream.
            for f in "${small[@]}"; do
                local comp bs sel
                comp="$(u32_at "$f" 64)"
                bs="$(u32_at "$f" 68)"
                sel=$((comp | $(block_size_index "$bs") << 4))
                { printf "\\$(printf '%03o' "$sel")"; tail -c +85 "$f"; } >"$dir/$(basename "$f" .spl)"
            done
            ;;
        sparkey_index)
            # The target writes valid index files for its fixed logs when asked to.
            CAIRN_FUZZ_SEED_OUT="$PWD/$dir" cargo +nightly fuzz run --debug-assertions "$target" \
                "$dir" -- -runs=0 >/dev/null 2>&1 || true
            ;;
    esac
    echo "fuzz-smoke: seeded $dir with $(ls -A "$dir" | wc -l) inputs"
}

# --- Run ----------------------------------------------------------------------------------
# Each libFuzzer process uses one core, so FUZZ_JOBS targets (default: the machine's cores)
# run side by side; every target still gets its full FUZZ_SECONDS. Results print in target
# order.
jobs="${FUZZ_JOBS:-$(nproc)}"
case "$jobs" in
    '' | *[!0-9]* | 0) fail "FUZZ_JOBS must be a whole number >= 1, not '$jobs'" ;;
esac
for target in "${targets[@]}"; do
    seed "$target"
done
results="$(mktemp -d)"

run_one() { # target -> writes "$results/$target": "ok <execs>" or "FAILED <rc> <execs> <log>"
    local target="$1" log rc execs
    log="$(mktemp)"
    set +e
    cargo +nightly fuzz run --debug-assertions "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    execs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)"
    if [ -z "$execs" ]; then
        execs="$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -n 1)"
    fi
    execs="${execs:-?}"
    if [ "$rc" -ne 0 ] || grep -qE '^==[0-9]+== ERROR: libFuzzer|^SUMMARY: libFuzzer|panicked at' "$log"; then
        [ "$rc" -ne 0 ] || rc=1
        echo "FAILED $rc $execs $log" >"$results/$target"
    else
        echo "ok 0 $execs" >"$results/$target"
        rm -f "$log"
    fi
}

running=0
for target in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    echo "fuzz-smoke: $target for ${seconds}s"
    run_one "$target" &
    running=$((running + 1))
done
wait || true

status=0
summary=()
for target in "${targets[@]}"; do
    if ! read -r verdict rc execs log <"$results/$target"; then
        status=1
        summary+=("$target: FAILED (no result recorded)")
        continue
    fi
    if [ "$verdict" = ok ]; then
        summary+=("$target: ok, $execs executions in ${seconds}s")
        continue
    fi
    status=1
    summary+=("$target: FAILED (exit $rc) after $execs executions; log below")
    echo "----- $target: $log -----" >&2
    grep -m 3 -A 6 -E 'panicked at|ERROR: libFuzzer' "$log" >&2 || tail -n 40 "$log" >&2
    ls -1 "artifacts/$target" 2>/dev/null | sed 's/^/  artifact: /' >&2 || true
done
rm -rf "$results"

# Each fuzzing process wrote its inputs to a scratch directory named after its pid.
for dir in /dev/shm/cairn-fuzz-* "${TMPDIR:-/tmp}"/cairn-fuzz-*; do
    [ -d "$dir" ] && [ ! -d "/proc/${dir##*-}" ] && rm -rf "$dir"
done

echo "fuzz-smoke: results"
for line in "${summary[@]}"; do
    echo "  $line"
done
exit "$status"
