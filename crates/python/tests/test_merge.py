"""Merge operators from Python: counters and appends written without a read, in single
writes, batches and transactions; a keyspace without an operator refuses operands;
``MergeError`` when operands cannot be combined; the operator comes back on reopen."""

import pytest

import cairn


@pytest.fixture
def db(path):
    with cairn.Db(path, durability="buffered") as d:
        yield d


def test_counters_via_merge(db):
    hits = db.keyspace("hits", merge_operator="cairn.add_i64")
    for delta in (b"5", b"-2", b"10"):
        hits.merge(b"home", delta)
    assert hits[b"home"] == b"13"
    assert hits.incr(b"home", 1) == 14  # counters read through operands
    hits.merge(b"home", b"1", durability="sync")
    assert hits[b"home"] == b"15"
    with pytest.raises(cairn.InvalidArgumentError):
        hits.merge(b"home", b"07")  # not the canonical text of an i64
    assert hits[b"home"] == b"15"


def test_append_with_and_without_separator(db):
    plain = db.keyspace("plain_log", merge_operator="cairn.append")
    plain.merge(b"k", b"ab")
    plain.merge(b"k", bytearray(b"cd"))
    assert plain[b"k"] == b"abcd"
    log = db.keyspace("log", merge_operator=("cairn.append", b","))
    log[b"k"] = b"start"
    log.merge(b"k", b"a")
    log.merge(b"k", memoryview(b"b"))
    assert log[b"k"] == b"start,a,b"


def test_bad_operator_arguments(db):
    with pytest.raises(cairn.InvalidArgumentError):
        db.keyspace("x", merge_operator="no.such")
    with pytest.raises(cairn.InvalidArgumentError):
        db.keyspace("x", merge_operator=("cairn.add_i64", b","))
    with pytest.raises(TypeError):
        db.keyspace("x", merge_operator=42)


def test_merge_without_an_operator_is_refused(db):
    ks = db.keyspace("plain")
    with pytest.raises(cairn.InvalidArgumentError):
        ks.merge(b"k", b"1")
    assert b"k" not in ks


def test_merge_error_when_operands_cannot_be_combined(db):
    hits = db.keyspace("hits", merge_operator="cairn.add_i64")
    hits[b"word"] = b"abc"
    hits.merge(b"word", b"1")
    with pytest.raises(cairn.MergeError) as info:
        hits[b"word"]
    assert isinstance(info.value, cairn.Error)
    assert info.value.operator == "cairn.add_i64"
    assert info.value.key == b"word"
    assert info.value.detail
    hits[b"word"] = b"40"  # a put replaces the operands
    hits.merge(b"word", b"2")
    assert hits[b"word"] == b"42"


def test_merge_in_a_batch(db):
    hits = db.keyspace("hits", merge_operator="cairn.add_i64")
    log = db.keyspace("log", merge_operator=("cairn.append", b"\n"))
    plain = db.keyspace("plain")
    with db.batch() as b:
        b.merge(hits, b"n", b"3")
        b.merge(hits, b"n", b"4")
        b.merge(log, b"l", b"x")
    assert hits[b"n"] == b"7" and log[b"l"] == b"x"
    b = db.batch()
    b.merge(hits, b"n", b"1")
    b.merge(plain, b"k", b"1")
    with pytest.raises(cairn.InvalidArgumentError):
        b.commit()
    assert hits[b"n"] == b"7"  # nothing of the refused batch was written
    assert b"k" not in plain


def test_merge_in_a_transaction(db):
    hits = db.keyspace("hits", merge_operator="cairn.add_i64")
    plain = db.keyspace("plain")
    hits.merge(b"n", b"10")
    with db.transaction() as tx:
        tx.merge(hits, b"n", b"5")
        assert tx.get(hits, b"n") == b"15"  # its own merge, at once
        assert hits[b"n"] == b"10"  # not yet outside
    assert hits[b"n"] == b"15"
    tx = db.transaction()
    tx.merge(hits, b"n", b"1")
    tx.merge(plain, b"k", b"1")
    with pytest.raises(cairn.InvalidArgumentError):
        tx.commit()
    assert hits[b"n"] == b"15"
    assert b"k" not in plain


def test_operands_survive_reopen(path):
    with cairn.Db(path, durability="buffered") as db:
        hits = db.keyspace("hits", merge_operator="cairn.add_i64")
        hits.merge(b"n", b"2")
        hits.merge(b"n", b"3")
        log = db.keyspace("log", merge_operator=("cairn.append", b","))
        log.merge(b"l", b"a")
    with cairn.Db(path, durability="buffered") as db:
        with pytest.raises(cairn.InvalidArgumentError):
            db.keyspace("hits", merge_operator="cairn.append")  # another operator
        hits = db.keyspace("hits", merge_operator="cairn.add_i64")
        assert hits[b"n"] == b"5"
        hits.merge(b"n", b"1")
        assert hits[b"n"] == b"6"
        log = db.keyspace("log", merge_operator=("cairn.append", b","))
        log.merge(b"l", b"b")
        assert log[b"l"] == b"a,b"
