#!/usr/bin/env bash
# Installs the system packages cairn-bench needs for its reference peers:
#   libsnappy-dev  - sparkey-sys compiles the bundled Sparkey C and links -lsnappy
#   libcdb-dev     - tinycdb (cdb.h, -lcdb; pulls in the libcdb1 runtime)
#   gcc            - C compiler for sparkey-sys's build script
# Idempotent and quiet: does nothing when all are already installed.
set -euo pipefail

packages=(libsnappy-dev libcdb-dev gcc)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-peers.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { "${sudo[@]}" apt-get update -qq && \
       "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-peers.sh: failed to install: ${missing[*]}" >&2
  exit 1
fi
