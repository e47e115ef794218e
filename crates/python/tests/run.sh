#!/usr/bin/env bash
# The Python package `cairn` (crates/python): builds the abi3 wheel with maturin in a
# fresh virtualenv, installs it there and runs the pytest suite (tests/) against the
# installed wheel, from outside the source tree so the package under test is the wheel.
#
# Usage: crates/python/tests/run.sh [pytest args...]   (honours CARGO_TARGET_DIR)
# CAIRN_PYTHON_PROFILE=dev builds with the dev profile instead of --release (faster to
# build on 2 cores, slower to run; the suite passes with either).
# Needs python3 with venv and network access to PyPI (maturin and pytest, pinned below).
# On 2 cores: about 2.5 min from a cold target directory (the release build 140 s), under
# a minute when the engine's release build is already there; pytest itself about 7 s.
set -euo pipefail
cd "$(dirname "$0")/../../.."
repo=$PWD
profile=${CAIRN_PYTHON_PROFILE:-release}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! python3 -m venv "$work/venv" 2>/dev/null; then
    # Without ensurepip (python3-venv missing its wheels): a venv without pip, then pip
    # from the interpreter's own ensurepip if present, else get it with the system pip.
    rm -rf "$work/venv"
    python3 -m venv --without-pip "$work/venv"
    "$work/venv/bin/python" -m ensurepip -q 2>/dev/null ||
        python3 -m pip --python "$work/venv/bin/python" install -q pip
fi
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check maturin==1.16.0 pytest==9.2.0

started=$SECONDS
if [ "$profile" = release ]; then
    build_profile=(--release)
else
    build_profile=(--profile "$profile")
fi
"$work/venv/bin/maturin" build --locked "${build_profile[@]}" -q \
    -m crates/python/Cargo.toml -i "$py" -o "$work/wheels"
echo "maturin build (${profile}) took $((SECONDS - started)) s"
wheel=$(ls "$work"/wheels/cairn-*.whl)
case "$wheel" in
    *-abi3-*) ;;
    *) echo "run.sh: expected an abi3 wheel, got $wheel" >&2; exit 1 ;;
esac
echo "built $(basename "$wheel")"
"$py" -m pip install -q --disable-pip-version-check "$wheel"

cd "$work"
"$py" -m pytest -q -p no:cacheprovider "$repo/crates/python/tests" "$@"
