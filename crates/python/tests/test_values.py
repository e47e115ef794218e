"""Large values as streams: Keyspace.open_value (ValueReader) and Keyspace.insert_from."""

import io
import os

import pytest

import cairn


def test_stream_a_separated_value(db):
    media = db.keyspace("media", blob_threshold=4096)
    data = os.urandom(300_000)
    media.insert_from(b"clip", io.BytesIO(data), len(data), meta=b"video/mp4", tag=1)
    h = media.head(b"clip")
    assert h.separated and h.value_len == len(data) and h.meta == b"video/mp4"
    with media.open_value(b"clip") as r:
        assert len(r) == len(data) and r.separated and r.readable() and r.seekable()
        assert r.read(10) == data[:10] and r.tell() == 10
        assert r.seek(-5, 2) == len(data) - 5 and r.read() == data[-5:]
        assert r.read() == b""
        r.seek(100_000)
        assert r.read(70_000) == data[100_000:170_000]
        assert r.seek(10, 1) == 170_010
        with pytest.raises(cairn.InvalidArgumentError):
            r.seek(-1)
        with pytest.raises(cairn.InvalidArgumentError):
            r.seek(0, 7)
    assert r.closed
    with pytest.raises(cairn.ClosedError):
        r.read()
    db.flush()
    assert media.open_value(b"clip").read() == data
    assert media.open_value(b"missing") is None


def test_inline_value_stream_and_limits(db):
    ks = db.keyspace("k")
    ks.insert_from(b"small", io.BytesIO(b"hello world"), 5)
    assert ks[b"small"] == b"hello"
    r = ks.open_value(b"small")
    assert not r.separated and r.read() == b"hello"
    with pytest.raises(cairn.IOError):
        ks.insert_from(b"short", io.BytesIO(b"abc"), 10)  # ends early: nothing written
    assert b"short" not in ks
    with pytest.raises(cairn.InvalidArgumentError):
        ks.insert_from(b"huge", io.BytesIO(b""), 64 << 20)  # over 32 MiB, kept inline


def test_insert_from_reraises_the_files_exception(db):
    class Broken:
        def read(self, n):
            raise RuntimeError("disk on fire")

    media = db.keyspace("media", blob_threshold=16)
    with pytest.raises(RuntimeError, match="disk on fire"):
        media.insert_from(b"x", Broken(), 100)
    assert b"x" not in media

    class Text:
        def read(self, n):
            return "text"

    with pytest.raises(TypeError):
        media.insert_from(b"y", Text(), 100)


def test_value_reader_closed_with_the_store(path):
    db = cairn.Db(path)
    ks = db.keyspace("k")
    ks[b"a"] = b"value"
    r = ks.open_value(b"a")
    db.close()
    with pytest.raises(cairn.ClosedError):
        r.read()
    with cairn.Db(path) as again:  # the stream held nothing open
        assert again["k"][b"a"] == b"value"
