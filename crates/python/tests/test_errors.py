"""The exception hierarchy, and damaged files raising CorruptionError naming file and offset."""

import os

import pytest

import cairn
from cairn import sparkey


def test_hierarchy():
    assert issubclass(cairn.Error, Exception)
    for cls in [
        cairn.IOError, cairn.CorruptionError, cairn.UnsupportedVersionError,
        cairn.IdentifierMismatchError, cairn.BadInputError, cairn.InvalidArgumentError,
        cairn.PoisonedError, cairn.StoppedError, cairn.ReadOnlyError, cairn.NotACounterError,
        cairn.CounterOverflowError, cairn.FeatureDisabledError, cairn.ClosedError,
    ]:
        assert issubclass(cls, cairn.Error), cls
    assert issubclass(cairn.InvalidArgumentError, ValueError)
    assert issubclass(cairn.IOError, OSError)
    assert issubclass(cairn.UnsupportedVersionError, cairn.CorruptionError)
    assert issubclass(cairn.IdentifierMismatchError, cairn.CorruptionError)
    assert cairn.errors.Error is cairn.Error


def test_io_error_carries_errno_and_filename(tmp_path):
    log = tmp_path / "x.spl"
    sparkey.LogWriter(log).close()
    with pytest.raises(cairn.IOError) as e:
        sparkey.Reader(tmp_path / "missing.spi", log)
    assert isinstance(e.value, OSError)
    assert e.value.errno == 2 and e.value.filename.endswith("missing.spi") and e.value.op == "open"


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x40]))


def test_damaged_table_is_corruption_naming_file_and_offset(path):
    with cairn.Db(path) as db:
        ks = db.keyspace("k")
        ks.update((b"%06d" % i, b"value-%d" % i) for i in range(5000))
        db.flush()
    tables = sorted(p for p in os.listdir(path) if p.endswith(".sst"))
    assert tables
    table = os.path.join(path, tables[0])
    flip(table, os.path.getsize(table) // 3)
    with pytest.raises(cairn.CorruptionError) as e:
        cairn.verify(path)
    err = e.value
    assert err.file == "table file" and err.path.endswith(tables[0])
    assert isinstance(err.offset, int) and err.reason and str(err.offset) in str(err)
    with cairn.Db(path) as db:  # opening works; reading the damaged block fails cleanly
        with pytest.raises(cairn.CorruptionError):
            list(db.keyspace("k").items())
        with pytest.raises(cairn.CorruptionError):
            db.verify()


def test_damaged_sparkey_index_is_corruption(tmp_path):
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    sparkey.build(log, index, [(b"k%d" % i, b"v") for i in range(100)])
    with open(index, "r+b") as f:
        f.write(b"\0\0\0\0")
    with pytest.raises(cairn.CorruptionError) as e:
        sparkey.Reader(index, log)
    assert e.value.file == "index file" and e.value.offset == 0 and "magic" in e.value.reason


def test_mismatched_sparkey_pair(tmp_path):
    sparkey.build(tmp_path / "a.spl", tmp_path / "a.spi", [(b"a", b"1")])
    sparkey.build(tmp_path / "b.spl", tmp_path / "b.spi", [(b"b", b"2")])
    with pytest.raises(cairn.IdentifierMismatchError):
        sparkey.Reader(tmp_path / "a.spi", tmp_path / "b.spl")


def test_truncated_sparkey_log(tmp_path):
    log, index = tmp_path / "x.spl", tmp_path / "x.spi"
    sparkey.build(log, index, [(b"k%d" % i, b"v" * 50) for i in range(100)])
    os.truncate(log, os.path.getsize(log) // 2)
    with pytest.raises(cairn.CorruptionError):
        reader = sparkey.Reader(index, log)
        [reader.get(b"k%d" % i) for i in range(100)]
