#!/usr/bin/env bash
# Cairn <-> sparkey-java interop check.
#
# Proves that Sparkey files written by sparkey-java (com.spotify.sparkey:sparkey 3.2.5, an
# independent pure-Java implementation) are read correctly by Cairn's CLI, and that files
# written by Cairn's CLI are read correctly by sparkey-java:
#   Java -> Cairn: `Interop write` makes java_none / java_snappy (1 KiB blocks) / java_zstd
#                  (4 KiB blocks) / java_hash32_big (150,000 keys, 32-bit hash); for each,
#                  `cairn sparkey dump | sort` must equal the writer's expectation and
#                  `cairn sparkey verify` must exit 0.
#   Cairn -> Java: `Interop gen` makes deterministic TSV inputs, `cairn sparkey build`
#                  turns them into .spl/.spi (none; snappy -b 1024; zstd -b 4096;
#                  150,000 keys uncompressed), and `Interop read` checks each pair with
#                  sparkey-java (iteration, lookups, absent keys, entry count).
#
# Usage: interop/run.sh <path-to-cairn-binary>
# Needs: Maven and a JDK >= 17 (the jar is built here with `mvn -q -B package`).
# Env:   KEEP_TMP=1 keeps the scratch directory (its path is printed).
# Output: one PASS/FAIL line per check, then `interop: N passed, M failed`;
#         exit status 0 only if nothing failed.
set -uo pipefail
export LC_ALL=C   # bytewise sort order, identical to the Java side's

if [ $# -ne 1 ]; then
  echo "usage: $0 <path-to-cairn-binary>" >&2
  exit 2
fi
if [ ! -x "$1" ]; then
  echo "interop: cairn binary not found or not executable: $1" >&2
  exit 2
fi
CAIRN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
HERE=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cairn-interop.XXXXXX")
if [ "${KEEP_TMP:-0}" = 1 ]; then
  echo "interop: keeping scratch directory $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi

# --- build the Java harness ---------------------------------------------------------
if ! (cd "$HERE/java" && mvn -q -B package) >"$tmp/mvn.log" 2>&1; then
  echo "interop: building the Java harness failed:" >&2
  cat "$tmp/mvn.log" >&2
  exit 2
fi
JAR=$HERE/java/target/interop.jar
interop() { java -jar "$JAR" "$@"; }

passed=0
failed=0

# check NAME CMD...: runs CMD, prints PASS/FAIL; on failure shows the start of its output.
check() {
  local name=$1
  shift
  if "$@" >"$tmp/check.log" 2>&1; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    head -n 20 "$tmp/check.log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

# fail NAME REASON: records a check that could not run.
fail() {
  echo "FAIL $1"
  echo "    $2"
  failed=$((failed + 1))
}

# cairn_dump_matches SPI EXPECTED: Cairn's sorted dump equals the expectation.
cairn_dump_matches() {
  local out=$tmp/dump.$$.tsv
  "$CAIRN" sparkey dump "$1" >"$out.raw" || { echo "cairn sparkey dump exited $?"; return 1; }
  sort "$out.raw" >"$out"
  if ! diff -q "$2" "$out" >/dev/null; then
    echo "dump differs from $(basename "$2") (< expected, > cairn; first lines):"
    diff "$2" "$out" | cut -c1-160 | head -n 10
    return 1
  fi
}

# --- Java -> Cairn ------------------------------------------------------------------
mkdir -p "$tmp/j" "$tmp/c"
if interop write "$tmp/j" >"$tmp/write.log" 2>&1; then
  for c in java_none java_snappy java_zstd java_hash32_big; do
    check "java->cairn dump   $c" cairn_dump_matches "$tmp/j/$c.spi" "$tmp/j/$c.tsv"
    check "java->cairn verify $c" "$CAIRN" sparkey verify "$tmp/j/$c.spi"
  done
else
  fail "java write" "$(cat "$tmp/write.log")"
fi

# --- Cairn -> Java ------------------------------------------------------------------
# name | lines | seed | cairn build options | expected index hash size (blank: any)
cases=(
  "cairn_none|2000|11|-c none|"
  "cairn_snappy|2000|12|-c snappy -b 1024|"
  "cairn_zstd|2000|13|-c zstd -b 4096|"
  "cairn_big|150000|14|-c none|4"
)
for spec in "${cases[@]}"; do
  IFS='|' read -r name n seed opts hashsize _ <<<"$spec"
  in=$tmp/c/$name.in.tsv
  expected=$tmp/c/$name.expected.tsv
  if ! interop gen "$in" "$n" "$seed" "$expected" >/dev/null 2>"$tmp/gen.log"; then
    fail "cairn->java gen    $name" "$(cat "$tmp/gen.log")"
    continue
  fi
  # shellcheck disable=SC2086  # $opts is deliberately split into words
  check "cairn->java build  $name ($opts)" \
    "$CAIRN" sparkey build --format tsv $opts "$in" "$tmp/c/$name.spl"
  if [ ! -f "$tmp/c/$name.spl" ] || [ ! -f "$tmp/c/$name.spi" ]; then
    fail "cairn->java read   $name" "no $name.spl/$name.spi to read (build failed)"
    continue
  fi
  check "cairn->java read   $name" \
    interop read "$tmp/c/$name.spi" "$tmp/c/$name.spl" "$expected" ${hashsize:+--hash-size "$hashsize"}
done

echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
