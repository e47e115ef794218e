"""sparkey-python (the PyPI binding, ctypes over libsparkey.so) against Cairn's library.

Usage: python sparkey_python_test.py LIBDIR OUTDIR

For each compression (none, snappy, zstd) writes a log through HashWriter in two sessions
(puts, deletes, an overwrite, a flush that updates the index incrementally, an append),
reads it back with HashReader (lookups, membership, iteration) and LogReader (every
entry), and compares everything with a model kept here. Leaves, per store, OUTDIR/<name>.spl
and .spi plus <name>.expected (sorted `hex(key)<TAB>hex(value)` of the live entries) and
<name>.log.expected (`PUT/DELETE<TAB>hex(key)[<TAB>hex(value)]` in log order) for Cairn's
CLI to check. Then reads every reference test vector (../shared/vectors/sparkey from the
repository root) through the binding: hash iteration, lookups and log iteration against
the .expected files. Exits non-zero on the first mismatch.
"""

import os
import sys

import sparkey

LIBDIR, OUTDIR = sys.argv[1], sys.argv[2]


def loaded_libsparkey():
    """Path of the libsparkey the binding loaded (from this process's mappings)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libsparkey" in os.path.basename(path):
                return os.path.realpath(path)
    return None


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


lib = loaded_libsparkey()
check(lib is not None and lib.startswith(os.path.realpath(LIBDIR)),
      "sparkey-python loaded %r, not Cairn's library from %s" % (lib, LIBDIR))
print("sparkey-python %s loaded %s" % (getattr(sparkey, "__version__", "0.3.0"), lib))

STORES = [
    ("none", sparkey.Compression.NONE, 0),
    ("snappy", sparkey.Compression.SNAPPY, 1024),
    # The binding has no ZSTD constant; it passes the integer through (spec §13).
    ("zstd", 2, 4096),
]


def key(i):
    return b"key-%05d" % i


def value(i, session):
    return (b"v%d-" % session) + bytes((i * 7 + j) % 256 for j in range(i % 300))


for name, compression, block_size in STORES:
    spl = os.path.join(OUTDIR, name + ".spl")
    spi = os.path.join(OUTDIR, name + ".spi")
    model = {}
    log_model = []

    def put(w, k, v):
        w.put(k, v)
        model[k] = v
        log_model.append(("PUT", k, v))

    def delete(w, k):
        w.delete(k)
        model.pop(k, None)
        log_model.append(("DELETE", k, b""))

    w = sparkey.HashWriter(spi, spl, compression_type=compression,
                           compression_block_size=block_size)
    for i in range(3000):
        put(w, key(i), value(i, 1))
        if i % 7 == 6:
            delete(w, key(i - 3))
    delete(w, b"never-written")
    w.flush()  # log flush + index build
    check(w.get(key(0)) == value(0, 1), name + ": lookup through the writer after flush")
    for i in range(0, 3000, 5):
        put(w, key(i), value(i, 2))  # overwrites after an index exists
    put(w, b"", b"empty key")
    w.flush()  # incremental index update
    w.close()

    # Second session: append through a plain LogWriter, then rebuild the index.
    lw = sparkey.LogWriter(spl, mode="APPEND")
    for i in range(3000, 3100):
        put(lw, key(i), value(i, 3))
    delete(lw, key(1))
    lw.close()
    sparkey.writehash(spi, spl)

    r = sparkey.HashReader(spi, spl)
    check(len(r) == len(model), "%s: len %d, model %d" % (name, len(r), len(model)))
    for k, v in model.items():
        check(r[k] == v, "%s: value of %r" % (name, k))
    check(r.get(key(3)) is None and key(3) not in r, name + ": a deleted key is absent")
    check(r.get(b"never-written") is None, name + ": an absent key")
    check(key(1) not in r and key(0) in r, name + ": membership")
    live = dict(r.iteritems())
    check(live == model, name + ": hash iteration equals the model")
    r.close()

    entries = []
    log = sparkey.LogReader(spl)
    for k, v, t in log:
        entries.append(("PUT" if t == sparkey.IterType.PUT else "DELETE", k, v))
    log.close()
    check(entries == log_model, "%s: log iteration (%d entries, model %d)"
          % (name, len(entries), len(log_model)))

    with open(os.path.join(OUTDIR, name + ".expected"), "w") as f:
        for k in sorted(model):
            f.write("%s\t%s\n" % (k.hex(), model[k].hex()))
    with open(os.path.join(OUTDIR, name + ".log.expected"), "w") as f:
        for t, k, v in log_model:
            f.write("PUT\t%s\t%s\n" % (k.hex(), v.hex()) if t == "PUT" else "DELETE\t%s\n" % k.hex())
    print("%s: %d log entries, %d live keys: ok" % (name, len(log_model), len(model)))

# The reference vectors (written by the reference library), read through the binding.
VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "../../../../../shared/vectors/sparkey")
cases = sorted(f[:-4] for f in os.listdir(VECTORS) if f.endswith(".spl"))
check(len(cases) >= 13, "reference vectors not found in %s" % VECTORS)
for case in cases:
    spl = os.path.join(VECTORS, case + ".spl")
    spi = os.path.join(VECTORS, case + ".spi")
    with open(os.path.join(VECTORS, case + ".expected")) as f:
        want = f.read()
    with open(os.path.join(VECTORS, case + ".log.expected")) as f:
        want_log = f.read()
    r = sparkey.HashReader(spi, spl)
    got = "".join("%s\t%s\n" % (k.hex(), v.hex()) for k, v in r.iteritems())
    check(got == want, case + ": hash iteration differs from .expected")
    for line in want.splitlines():
        k, v = line.split("\t")
        check(r[bytes.fromhex(k)] == bytes.fromhex(v), case + ": lookup of " + k)
    check(len(r) == len(want.splitlines()), case + ": len")
    r.close()
    log = sparkey.LogReader(spl)
    got = "".join("PUT\t%s\t%s\n" % (k.hex(), v.hex()) if t == sparkey.IterType.PUT
                  else "DELETE\t%s\n" % k.hex() for k, v, t in log)
    log.close()
    check(got == want_log, case + ": log iteration differs from .log.expected")
print("%d reference vectors read through sparkey-python: ok" % len(cases))

# The binding's error path: a missing file raises SparkeyException with Cairn's errstring.
try:
    sparkey.HashReader(os.path.join(OUTDIR, "missing.spi"), os.path.join(OUTDIR, "missing.spl"))
    check(False, "opening a missing pair raised nothing")
except sparkey.SparkeyException as e:
    check("File not found" in str(e), "missing pair: %s" % e)
print("sparkey-python against Cairn's libsparkey: all checks passed")
