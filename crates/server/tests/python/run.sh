#!/usr/bin/env bash
# `cairn serve` against real Redis clients: redis-py (PyPI's `redis`, pinned) in a fresh
# virtualenv runs redis_py_test.py (every command, pipelines, MULTI/EXEC/WATCH, RESP3,
# auth and ACL users, TLS with a certificate made by openssl, errors, hostile clients,
# kill -9 under sync durability), then redis-cli and redis-benchmark (Debian's
# redis-tools) run black-box checks.
#
# Usage: crates/server/tests/python/run.sh   (builds what it needs; honours
# CARGO_TARGET_DIR). Needs python3 with venv, network access to PyPI, openssl, and
# redis-tools (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
target=${CARGO_TARGET_DIR:-target}

cargo build --locked -q --release -p cairn-cli
cairn="$(cd "$target/release" && pwd)/cairn"

work=$(mktemp -d)
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check redis==5.2.1
"$work/venv/bin/python" crates/server/tests/python/redis_py_test.py "$cairn" "$work"

# --- redis-cli and redis-benchmark, black box -----------------------------------------
# (with huge-page memtables: the benchmark's INCRs of one key are counted exactly below)
command -v redis-cli >/dev/null || { echo "redis-cli missing: run scripts/setup.sh" >&2; exit 1; }
"$cairn" serve "$work/bb" --port 0 --durability buffered --memtable-huge-pages >"$work/bb.out" 2>&1 &
server_pid=$!
for _ in $(seq 50); do grep -q '^ready: tcp' "$work/bb.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^ready: tcp .*:\([0-9]*\)$/\1/p' "$work/bb.out")
[ -n "$port" ] || { cat "$work/bb.out" >&2; exit 1; }
cli=(redis-cli -p "$port")
expect() { # expected, command...
    local want=$1; shift
    local got; got=$("${cli[@]}" "$@")
    [ "$got" = "$want" ] || { echo "redis-cli $*: expected '$want', got '$got'" >&2; exit 1; }
}
expect OK set greeting hello
expect hello get greeting
expect 11 append greeting ' world'
expect 1 incr counter
expect "ERR unknown command 'nosuch', with args beginning with: 'a' " nosuch a
"${cli[@]}" -n 3 set three 3 >/dev/null
expect 3 -n 3 get three
expect "" -n 4 get three
printf 'SET piped 1\nINCRBY piped 41\nGET piped\n' | "${cli[@]}" >"$work/piped"
[ "$(tail -n 1 "$work/piped")" = 42 ] || { echo "piped commands: $(cat "$work/piped")" >&2; exit 1; }
echo "redis-cli black-box checks: ok"

redis-benchmark -p "$port" -q -n 20000 -c 20 -t set,get,incr,mset -P 8 2>&1 | tr '\r' '\n' |
    grep 'requests per second' >"$work/bench" || true
cat "$work/bench"
for t in 'SET' 'GET' 'INCR' 'MSET (10 keys)'; do
    grep -q "^$t: .*requests per second" "$work/bench" || { echo "redis-benchmark did not complete $t" >&2; exit 1; }
done
# Every acknowledged INCR of the benchmark is counted.
expect 20000 get counter:__rand_int__
"${cli[@]}" shutdown >/dev/null 2>&1 || true
wait "$server_pid"
server_pid=
echo "redis-benchmark against cairn serve: ok"
