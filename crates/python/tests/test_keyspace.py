"""Keyspace: the MutableMapping protocol over bytes, scans, attributes, counters, range deletes."""

import collections.abc
import time

import pytest

import cairn


def test_is_a_mutable_mapping(db):
    ks = db.keyspace("k")
    assert isinstance(ks, collections.abc.MutableMapping)
    assert ks.name == "k"
    assert "Keyspace" in repr(ks)


def test_set_get_del_contains_len(db):
    ks = db.keyspace("k")
    assert len(ks) == 0 and not ks and ks.is_empty()
    ks[b"b"] = b"2"
    ks[b"a"] = b"1"
    assert ks[b"a"] == b"1" and isinstance(ks[b"a"], bytes)
    assert b"a" in ks and b"zz" not in ks
    assert len(ks) == 2 and ks
    assert ks.get(b"zz") is None and ks.get(b"zz", b"d") == b"d" and ks.get(b"a") == b"1"
    with pytest.raises(KeyError) as e:
        ks[b"zz"]
    assert e.value.args[0] == b"zz"
    del ks[b"a"]
    with pytest.raises(KeyError):
        del ks[b"a"]
    ks.remove(b"a")  # absent: no error
    assert list(ks) == [b"b"]


def test_buffer_types_in_bytes_out(db):
    ks = db.keyspace("k")
    ks[bytearray(b"ba")] = bytearray(b"v1")
    ks[memoryview(b"mv")] = memoryview(b"v2")
    ks.insert(b"e", b"")
    assert ks[b"ba"] == b"v1" and ks[memoryview(b"mv")] == b"v2" and ks[b"e"] == b""
    assert type(ks[bytearray(b"ba")]) is bytes


@pytest.mark.parametrize("bad", ["text", 1, None, [1, 2], 1.5])
def test_bad_key_types_raise_type_error(db, bad):
    ks = db.keyspace("k")
    with pytest.raises(TypeError):
        ks[bad] = b"v"
    with pytest.raises(TypeError):
        ks[bad]
    with pytest.raises(TypeError):
        ks[b"k"] = bad


def test_iteration_views_in_key_order(db):
    ks = db.keyspace("k")
    for i in [5, 1, 3, 2, 4]:
        ks[b"k%d" % i] = b"v%d" % i
    keys = [b"k%d" % i for i in range(1, 6)]
    assert list(ks) == keys
    assert list(reversed(ks)) == keys[::-1]
    assert list(ks.keys()) == keys and len(ks.keys()) == 5 and b"k1" in ks.keys()
    assert list(ks.values()) == [b"v%d" % i for i in range(1, 6)]
    assert list(ks.items()) == [(b"k%d" % i, b"v%d" % i) for i in range(1, 6)]
    assert list(reversed(ks.items()))[0] == (b"k5", b"v5")
    assert ks.first() == (b"k1", b"v1") and ks.last() == (b"k5", b"v5")
    assert dict(ks) == {b"k%d" % i: b"v%d" % i for i in range(1, 6)}


def test_range_and_prefix(db):
    ks = db.keyspace("k")
    for k in [b"a", b"ab", b"abc", b"b", b"ba", b"c"]:
        ks[k] = k.upper()
    assert [k for k, _ in ks.range(b"ab", b"ba")] == [b"ab", b"abc", b"b"]
    assert [k for k, _ in ks.range(b"ab", b"ba", reverse=True)] == [b"b", b"abc", b"ab"]
    assert [k for k, _ in ks.range(None, b"b")] == [b"a", b"ab", b"abc"]
    assert [k for k, _ in ks.range(b"b")] == [b"b", b"ba", b"c"]
    assert list(ks.prefix(b"ab")) == [(b"ab", b"AB"), (b"abc", b"ABC")]
    assert [k for k, _ in ks.prefix(b"b", reverse=True)] == [b"ba", b"b"]
    assert list(ks.prefix(b"zz")) == []
    heads = list(ks.range_heads(b"a", b"b"))
    assert [k for k, _ in heads] == [b"a", b"ab", b"abc"] and heads[2][1].value_len == 3
    assert [k for k, _ in ks.prefix_heads(b"b")] == [b"b", b"ba"]


def test_long_scan_crosses_chunks_and_is_a_point_in_time(db):
    ks = db.keyspace("k")
    ks.update((b"%06d" % i, b"x" * (i % 7)) for i in range(3000))
    it = iter(ks.items())
    first = next(it)
    ks[b"999999"] = b"late"  # written after the scan began: not seen
    rest = list(it)
    assert first == (b"000000", b"") and len(rest) == 2999
    assert rest[-1][0] == b"002999"
    assert len(ks) == 3001


def test_insert_with_attributes_and_head(db):
    ks = db.keyspace("k")
    ks.insert(b"png", b"\x89PNG", meta=b"image/png", tag=7)
    h = ks.head(b"png")
    assert isinstance(h, cairn.Head)
    assert (h.value_len, h.tag, h.meta, h.expires_at_ms, h.separated) == (4, 7, b"image/png", None, False)
    assert h.seqno > 0 and "Head(" in repr(h)
    assert ks.head(b"none") is None
    ks.insert(b"t", b"v", ttl=3600)
    assert ks.head(b"t").expires_at > time.time()
    ks.insert(b"old", b"v", expires_at=time.time() - 10)
    assert b"old" not in ks
    ks.insert(b"gone", b"v", ttl=0.05)
    time.sleep(0.2)
    assert ks.get(b"gone") is None
    with pytest.raises(cairn.InvalidArgumentError):
        ks.insert(b"x", b"v", ttl=-1)
    with pytest.raises(ValueError):
        ks.insert(b"x", b"v", ttl=float("nan"))


def test_per_write_durability(db):
    ks = db.keyspace("k")
    for d in ["sync", "buffered", "none", "periodic", "periodic:5", "async", "async:8"]:
        ks.insert(b"k", d.encode(), durability=d)
        assert ks[b"k"] == d.encode()
    ks.remove(b"k", durability="buffered")
    with pytest.raises(cairn.InvalidArgumentError, match="durability"):
        ks.insert(b"k", b"v", durability="fast")


def test_counters(db):
    ks = db.keyspace("k")
    assert ks.incr(b"n") == 1
    assert ks.incr(b"n", 10) == 11
    assert ks.decr(b"n", 20) == -9
    assert ks.decr(b"m") == -1
    assert ks[b"n"] == b"-9"
    ks[b"text"] = b"n/a"
    with pytest.raises(cairn.NotACounterError) as e:
        ks.incr(b"text")
    assert isinstance(e.value, ValueError) and e.value.key == b"text" and e.value.value_prefix == b"n/a"
    ks[b"big"] = str(2**63 - 1).encode()
    with pytest.raises(cairn.CounterOverflowError) as e:
        ks.incr(b"big")
    assert isinstance(e.value, OverflowError) and e.value.current == 2**63 - 1 and e.value.delta == 1


def test_remove_range_prefix_clear(db):
    ks = db.keyspace("k")
    ks.update({b"a1": b"", b"a2": b"", b"b1": b"", b"b2": b"", b"c": b""})
    ks.remove_range(b"a2", b"b2")
    assert list(ks) == [b"a1", b"b2", b"c"]
    ks.remove_prefix(b"b")
    assert list(ks) == [b"a1", b"c"]
    ks.remove_range(None, b"b")
    assert list(ks) == [b"c"]
    ks.clear()
    assert len(ks) == 0


def test_mapping_mixins(db):
    ks = db.keyspace("k")
    ks.update([(b"a", b"1"), (b"b", b"2")])
    ks.update({b"c": b"3"})
    ks.update()
    assert ks.pop(b"a") == b"1"
    assert ks.pop(b"a", None) is None
    with pytest.raises(KeyError):
        ks.pop(b"a")
    assert ks.setdefault(b"b", b"x") == b"2"
    assert ks.setdefault(b"d", b"4") == b"4" and ks[b"d"] == b"4"
    assert ks.popitem() == (b"b", b"2")
    ks.clear()
    with pytest.raises(KeyError):
        ks.popitem()


def test_blob_separated_values(db):
    media = db.keyspace("media", blob_threshold=1024)
    media[b"big"] = b"x" * 100_000
    db.flush()
    assert media.head(b"big").separated and media[b"big"] == b"x" * 100_000
    assert media.disk_size() >= 0


def test_key_too_long_is_invalid_argument(db):
    ks = db.keyspace("k")
    with pytest.raises(cairn.InvalidArgumentError) as e:
        ks[b"k" * 70_000] = b"v"
    assert isinstance(e.value, ValueError) and isinstance(e.value, cairn.Error)


def test_iterator_seek(db):
    ks = db.keyspace("k")
    ks.update((b"%02d" % i, b"v%d" % i) for i in range(0, 20, 2))  # 00 02 ... 18
    it = ks.range(b"04", b"14")
    assert next(it) == (b"04", b"v4")
    it.seek(b"09")
    assert [k for k, _ in it] == [b"10", b"12"]
    it.seek(b"00")  # before the range: clamped to its start
    assert next(it)[0] == b"04"
    it.seek(b"99")  # past the range: nothing
    assert list(it) == []
    rev = ks.range(b"04", b"14", reverse=True)
    rev.seek(b"09")
    assert [k for k, _ in rev] == [b"08", b"06", b"04"]
    rev.seek(b"99")  # clamped to the range's end (excluded)
    assert next(rev)[0] == b"12"
    keys = ks.prefix_heads(b"1")
    keys.seek(b"15")
    assert [k for k, _ in keys] == [b"16", b"18"]
    ks[b"11"] = b"new"  # a scan without a snapshot sees the store as it is at the seek
    it2 = iter(ks)
    it2.seek(b"10")
    assert next(it2) == b"10" and next(it2) == b"11"
    with db.snapshot() as s:
        scan = s.items(ks)
        ks[b"13"] = b"after the snapshot"
        scan.seek(b"12")
        assert [k for k, _ in scan] == [b"12", b"14", b"16", b"18"]


def test_get_many_reads_a_list_in_order(db):
    ks = db.keyspace("k")
    ks.update({b"a": b"1", b"b": b"", b"c": b"3" * 1000})
    assert ks.get_many([b"c", b"zz", b"a", bytearray(b"b"), memoryview(b"a")]) == [
        b"3" * 1000, None, b"1", b"", b"1"]
    assert ks.get_many([]) == [] and ks.get_many(k for k in [b"a"]) == [b"1"]
    with pytest.raises(TypeError):
        ks.get_many([b"a", "text"])
    with pytest.raises(TypeError):
        ks.get_many(7)


def test_point_reads_agree_from_memory_and_from_disk(path):
    # A point read answers from memory with the GIL held when it can, and releases the
    # GIL for the full read (through a reused per-thread buffer) when the value needs
    # I/O: a separated value, a block not cached yet. Both must return the same values,
    # in any order and mixed in one get_many.
    big = bytes(range(256)) * (64 << 10)  # 16 MiB
    with cairn.Db(path) as db:
        media = db.keyspace("media", blob_threshold=1024)
        media[b"big"] = big
        media[b"small"] = b"s" * 2000
        media[b"tiny"] = b"t"
        for i in range(2000):
            media[b"k%05d" % i] = b"v%d" % i
        db.flush()
    with cairn.Db(path) as db:  # every block on disk, none cached
        media = db.keyspace("media")
        media[b"fresh"] = b"in the memtable"
        for _ in range(3):
            assert media[b"big"] == big
            for i in range(0, 2000, 7):
                assert media[b"k%05d" % i] == b"v%d" % i
                assert (b"k%05d" % i) in media and (b"x%05d" % i) not in media
            assert media[b"small"] == b"s" * 2000 and media.get(b"tiny") == b"t"
            assert media.get(b"none") is None and b"tiny" in media and b"none" not in media
            assert media.get_many([b"tiny", b"big", b"fresh", b"k01999", b"none", b"k00003"]) == [
                b"t", big, b"in the memtable", b"v1999", None, b"v3"]


def test_point_reads_raise_closed_after_close(path):
    db = cairn.Db(path)
    ks = db.keyspace("k")
    ks[b"a"] = b"1"
    db.close()
    for read in (lambda: ks[b"a"], lambda: ks.get(b"a"), lambda: b"a" in ks,
                 lambda: ks.get_many([b"a"])):
        with pytest.raises(cairn.ClosedError):
            read()
