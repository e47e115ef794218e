"""Threads sharing one store and one constant-store reader (the GIL is released in calls
that may do I/O; point reads answered from memory keep it)."""

import threading

import pytest

import cairn
from cairn import sparkey


def run_threads(n, target, timeout=120):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"
    assert errors == []


def test_threads_share_one_store(path):
    with cairn.Db(path, memtable_size=256 << 10, durability="buffered") as db:
        ks = db.keyspace("k")
        counters = db.keyspace("c")

        def work(t):
            for i in range(2000):
                ks[b"t%d-%05d" % (t, i)] = b"v%d" % i
                counters.incr(b"total")
                if i % 100 == 0:
                    assert ks[b"t%d-%05d" % (t, i)] == b"v%d" % i
                    assert len(list(ks.prefix(b"t%d-" % t))) == i + 1
                    with db.batch() as b:
                        b.insert(ks, b"batch-%d-%d" % (t, i), b"x")

        run_threads(8, work)
        assert int(counters[b"total"]) == 16_000
        assert len(ks) == 16_000 + 8 * 20
        assert db.verify()["files"] is not None


def test_threads_share_one_reader(tmp_path):
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    sparkey.build(log, index, ((b"%d" % i, b"v%d" % i) for i in range(20_000)), compression="snappy")
    r = sparkey.Reader(index, log)

    def work(t):
        for i in range(t, 20_000, 7):
            assert r[b"%d" % i] == b"v%d" % i
        keys = [b"%d" % i for i in range(t, 20_000, 13)]
        assert r.get_many(keys) == [b"v" + k for k in keys]

    run_threads(6, work)


def test_threads_share_a_reader_held_in_memory(tmp_path):
    # A reader with its index and log loaded into memory looks up with the GIL held; the
    # answers from many threads are the same as from a mapped reader's.
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    sparkey.build(log, index, ((b"%d" % i, b"v%d" % i) for i in range(20_000)), compression="snappy")
    mapped = sparkey.Reader(index, log)
    loaded = sparkey.Reader(index, log, pin_index=True, load_log=True)

    def work(t):
        for i in range(t, 20_000, 7):
            k = b"%d" % i
            assert loaded[k] == mapped[k] == b"v%d" % i
            assert k in loaded and (b"x" + k) not in loaded
        keys = [b"%d" % i for i in range(t, 20_000, 13)] + [b"absent"]
        assert loaded.get_many(keys) == mapped.get_many(keys) == [b"v" + k for k in keys[:-1]] + [None]

    run_threads(6, work)
    loaded.close()
    with pytest.raises(cairn.ClosedError):
        loaded.get(b"1")


def test_reader_closed_while_threads_read(tmp_path):
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    sparkey.build(log, index, ((b"%d" % i, b"v") for i in range(1000)))
    r = sparkey.Reader(index, log)
    stop = threading.Event()

    def work(t):
        while not stop.is_set():
            try:
                r.get(b"5")
            except cairn.ClosedError:
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    r.close()
    stop.set()
    for t in threads:
        t.join()


def test_close_while_threads_use_every_kind_of_handle(path):
    """Closing a store under load: every thread ends with ClosedError (or finishes), none
    crashes or hangs, and the store reopens with every acknowledged write."""
    import time

    db = cairn.Db(path, durability="buffered", memtable_size=128 << 10)
    ks = db.keyspace("k")
    ks.update((b"%05d" % i, b"v") for i in range(2000))
    acked = [[] for _ in range(6)]
    unexpected = []

    def work(t):
        i = 0
        try:
            while True:
                i += 1
                key = b"t%d-%07d" % (t, i)
                kind = t % 6
                if kind == 0:
                    ks[key] = b"x"
                    acked[t].append(key)
                elif kind == 1:
                    with db.batch() as b:
                        b.insert(ks, key, b"y")
                    acked[t].append(key)
                elif kind == 2:
                    for _ in ks.range(b"00100", b"00200"):
                        pass
                elif kind == 3:
                    with db.snapshot() as s:
                        s.get(ks, b"00001")
                        list(s.prefix(ks, b"0001"))
                elif kind == 4:
                    ks.get(b"00042")
                    ks.incr(b"counter")
                else:
                    db.stats()
                    ks.head(b"00007")
        except cairn.ClosedError:
            pass
        except BaseException as e:  # pragma: no cover - reported below
            unexpected.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    db.close()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive(), "a thread hung after close"
    assert unexpected == []
    with cairn.Db(path) as again:
        k = again["k"]
        for keys in acked:
            for key in keys:
                assert key in k


def test_readers_share_a_store_with_a_writer_that_flushes_and_stalls(path):
    # Readers whose keys are in the memtable, in tables whose blocks are cached or not,
    # and separated into blob files, while a writer fills tiny memtables (flushes, level-0
    # compactions, write stalls): every read is exact, through the GIL-held path from
    # memory and the GIL-released path alike, and no thread waits forever.
    with cairn.Db(path, memtable_size=64 << 10, block_cache_size=256 << 10, block_size=1024,
                  table_size=64 << 10, durability="buffered") as db:
        ks = db.keyspace("k")
        media = db.keyspace("media", blob_threshold=512)
        fixed = {b"fixed-%05d" % i: b"value-%d" % i for i in range(3000)}
        ks.update(fixed)
        for i in range(0, 3000, 100):
            media[b"blob-%05d" % i] = bytes([i % 251]) * 2000
        db.flush()
        ks[b"late"] = b"in the memtable"
        stop = threading.Event()
        keys = sorted(fixed)

        def writer():
            i = 0
            while not stop.is_set() and i < 200_000:
                ks[b"churn-%07d" % (i % 20_000)] = b"x" * 100
                i += 1

        w = threading.Thread(target=writer)
        w.start()
        try:

            def reader(t):
                for rnd in range(4):
                    for k in keys[t::5]:
                        assert ks[k] == fixed[k]
                        assert ks.get(k) == fixed[k]
                        assert k in ks
                        assert (k + b"-absent") not in ks
                    batch = keys[t::37]
                    assert ks.get_many(batch + [b"late", b"nope"]) == [fixed[k] for k in batch] + [
                        b"in the memtable", None]
                    for i in range(0, 3000, 100):
                        assert media[b"blob-%05d" % i] == bytes([i % 251]) * 2000
                    assert ks[b"late"] == b"in the memtable"

            run_threads(5, reader)
        finally:
            stop.set()
            w.join(120)
        assert not w.is_alive(), "the writer is stuck"
        assert db.stats()["flushes"] > 0


def test_puts_from_threads_with_and_without_the_gil(path):
    # Plain puts and removals are made with the GIL held when the engine writes them
    # without waiting, and with it released when it would wait: a sync write, a separated
    # value, a full memtable (tiny here, so switches are frequent). Threads doing each kind
    # at once lose no write and never deadlock; the store then holds exactly the last
    # values, before and after a reopen.
    expected = {}
    with cairn.Db(path, memtable_size=32 << 10, durability="buffered") as db:
        ks = db.keyspace("k")
        media = db.keyspace("media", blob_threshold=256)

        def work(t):
            for i in range(1500):
                key = b"t%d-%05d" % (t, i)
                if t == 0 and i % 50 == 0:
                    ks.insert(key, b"s%d" % i, durability="sync")
                elif t == 1 and i % 10 == 0:
                    media[key] = bytes([i % 251]) * 300
                else:
                    ks[key] = b"v%d" % i
                    ks.insert(key, b"w%d" % i)
                    if i % 7 == 3:
                        del ks[key]
                    elif i % 7 == 5:
                        ks.remove(key)

        run_threads(6, work)
        for t in range(6):
            for i in range(1500):
                key = b"t%d-%05d" % (t, i)
                if t == 0 and i % 50 == 0:
                    expected[(b"k", key)] = b"s%d" % i
                elif t == 1 and i % 10 == 0:
                    expected[(b"media", key)] = bytes([i % 251]) * 300
                elif i % 7 not in (3, 5):
                    expected[(b"k", key)] = b"w%d" % i

        def check(db):
            spaces = {b"k": db.keyspace("k"), b"media": db.keyspace("media")}
            for (space, key), value in expected.items():
                assert spaces[space][key] == value
            assert len(spaces[b"k"]) + len(spaces[b"media"]) == len(expected)

        check(db)
        assert db.stats()["flushes"] > 0
    with cairn.Db(path) as again:
        check(again)
