#!/usr/bin/env bash
# cairn serve against Debian's redis-server, same machine, same run, loopback, 50 clients:
# redis-benchmark's SET, GET, INCR and an MGET of 10 keys, without and with pipelining
# (-P 16), in three pairings:
#
#   buffered   Cairn --durability buffered   vs  Redis appendonly yes, appendfsync everysec
#   sync       Cairn --durability sync       vs  Redis appendonly yes, appendfsync always
#   memory     Cairn --durability buffered   vs  Redis without persistence (save "", appendonly no)
#
# Both lose nothing on a process crash in the first pairing; nothing on power loss in
# the second (Redis fsyncs before replying with appendfsync always, Cairn before the
# reply with sync); the third shows what persistence costs Redis.
#
# Usage: scripts/bench-server.sh            (BENCH_N requests per test, default 100000;
#        BENCH_PAIRS="buffered sync memory" to choose; CAIRN_BIN=path runs that cairn
#        binary instead of building this tree's; CAIRN_ARGS adds flags to `cairn serve`,
#        e.g. "--threads 1"). Needs redis-server and
#        redis-benchmark (apt-get install redis-server redis-tools). Honours
#        CARGO_TARGET_DIR. Prints one table; ratio = Cairn ops/s ÷ Redis ops/s.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
n=${BENCH_N:-100000}
pairs=${BENCH_PAIRS:-buffered sync memory}
for tool in redis-server redis-benchmark redis-cli; do
    command -v "$tool" >/dev/null || { echo "bench-server: $tool missing (apt-get install redis-server redis-tools)" >&2; exit 1; }
done
if [ -n "${CAIRN_BIN:-}" ]; then
    cairn=$(realpath "$CAIRN_BIN") # another build of cairn, for an A/B against this one
else
    cargo build --locked -q --release -p cairn-cli
    cairn="$(cd "$target/release" && pwd)/cairn"
fi

work=$(mktemp -d)
pid=
cleanup() {
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_ready() { # port
    for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "bench-server: server on port $1 did not start" >&2
    exit 1
}

stop() { # port
    redis-cli -p "$1" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" 2>/dev/null || true
    pid=
}

# bench <label> <port>: appends "label,test,pipeline,rps,p50,p99" lines to $work/results.
bench() {
    local label=$1 port=$2 p keys
    keys=$(for i in $(seq 10); do printf 'key:__rand_int__ '; done)
    for p in 1 16; do
        redis-benchmark -p "$port" -c 50 -n "$n" -r 100000 -P "$p" -t set,get,incr --csv 2>/dev/null |
            tail -n +2 | tr -d '"' | awk -F, -v l="$label" -v p="$p" '{print l","$1","p","$2","$5","$7}' >>"$work/results"
        # shellcheck disable=SC2086 # the keys are separate arguments
        redis-benchmark -p "$port" -c 50 -n "$n" -r 100000 -P "$p" --csv MGET $keys 2>/dev/null |
            tail -n +2 | tr -d '"' | awk -F, -v l="$label" -v p="$p" '{print l",MGET (10 keys),"p","$2","$5","$7}' >>"$work/results"
    done
}

run_cairn() { # pair durability
    local port; port=$(free_port)
    # shellcheck disable=SC2086 # CAIRN_ARGS holds separate flags
    "$cairn" serve "$work/cairn-$1" --port "$port" --durability "$2" ${CAIRN_ARGS:-} >/dev/null 2>&1 &
    pid=$!
    wait_ready "$port"
    bench "$1/cairn" "$port"
    stop "$port"
}

run_redis() { # pair redis-args...
    local pair=$1 port; shift
    port=$(free_port)
    mkdir -p "$work/redis-$pair"
    redis-server --port "$port" --dir "$work/redis-$pair" --save "" --daemonize no \
        --logfile "$work/redis-$pair.log" "$@" &
    pid=$!
    wait_ready "$port"
    bench "$pair/redis" "$port"
    stop "$port"
}

: >"$work/results"
for pair in $pairs; do
    case $pair in
        buffered) run_cairn buffered buffered; run_redis buffered --appendonly yes --appendfsync everysec ;;
        sync) run_cairn sync sync; run_redis sync --appendonly yes --appendfsync always ;;
        memory) run_cairn memory buffered; run_redis memory --appendonly no ;;
        *) echo "bench-server: unknown pairing $pair" >&2; exit 1 ;;
    esac
done

echo "cairn serve vs redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'): $n requests per test, 50 clients, -r 100000, $(nproc) cores"
printf '%-9s %-15s %3s %12s %12s %7s %10s %10s\n' pairing test P cairn_ops/s redis_ops/s ratio cairn_p99 redis_p99
awk -F, '
    { split($1, who, "/"); key = who[1] SUBSEP $2 SUBSEP $3; rps[key, who[2]] = $4; p99[key, who[2]] = $6; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    END {
        for (i = 1; i <= n; i++) {
            split(order[i], k, SUBSEP)
            c = rps[order[i], "cairn"]; r = rps[order[i], "redis"]
            printf "%-9s %-15s %3s %12.0f %12.0f %7.2f %8.3fms %8.3fms\n", k[1], k[2], k[3], c, r, (r > 0 ? c / r : 0), p99[order[i], "cairn"], p99[order[i], "redis"]
        }
    }' "$work/results"
