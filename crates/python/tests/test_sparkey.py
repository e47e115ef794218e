"""The constant store: LogWriter, write_index, Reader, build, iter_log, verify."""

import pytest

import cairn
from cairn import sparkey


@pytest.mark.parametrize("compression", ["none", "snappy", "zstd"])
def test_write_index_read(tmp_path, compression):
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    with sparkey.LogWriter(log, compression=compression, block_size=1024) as w:
        assert w.path == log
        for i in range(1000):
            w.put(b"key-%04d" % i, b"value-%d" % i)
        w.put(bytearray(b"ba"), memoryview(b"mv"))
        w.delete(b"key-0001")
        w.flush()
    assert sparkey.write_index(index, log) == "fresh"
    assert sparkey.write_index(index, log) == "unchanged"
    with sparkey.Reader(index, log) as r:
        assert len(r) == 1000
        assert r[b"key-0002"] == b"value-2" and r.get(b"key-0002") == b"value-2"
        assert r.get(b"key-0001") is None and r.get(b"nope", b"d") == b"d"
        assert b"key-0003" in r and b"key-0001" not in r
        assert r[b"ba"] == b"mv"
        with pytest.raises(KeyError):
            r[b"key-0001"]
        assert r.get_many([b"key-0005", b"nope", bytearray(b"key-0999")]) == [b"value-5", None, b"value-999"]
        keys = list(r)
        assert len(keys) == 1000 and keys[0] == b"key-0000" and b"key-0001" not in keys
        items = list(r.items())
        assert items[1] == (b"key-0002", b"value-2")
        assert list(r.values())[0] == b"value-0"
        assert list(r.keys()) == keys
        assert r.info()["num_entries"] == 1000
    with pytest.raises(cairn.ClosedError):
        r.get(b"key-0002")
    assert sparkey.verify(index, log)["live_entries"] == 1000


def test_append_and_incremental_index(tmp_path):
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    sparkey.build(log, index, {b"a": b"1"}, seed=7, hash_size=64)
    w = sparkey.LogWriter.append(log)
    w.put(b"b", b"2")
    w.close()
    w.close()
    with pytest.raises(cairn.ClosedError):
        w.put(b"c", b"3")
    assert sparkey.write_index(index, log) == "incremental"
    r = sparkey.Reader(index)  # log path derived from the index path
    assert dict(r.items()) == {b"a": b"1", b"b": b"2"}
    assert r.info()["hash_size"] == 8 and r.info()["hash_seed"] == 7


def test_build_from_generator_and_iter_log(tmp_path):
    log, index = tmp_path / "g.spl", tmp_path / "g.spi"
    n = sparkey.build(log, index, ((b"%d" % i, b"v%d" % i) for i in range(10_000)), compression="zstd", block_size=4096)
    assert n == 10_000
    r = sparkey.Reader(index, log, pin_index=True, load_log=True, block_cache_bytes=1 << 20)
    assert r[b"9999"] == b"v9999" and len(r) == 10_000
    entries = list(sparkey.iter_log(log))
    assert entries[0] == ("put", b"0", b"v0") and len(entries) == 10_000
    w = sparkey.LogWriter.append(log)
    w.delete(b"0")
    w.close()
    assert list(sparkey.iter_log(log))[-1] == ("delete", b"0", b"")


def test_reader_is_a_mapping(tmp_path):
    import collections.abc

    sparkey.build(tmp_path / "m.spl", tmp_path / "m.spi", [(b"a", b"1")])
    r = sparkey.Reader(tmp_path / "m.spi")
    assert isinstance(r, collections.abc.Mapping)


def test_bad_arguments(tmp_path):
    with pytest.raises(cairn.InvalidArgumentError):
        sparkey.LogWriter(tmp_path / "x.spl", compression="lz4")
    with pytest.raises(cairn.InvalidArgumentError):
        sparkey.LogWriter(tmp_path / "x.spl", compression="snappy", block_size=1)
    sparkey.build(tmp_path / "x.spl", tmp_path / "x.spi", [])
    with pytest.raises(cairn.InvalidArgumentError):
        sparkey.write_index(tmp_path / "x.spi", tmp_path / "x.spl", hash_size=16)
    with pytest.raises(TypeError):
        sparkey.build(tmp_path / "y.spl", tmp_path / "y.spi", [("str", b"v")])
    with pytest.raises(TypeError):
        sparkey.Reader(tmp_path / "x.spi").get("str")
    with pytest.raises(cairn.IOError):
        sparkey.Reader(tmp_path / "none.spi")
