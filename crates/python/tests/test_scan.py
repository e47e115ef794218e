"""Scans against a model: random puts (short values and values separated into the value
log), removes, range removes and merge operands, with flushes and compactions between
them. Every way of iterating (items, keys, values, range, prefix, reverse, at a snapshot,
after a seek) must yield exactly the model's pairs in order, across many fetch chunks."""

import random
import threading

import pytest

import cairn

SEPARATE = 64


def value(rng, i):
    n = rng.choice([0, 1, 10, 100, SEPARATE, 3 * SEPARATE])
    return bytes((i + j) % 251 for j in range(n))


def apply_random_ops(db, ks, rng, model, n):
    for i in range(n):
        k = b"k%04d" % rng.randrange(600)
        roll = rng.random()
        if roll < 0.55:
            v = value(rng, i)
            ks[k] = v
            model[k] = v
        elif roll < 0.7:
            ks.remove(k)
            model.pop(k, None)
        elif roll < 0.72:
            end = b"k%04d" % (int(k[1:]) + rng.randrange(1, 30))
            ks.remove_range(k, end)
            for key in [key for key in model if k <= key < end]:
                del model[key]
        elif roll < 0.985:
            operand = b"m%d" % i
            ks.merge(k, operand)
            model[k] = model[k] + b"," + operand if k in model else operand
        elif roll < 0.997:
            db.flush()
        else:
            db.flush()
            db.compact()


def expected(model, start=None, end=None, reverse=False):
    pairs = sorted(
        (k, v)
        for k, v in model.items()
        if (start is None or k >= start) and (end is None or k < end)
    )
    return pairs[::-1] if reverse else pairs


def test_scans_yield_the_model(db):
    rng = random.Random(7)
    ks = db.keyspace("scan", blob_threshold=SEPARATE, merge_operator=("cairn.append", b","))
    model = {}
    for _ in range(4):
        apply_random_ops(db, ks, rng, model, 1500)
        everything = expected(model)
        assert len(everything) > 100
        assert list(ks.items()) == everything
        assert list(reversed(ks.items())) == everything[::-1]
        assert list(ks.keys()) == [k for k, _ in everything]
        assert list(ks.values()) == [v for _, v in everything]
        assert list(reversed(ks.values())) == [v for _, v in everything[::-1]]
        assert any(len(v) >= SEPARATE for _, v in everything)
        for _ in range(10):
            lo = b"k%04d" % rng.randrange(600)
            hi = b"k%04d" % rng.randrange(600)
            assert list(ks.range(lo, hi)) == expected(model, lo, hi)
            assert list(ks.range(lo, hi, reverse=True)) == expected(model, lo, hi, True)
            assert list(ks.range(lo)) == expected(model, lo)
            assert list(ks.range(None, hi, reverse=True)) == expected(model, None, hi, True)
        prefix = b"k01"
        assert list(ks.prefix(prefix)) == expected(model, prefix, b"k02")
        assert list(ks.prefix(prefix, reverse=True)) == expected(model, prefix, b"k02", True)


def test_snapshot_scans_and_seeks_yield_the_model(db):
    rng = random.Random(11)
    ks = db.keyspace("scan", blob_threshold=SEPARATE, merge_operator=("cairn.append", b","))
    model = {}
    apply_random_ops(db, ks, rng, model, 3000)
    before = dict(model)
    with db.snapshot() as s:
        apply_random_ops(db, ks, rng, model, 1000)
        assert model != before
        assert list(s.items(ks)) == expected(before)
        assert list(s.items(ks, reverse=True)) == expected(before, reverse=True)
        assert list(s.range(ks, b"k0100", b"k0300")) == expected(before, b"k0100", b"k0300")
        scan = s.items(ks)
        next(scan)
        scan.seek(b"k0250")
        assert list(scan) == expected(before, b"k0250")
    assert list(ks.items()) == expected(model)
    rev = ks.range(None, None, reverse=True)
    next(rev)
    rev.seek(b"k0400")
    assert list(rev) == [(k, v) for k, v in expected(model, reverse=True) if k <= b"k0400"]


def test_pairs_stay_whole_when_the_scan_is_shared_by_threads(db):
    ks = db.keyspace("scan")
    model = {b"%06d" % i: b"v" * (i % 50) + b"%d" % i for i in range(20_000)}
    ks.update(model)
    db.flush()
    it = iter(ks.items())
    seen = []
    lock = threading.Lock()

    def drain():
        local = list(it)
        with lock:
            seen.extend(local)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == sorted(model.items())


def test_an_iterator_after_close_raises_closed(path):
    db = cairn.Db(path)
    ks = db.keyspace("scan")
    ks.update((b"%04d" % i, b"v") for i in range(100))
    it = iter(ks.items())
    assert next(it) == (b"0000", b"v")
    db.close()
    with pytest.raises(cairn.ClosedError):
        next(it)
