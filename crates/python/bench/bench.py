"""Cairn's Python package against other stores' Python bindings, same data, same run.

Usage:
  python bench.py ordered [--n N] [--threads 1,4] [--dir DIR]
  python bench.py sparkey [--n N] [--lookups M] [--lib NAME=DIR ...] [--dir DIR]

`ordered` runs the same workloads on Cairn (`cairn.Db`, durability "buffered": every
write handed to the OS, no fsync), python-lmdb (`sync=False`, one write transaction per
put), rocksdict (raw mode, default write options: WAL without fsync) and plyvel (LevelDB,
`sync=False`); a peer whose package is not installed is skipped, saying so. Keys are 16
bytes (`key-%012d`), values 100 bytes, written and read in one shuffled order:

  puts        N single puts, spread over T threads (each its own keys)
  puts_sync   2,000 single puts that each wait for an fsync (Cairn "sync"; the peers'
              sync write options), spread over T threads, on a fresh store
  gets        N random point reads of present keys over T threads
  scan        one forward iteration over all N pairs (1 thread)
  call        ns per call of a read of one hot key (the binding's per-call overhead)

`sparkey` builds and reads a constant store of N entries (16-byte keys, 100-byte values):
Cairn's `cairn.sparkey` (build() from a list, Reader.get per key, get_many in batches of
1000; both also from 4 threads) and sparkey-python 0.3.0 (ctypes over a libsparkey.so; one child process per
`--lib NAME=DIR`, the directory holding that libsparkey.so.0). Each side then checks the
other's files (entry count and 10,000 random keys): sparkey-python over each library reads
the files `cairn.sparkey` wrote, and `cairn.sparkey` reads the files each library wrote.
Rates are wall-clock.
Prints a table with the ratio Cairn / peer (above 1: Cairn is faster) and one JSON line
per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

VALUE_LEN = 100
SYNC_PUTS = 2000


def keys_for(n: int, seed: int = 19):
    keys = [b"key-%012d" % i for i in range(n)]
    random.Random(seed).shuffle(keys)
    return keys


# The same bytes in every process, so files written by one are checked by another.
_BLOB = bytes(random.Random(5).getrandbits(8) for _ in range(VALUE_LEN * 2))


def value_for(i: int, blob=_BLOB) -> bytes:
    off = i % VALUE_LEN
    return blob[off : off + VALUE_LEN]


def in_threads(threads: int, work) -> float:
    """Runs work(t) in `threads` threads; returns the wall-clock seconds."""
    errors = []

    def wrapped(t):
        try:
            work(t)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=wrapped, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed


# --- ordered-store adapters: open(path) -> (put, reader_factory, scan, close) -----------


def open_cairn(path, sync=False):
    import cairn

    db = cairn.Db(path, durability="sync" if sync else "buffered")
    ks = db.keyspace("bench")

    def scan():
        n = 0
        for _k, _v in ks.items():
            n += 1
        return n

    return ks.__setitem__, (lambda: ks.get), scan, db.close


def open_lmdb(path, sync=False):
    import lmdb

    env = lmdb.open(path, map_size=16 << 30, sync=sync, metasync=sync, max_readers=64)

    def put(k, v):
        with env.begin(write=True) as txn:
            txn.put(k, v)

    def reader():
        # A read transaction per thread, kept for the whole run (the usual LMDB pattern).
        return env.begin(buffers=False).get

    def scan():
        n = 0
        with env.begin() as txn:
            for _k, _v in txn.cursor():
                n += 1
        return n

    return put, reader, scan, env.close


def open_rocksdict(path, sync=False):
    from rocksdict import Options, Rdict, WriteOptions

    db = Rdict(path, options=Options(raw_mode=True))
    if sync:
        wo = WriteOptions()
        wo.sync = True
        db.set_write_options(wo)

    def scan():
        n = 0
        for _k, _v in db.items():
            n += 1
        return n

    return db.put, (lambda: db.get), scan, db.close


def open_plyvel(path, sync=False):
    import plyvel

    db = plyvel.DB(path, create_if_missing=True)
    put = (lambda k, v: db.put(k, v, sync=True)) if sync else db.put

    def scan():
        n = 0
        for _k, _v in db:
            n += 1
        return n

    return put, (lambda: db.get), scan, db.close


PEERS = {"cairn": open_cairn, "lmdb": open_lmdb, "rocksdict": open_rocksdict, "plyvel": open_plyvel}
PEER_MODULE = {"cairn": "cairn", "lmdb": "lmdb", "rocksdict": "rocksdict", "plyvel": "plyvel"}


def run_ordered(name, opener, n, threads, base):
    keys = keys_for(n)
    values = [value_for(i) for i in range(n)]
    out = {}
    path = os.path.join(base, f"{name}-t{threads}")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    put, reader, scan, close = opener(path)
    share = (n + threads - 1) // threads

    def do_puts(t):
        for i in range(t * share, min(n, (t + 1) * share)):
            put(keys[i], values[i])

    out["puts"] = n / in_threads(threads, do_puts)

    lookups = keys_for(n, seed=7)

    def do_gets(t):
        get = reader()
        for k in lookups[t * share : (t + 1) * share]:
            if get(k) is None:
                raise AssertionError(f"{name}: missing {k!r}")

    out["gets"] = n / in_threads(threads, do_gets)
    if threads == 1:
        start = time.perf_counter()
        count = scan()
        out["scan"] = count / (time.perf_counter() - start)
        if count != n:
            raise AssertionError(f"{name}: scan saw {count} of {n}")
        get = reader()
        hot, calls = keys[0], 200_000
        start = time.perf_counter()
        for _ in range(calls):
            get(hot)
        out["call_ns"] = (time.perf_counter() - start) / calls * 1e9
    close()
    shutil.rmtree(path, ignore_errors=True)

    # Puts that each wait for an fsync (Cairn: durability "sync", group commit shares
    # fsyncs between threads; the peers: their sync write option).
    sync_n = min(n, SYNC_PUTS)
    os.sync()  # start from a quiet disk: pending writeback would slow the first fsyncs
    os.makedirs(path)
    put, _reader, _scan, close = opener(path, sync=True)
    sync_share = (sync_n + threads - 1) // threads

    def do_sync_puts(t):
        for i in range(t * sync_share, min(sync_n, (t + 1) * sync_share)):
            put(keys[i], values[i])

    out["puts_sync"] = sync_n / in_threads(threads, do_sync_puts)
    close()
    shutil.rmtree(path, ignore_errors=True)
    return out


def fmt(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}"


def ratio(cairn, peer, higher_is_better=True):
    if not peer or not cairn:
        return "-"
    return f"{(cairn / peer) if higher_is_better else (peer / cairn):.2f}"


def ordered(args):
    base = args.dir or tempfile.mkdtemp(prefix="cairn-pybench-")
    threads_list = [int(t) for t in args.threads.split(",")]
    results = {}
    for name, opener in PEERS.items():
        try:
            __import__(PEER_MODULE[name])
        except ImportError as e:
            print(f"# {name}: not installed ({e}); skipped", flush=True)
            continue
        for t in threads_list:
            r = run_ordered(name, opener, args.n, t, base)
            results[(name, t)] = r
            for metric, value in r.items():
                print(json.dumps({"bench": "ordered", "store": name, "threads": t, "n": args.n,
                                  "metric": metric, "value": round(value, 2)}), flush=True)
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    peers = [p for p in PEERS if p != "cairn" and any(k[0] == p for k in results)]
    print()
    print(f"ordered store, N={args.n:,}, 16-byte keys, 100-byte values (ops/s; call: ns/call)")
    head = f"{'metric':<10} {'threads':>7} {'cairn':>12}" + "".join(
        f" {p:>12} {'cairn/' + p:>15}" for p in peers)
    print(head)
    for metric in ["puts", "puts_sync", "gets", "scan", "call_ns"]:
        for t in threads_list:
            c = results.get(("cairn", t), {}).get(metric)
            if c is None:
                continue
            line = f"{metric:<10} {t:>7} {fmt(c):>12}"
            for p in peers:
                v = results.get((p, t), {}).get(metric)
                line += f" {fmt(v) if v else '-':>12} {ratio(c, v, metric != 'call_ns'):>15}"
            print(line)
    print("(cairn/peer: how many times faster Cairn is; for call_ns, peer ns / Cairn ns)")


# --- constant store -----------------------------------------------------------------------


def sparkey_cairn(n, lookups, base):
    from cairn import sparkey

    keys = [b"key-%012d" % i for i in range(n)]
    pairs = [(k, value_for(i)) for i, k in enumerate(keys)]
    log, index = os.path.join(base, "cairn.spl"), os.path.join(base, "cairn.spi")
    start = time.perf_counter()
    sparkey.build(log, index, pairs)
    out = {"build": n / (time.perf_counter() - start)}
    rng = random.Random(1)
    probe = [keys[rng.randrange(n)] for _ in range(lookups)]
    r = sparkey.Reader(index, log)
    get = r.get
    start = time.perf_counter()
    for k in probe:
        if get(k) is None:
            raise AssertionError(k)
    out["get"] = lookups / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(0, lookups, 1000):
        r.get_many(probe[i : i + 1000])
    out["get_many"] = lookups / (time.perf_counter() - start)

    def reads(t):
        for k in probe[t::4]:
            get(k)

    out["get_4_threads"] = lookups / in_threads(4, reads)

    def batched_reads(t):
        mine = probe[t::4]
        for i in range(0, len(mine), 1000):
            r.get_many(mine[i : i + 1000])

    out["get_many_4_threads"] = lookups / in_threads(4, batched_reads)
    r.close()
    return out


def sparkey_python(n, lookups, base, name):
    import sparkey

    keys = [b"key-%012d" % i for i in range(n)]
    pairs = [(k, value_for(i)) for i, k in enumerate(keys)]
    log, index = os.path.join(base, f"{name}.spl"), os.path.join(base, f"{name}.spi")
    start = time.perf_counter()
    w = sparkey.LogWriter(log)
    for k, v in pairs:
        w.put(k, v)
    w.close()
    sparkey.writehash(index, log)
    out = {"build": n / (time.perf_counter() - start)}
    rng = random.Random(1)
    probe = [keys[rng.randrange(n)] for _ in range(lookups)]
    r = sparkey.HashReader(index, log)
    get = r.get
    start = time.perf_counter()
    for k in probe:
        if get(k) is None:
            raise AssertionError(k)
    out["get"] = lookups / (time.perf_counter() - start)
    r.close()
    out["reads_cairn_files"] = check_files(sparkey.HashReader, n, base, "cairn")
    with open("/proc/self/maps") as maps:
        lib = next((line.split()[-1] for line in maps if "libsparkey" in line), "?")
    out["library"] = os.path.realpath(lib)
    return out


def check_files(open_reader, n, base, name):
    """Checks the store `name` (written by another library) through `open_reader`."""
    index, log = os.path.join(base, f"{name}.spi"), os.path.join(base, f"{name}.spl")
    r = open_reader(index, log)
    if len(r) != n:
        raise AssertionError(f"{name}: {len(r)} entries, expected {n}")
    rng = random.Random(3)
    for _ in range(10_000):
        i = rng.randrange(n)
        if r.get(b"key-%012d" % i) != value_for(i):
            raise AssertionError(f"{name}: wrong value for key {i}")
    r.close()
    return "ok"


def sparkey_cmd(args):
    base = args.dir or tempfile.mkdtemp(prefix="cairn-pybench-sparkey-")
    results = {"cairn": sparkey_cairn(args.n, args.lookups, base)}
    for spec in args.lib:
        name, _, libdir = spec.partition("=")
        env = dict(os.environ, LD_LIBRARY_PATH=libdir, LIBRARY_PATH=libdir)
        child = subprocess.run(
            [sys.executable, __file__, "_sparkey_python", "--n", str(args.n),
             "--lookups", str(args.lookups), "--dir", base, "--name", name],
            env=env, capture_output=True, text=True)
        if child.returncode != 0:
            print(f"# sparkey-python on {name}: failed; skipped\n{child.stderr[-2000:]}", flush=True)
            continue
        results[f"sparkey-python/{name}"] = json.loads(child.stdout.strip().splitlines()[-1])
        from cairn import sparkey as cairn_sparkey

        results["cairn"][f"reads_{name}_files"] = check_files(cairn_sparkey.Reader, args.n, base, name)
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    for store, r in results.items():
        for metric, value in r.items():
            print(json.dumps({"bench": "sparkey", "store": store, "n": args.n, "metric": metric,
                              "value": value if isinstance(value, str) else round(value, 2)}))
    print()
    print(f"constant store, N={args.n:,} (build: entries/s, log + index; get: lookups/s, "
          f"{args.lookups:,} random keys)")
    c = results["cairn"]
    for store, r in results.items():
        if store == "cairn":
            continue
        print(f"  {store}: {r.get('library')}")
    print(f"{'metric':<14} {'cairn':>12}" + "".join(f" {s:>26} {'cairn/peer':>10}" for s in results if s != "cairn"))
    for metric in ["build", "get", "get_many", "get_4_threads", "get_many_4_threads"]:
        line = f"{metric:<14} {fmt(c[metric]):>12}"
        for s, r in results.items():
            if s == "cairn":
                continue
            v = r.get(metric)
            line += f" {fmt(v) if v else '-':>26} {ratio(c[metric], v):>10}"
        print(line)
    print("(get_many and the 4-thread rows have no sparkey-python counterpart)")
    checks = [f"{s}: {m}" for s, r in results.items() for m in r if m.startswith("reads_")]
    print("cross-reads checked (10,000 random keys and the entry count):", ", ".join(checks))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("ordered")
    o.add_argument("--n", type=int, default=200_000)
    o.add_argument("--threads", default="1,4")
    o.add_argument("--dir")
    s = sub.add_parser("sparkey")
    s.add_argument("--n", type=int, default=1_000_000)
    s.add_argument("--lookups", type=int, default=1_000_000)
    s.add_argument("--lib", action="append", default=[])
    s.add_argument("--dir")
    c = sub.add_parser("_sparkey_python")
    c.add_argument("--n", type=int)
    c.add_argument("--lookups", type=int)
    c.add_argument("--dir")
    c.add_argument("--name")
    args = p.parse_args()
    if args.cmd == "ordered":
        ordered(args)
    elif args.cmd == "sparkey":
        sparkey_cmd(args)
    else:
        print(json.dumps(sparkey_python(args.n, args.lookups, args.dir, args.name)))


if __name__ == "__main__":
    main()
