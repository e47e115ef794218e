#!/usr/bin/env bash
# Installs everything the test command (scripts/test.sh) needs on a fresh machine that
# has only stable Rust (through rustup) and Debian's apt. Idempotent and quiet when all is
# there already.
#
#   stable Rust's clippy and rustfmt        rustup component add
#   the nightly toolchain, miri, rust-src   rustup toolchain install (fuzz smoke, Miri)
#   cargo-fuzz                              cargo install (scripts/fuzz-smoke.sh does it)
#   a JDK >= 17 and Maven                   apt-get (the sparkey-java interop check)
#   libsnappy-dev, libcdb-dev, gcc          apt-get (crates/bench/install-peers.sh)
#   python3 with venv                       apt-get (sparkey-python against libsparkey.so,
#                                           redis-py against cairn serve)
#   redis-cli, redis-benchmark (redis-tools) apt-get (cairn serve's black-box checks)
#   openssl                                 apt-get (cairn serve's TLS check makes a certificate)
#   a Go toolchain with cgo (golang-go)     apt-get, unless go is on the PATH or in
#                                           /usr/local/go (libcairn's cgo example)
#
# Exits non-zero, saying what is missing and how to get it, if something cannot be
# installed (no rustup, no root or sudo for apt).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }
fail() {
    printf 'setup: FAIL: %s\n' "$*" >&2
    exit 1
}

# --- Rust -----------------------------------------------------------------------------------
command -v cargo >/dev/null || fail "no cargo: install Rust with rustup (https://rustup.rs)"
if command -v rustup >/dev/null; then
    if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
        say "adding clippy and rustfmt to the stable toolchain"
        rustup component add clippy rustfmt >/dev/null
    fi
    if ! cargo +nightly --version >/dev/null 2>&1; then
        say "installing the nightly toolchain (fuzzing and Miri need it)"
        rustup toolchain install nightly --profile minimal --component miri,rust-src >/dev/null
    fi
    if ! cargo +nightly miri --version >/dev/null 2>&1; then
        say "adding miri and rust-src to nightly"
        rustup component add --toolchain nightly miri rust-src >/dev/null
    fi
else
    cargo +nightly --version >/dev/null 2>&1 ||
        fail "no rustup and no nightly toolchain: the fuzz smoke run and Miri need nightly"
fi

# --- Debian packages ------------------------------------------------------------------------
need_apt=()
java_ok() {
    command -v java >/dev/null && command -v javac >/dev/null || return 1
    local v
    v=$(javac -version 2>&1 | sed -n 's/^javac \([0-9]*\).*/\1/p')
    [ -n "$v" ] && [ "$v" -ge 17 ]
}
java_ok || need_apt+=(default-jdk-headless)
command -v mvn >/dev/null || need_apt+=(maven)
# crates/libsparkey/tests/python/run.sh installs sparkey-python into a fresh virtualenv.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || need_apt+=(golang-go)
# crates/server/tests/python/run.sh checks cairn serve with Debian's redis-cli and redis-benchmark.
{ command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null; } || need_apt+=(redis-tools)
command -v openssl >/dev/null || need_apt+=(openssl)
if [ "${#need_apt[@]}" -gt 0 ]; then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || fail "need root or sudo to install: ${need_apt[*]}"
        sudo=(sudo)
    fi
    say "installing ${need_apt[*]} (the sparkey-java interop check, the sparkey-python check, libcairn's Go example, cairn serve's redis-cli checks)"
    export DEBIAN_FRONTEND=noninteractive
    log=$(mktemp)
    if ! { "${sudo[@]}" apt-get update -qq &&
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need_apt[@]}"; } >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        fail "apt-get could not install ${need_apt[*]}"
    fi
    rm -f "$log"
fi
bash crates/bench/install-peers.sh
say "ready: $(cargo --version), $(cargo +nightly --version), $(mvn -B -v 2>/dev/null | head -n 1)"
