#!/usr/bin/env bash
# A/B of `cairn serve` builds (and redis-server) on one redis-benchmark test, alternated,
# in the state the whole-table bench (bench-server.sh) leaves each test in: a SET pass of
# 300,000 requests (keys key:0..99999), then for MGET an INCR pass of 600,000 (which pushes
# the SET pass's keys out of the memtables into tables), then the measured test, 50
# clients, -r 100000, -P 16. Each run starts a fresh server on a fresh store.
# `mget-recent` is MGET without the INCR pass: its keys are still in the memtables.
#
# Usage: scripts/ab-server.sh TEST ROUNDS TARGET...
#   TEST    mget (10 keys, 300,000 requests), mget-recent (the same), incr (1,000,000) or
#           get (2,000,000)
#   TARGET  a path to a cairn binary, or "redis" (redis-server, appendonly yes, everysec)
# CAIRN_ARGS adds flags to `cairn serve` (default durability: buffered).
# Prints one line per run: target, ops/s, redis-benchmark's p99 latency, and the server's
# CPU seconds (user + system, all its threads) during the measured test.
set -euo pipefail
test=$1
rounds=$2
shift 2
for tool in redis-server redis-benchmark redis-cli; do
    command -v "$tool" >/dev/null || { echo "ab-server: $tool missing (apt-get install redis-server redis-tools)" >&2; exit 1; }
done
case $test in
    mget | mget-recent | incr | get) ;;
    *) echo "ab-server: TEST is mget, mget-recent, incr or get" >&2; exit 2 ;;
esac
work=$(mktemp -d)
pid=
cleanup() {
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
keys=$(for _ in $(seq 10); do printf 'key:__rand_int__ '; done)
ticks_per_s=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

bench() { # redis-benchmark args...; prints "ops/s p99_ms"
    redis-benchmark -p "$port" -c 50 -r 100000 -P 16 --csv "$@" 2>/dev/null |
        tail -n 1 | tr -d '"' | awk -F, '{ print $2, $7 }'
}

one() { # target
    rm -rf "$work/store" "$work/redis"
    mkdir -p "$work/redis"
    if [ "$1" = redis ]; then
        redis-server --port "$port" --dir "$work/redis" --appendonly yes --appendfsync everysec \
            --save "" >/dev/null 2>&1 &
    else
        # shellcheck disable=SC2086 # CAIRN_ARGS holds separate flags
        "$1" serve "$work/store" --port "$port" --durability buffered ${CAIRN_ARGS:-} >/dev/null 2>&1 &
    fi
    pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    bench -n 300000 -t set >/dev/null
    [ "$test" != mget ] || bench -n 600000 -t incr >/dev/null
    local t0 ops t1
    t0=$(cpu_ticks "$pid")
    case $test in
        # shellcheck disable=SC2086 # the keys are separate arguments
        mget | mget-recent) ops=$(bench -n 300000 MGET $keys) ;;
        incr) ops=$(bench -n 1000000 -t incr) ;;
        get) ops=$(bench -n 2000000 -t get) ;;
    esac
    t1=$(cpu_ticks "$pid")
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" 2>/dev/null || true
    pid=
    awk -v t="$1" -v o="${ops% *}" -v p="${ops#* }" -v c="$((t1 - t0))" -v hz="$ticks_per_s" \
        'BEGIN { printf "%s %s ops/s, p99 %s ms, server CPU %.2f s\n", t, o, p, c / hz }'
}

for _ in $(seq "$rounds"); do
    for target in "$@"; do
        one "$target"
    done
done
