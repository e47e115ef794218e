#!/usr/bin/env bash
# The Python package `cairn` against other stores' Python bindings (crates/python/bench/bench.py):
#   1. the ordered store against python-lmdb, rocksdict and plyvel (PyPI; a peer that does
#      not install is skipped, saying so): puts, gets, a forward scan and the per-call
#      overhead, with 1 and 4 threads, on the same data in the same run;
#   2. the constant store against sparkey-python 0.3.0 (PyPI, ctypes): building and reading
#      N entries (default 1M), sparkey-python running once over Cairn's drop-in
#      libsparkey.so.0 and once over the reference C library when its source is found.
#
# Usage: scripts/bench-python.sh [SPARKEY_SOURCE_DIR]   (honours CARGO_TARGET_DIR)
#   SPARKEY_SOURCE_DIR  a spotify/sparkey source tree for the reference library (built with
#                       crates/libsparkey/bench/build-reference.sh; needs libsnappy-dev and
#                       libzstd-dev). Default: the copy bundled in the sparkey-sys crate if
#                       cargo has it unpacked; else only Cairn's libsparkey is measured.
# Environment: N_ORDERED (default 200000), N_SPARKEY (default 1000000), THREADS (default 1,4).
# Builds the abi3 wheel with maturin --release into a fresh virtualenv; needs PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check maturin==1.16.0
for peer in lmdb==3.0.0 rocksdict==0.3.29 plyvel==1.5.1 sparkey-python==0.3.0; do
    "$py" -m pip install -q --disable-pip-version-check "$peer" ||
        echo "bench-python: $peer did not install; it is skipped" >&2
done
"$work/venv/bin/maturin" build --locked --release -q -m crates/python/Cargo.toml -i "$py" -o "$work/wheels"
"$py" -m pip install -q --disable-pip-version-check "$work"/wheels/cairn-*.whl

cargo build --release --locked -q -p cairn-libsparkey
mkdir -p "$work/cairn-lib"
cp "$target/release/libsparkey.so" "$work/cairn-lib/libsparkey.so.0"
ln -sf libsparkey.so.0 "$work/cairn-lib/libsparkey.so"
libs=(--lib "cairn-libsparkey=$work/cairn-lib")

src=${1:-}
if [ -z "$src" ]; then
    src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/sparkey-sys-*/sparkey 2>/dev/null | head -1 || true)
fi
# build-reference.sh needs a tree with compress.c (sparkey 1.0+; the copy bundled in
# sparkey-sys 0.1.1 predates it).
if [ -n "$src" ] && [ -f "$src/src/compress.c" ] &&
    bash crates/libsparkey/bench/build-reference.sh "$src" "$work/ref" >/dev/null; then
    libs=(--lib "reference=$work/ref/lib" "${libs[@]}")
    echo "reference libsparkey built from $src"
else
    echo "bench-python: no reference Sparkey source: sparkey-python runs on Cairn's libsparkey only" >&2
fi

cd "$work"
echo "== commit $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, $(uname -sr), $("$py" -V)"
"$py" "$repo/crates/python/bench/bench.py" ordered --n "${N_ORDERED:-200000}" --threads "${THREADS:-1,4}"
"$py" "$repo/crates/python/bench/bench.py" sparkey --n "${N_SPARKEY:-1000000}" --lookups "${N_SPARKEY:-1000000}" "${libs[@]}"
