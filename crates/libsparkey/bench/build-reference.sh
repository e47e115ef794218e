#!/usr/bin/env bash
# Builds the reference Sparkey C library (spotify/sparkey) into PREFIX without autotools:
# compiles the library's sources (src/Makefile.am's libsparkey_la_SOURCES) with cc into
# PREFIX/lib/libsparkey.so.0 (+ libsparkey.so link) and installs PREFIX/include/sparkey/sparkey.h.
#
# Usage: build-reference.sh SPARKEY_SOURCE_DIR PREFIX
# Needs cc, libsnappy-dev and libzstd-dev.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 SPARKEY_SOURCE_DIR PREFIX" >&2; exit 2; }
src=$1/src
prefix=$2
mkdir -p "$prefix/lib" "$prefix/include/sparkey"
sources=(buf.c hashalgorithms.c hashiter.c hashwriter.c logreader.c returncodes.c util.c
    endiantools.c hashheader.c hashreader.c logheader.c logwriter.c MurmurHash3.c compress.c)
cc -O2 -fPIC -shared -Wall -Wno-unused-parameter -I"$src" \
    "${sources[@]/#/$src/}" -lsnappy -lzstd \
    -Wl,-soname,libsparkey.so.0 -o "$prefix/lib/libsparkey.so.0"
ln -sf libsparkey.so.0 "$prefix/lib/libsparkey.so"
cp "$src/sparkey.h" "$prefix/include/sparkey/sparkey.h"
echo "reference libsparkey installed in $prefix"
