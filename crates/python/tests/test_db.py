"""Db: options, keyspaces, batches, snapshots, maintenance, read-only and follower opens."""

import errno
import os
import threading
import time

import pytest

import cairn


def test_context_manager_closes(path):
    with cairn.Db(path) as db:
        db.keyspace("k")[b"a"] = b"1"
        assert not db.closed and "cairn.Db" in repr(db)
    assert db.closed and "closed" in repr(db)
    db.close()  # a second close does nothing
    with cairn.Db(path) as db:  # reopen in the same process at once
        assert db.keyspace("k")[b"a"] == b"1"


def test_options(path):
    opts = dict(
        durability="buffered", create_if_missing=True, memtable_size=1 << 20,
        max_wal_size=8 << 20, block_cache_size=4 << 20, max_open_tables=64,
        block_size=4096, compression="zstd:3", bloom_bits_per_key=10,
        table_size=2 << 20, blob_threshold=4096, background_threads=1, salvage_wal=False,
    )
    with cairn.Db(path, **opts) as db:
        db.keyspace("k")[b"a"] = b"1"
    for c in ["none", "lz4", "snappy", "zstd"]:
        with cairn.Db(path, compression=c) as db:
            assert db.keyspace("k")[b"a"] == b"1"
    with pytest.raises(cairn.InvalidArgumentError, match="compression"):
        cairn.Db(path, compression="brotli")
    with pytest.raises(cairn.InvalidArgumentError):
        cairn.Db(path, compression="zstd:99")
    with pytest.raises(cairn.InvalidArgumentError):
        cairn.Db(path, durability="often")
    with pytest.raises(TypeError):
        cairn.Db(path, memtable_size="big")
    with pytest.raises(cairn.InvalidArgumentError, match="no store"):
        cairn.Db(path.parent / "missing", create_if_missing=False)


def test_memory_budget(path):
    budget = 32 << 20
    with cairn.Db(path, durability="buffered", memory_budget=budget, block_cache_size=1 << 30) as db:
        ks = db.keyspace("k")
        ks.update((b"%06d" % i, b"v" * 100) for i in range(20000))
        db.flush()
        assert all(ks[b"%06d" % i] == b"v" * 100 for i in range(0, 20000, 7))
        s = db.stats()
        assert s["memory_budget"] == budget
        # 5/8 block cache (replacing block_cache_size), 1/4 memtables, 1/8 index and filter.
        assert s["block_cache_capacity"] == budget - budget // 4 - budget // 8
        assert s["memtable_limit"] == budget // 4
        assert s["index_filter_limit"] == budget // 8
        assert 0 < s["block_cache_bytes"] <= s["block_cache_capacity"]
        assert s["memtable_bytes"] <= s["memtable_limit"]
        assert 0 < s["index_filter_bytes"] <= s["index_filter_limit"]
    for opener in (cairn.Db.open_read_only, cairn.Db.open_follower):
        with opener(path, memory_budget=budget) as ro:
            s = ro.stats()
            assert s["memory_budget"] == budget and s["index_filter_limit"] == budget // 8
    with cairn.Db(path) as db:
        s = db.stats()
        assert s["memory_budget"] is None and s["memtable_limit"] is None
        assert s["index_filter_limit"] is None and s["block_cache_capacity"] == 64 << 20
    for small in (0, 1 << 20, (16 << 20) - 1):
        with pytest.raises(cairn.InvalidArgumentError, match="memory_budget"):
            cairn.Db(path, memory_budget=small)


def _level0_empties_within(db, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if db.stats()["tables_per_level"][0] == 0:
            return True
        time.sleep(0.05)
    return False


def test_compaction_options(path):
    with pytest.raises(cairn.InvalidArgumentError, match="tombstone_compaction_percent"):
        cairn.Db(path, tombstone_compaction_percent=101)
    # With the idle merge off, a flushed table stays in level 0 (under the count trigger).
    with cairn.Db(
        path, durability="buffered", idle_compaction_percent=0, tombstone_compaction_percent=0
    ) as db:
        ks = db.keyspace("k")
        ks.update((b"%06d" % i, b"a" * 100) for i in range(20000))
        db.flush()
        assert not _level0_empties_within(db, 2.5)
        assert db.stats()["tables_per_level"][0] == 1
    # With the default, it moves down once writes pause; huge-page memtables read back.
    with cairn.Db(path, durability="buffered", memtable_huge_pages=True) as db:
        ks = db.keyspace("k")
        assert _level0_empties_within(db, 30)
        ks.update((b"%06d" % i, b"b" * 100) for i in range(0, 20000, 3))
        assert all(ks[b"%06d" % i] == (b"b" if i % 3 == 0 else b"a") * 100 for i in range(20000))


def test_store_locked_while_open(db, path):
    with pytest.raises(cairn.IOError) as e:
        cairn.Db(path)
    assert isinstance(e.value, OSError) and isinstance(e.value, cairn.Error)
    assert e.value.errno == errno.EAGAIN and e.value.filename.endswith("LOCK")
    assert "already locked" in str(e.value) and "None" not in str(e.value)


def test_keyspaces(db):
    a = db.keyspace("a")
    db.keyspace("b")
    assert db.keyspace_names() == ["a", "b", "default"]
    assert "a" in db and "zz" not in db
    assert db["a"].name == "a"
    with pytest.raises(KeyError):
        db["zz"]
    a[b"k"] = b"v"
    db.drop_keyspace("a")
    assert db.keyspace_names() == ["b", "default"]
    with pytest.raises(cairn.Error):
        a[b"k"]
    with pytest.raises(cairn.InvalidArgumentError):
        db.drop_keyspace("a")
    assert len(db.keyspace("a")) == 0  # recreated, empty
    with pytest.raises(cairn.InvalidArgumentError):
        db.keyspace("")


def test_batch_commits_on_exit_and_discards_on_exception(db):
    users, emails = db.keyspace("users"), db.keyspace("emails")
    users[b"old"] = b"x"
    with db.batch() as b:
        b.insert(users, b"u:1", b"Ada")
        b.insert(emails, b"ada@example.com", b"u:1", ttl=3600, meta=b"m", tag=1)
        b.remove(users, b"old")
        assert len(b) == 3
        assert users.get(b"u:1") is None  # nothing before commit
    assert users[b"u:1"] == b"Ada" and emails.head(b"ada@example.com").tag == 1
    assert b"old" not in users
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.insert(users, b"u:2", b"Grace")
            raise RuntimeError("boom")
    assert b"u:2" not in users
    with pytest.raises(cairn.ClosedError):
        b.insert(users, b"u:2", b"Grace")


def test_batch_explicit_commit_range_deletes_and_durability(db):
    ks = db.keyspace("k")
    ks.update({b"a1": b"", b"a2": b"", b"b1": b"", b"c": b""})
    b = db.batch(durability="buffered")
    b.remove_range(ks, b"a2", b"c")
    b.remove_prefix(ks, b"a1")
    b.commit(durability="sync")
    assert list(ks) == [b"c"]
    with pytest.raises(cairn.ClosedError):
        b.commit()
    b2 = db.batch()
    b2.insert(ks, b"x", b"1")
    b2.discard()
    with pytest.raises(cairn.ClosedError):
        len(b2)
    assert b"x" not in ks


def test_batch_incr_adds_up_reports_values_and_fails_whole(db):
    hits, stats = db.keyspace("hits"), db.keyspace("stats")
    hits[b"home"] = b"5"
    with db.batch() as b:
        b.insert(stats, b"orders", b"10")
        b.incr(stats, b"orders")  # 11: after the batch's own put
        b.incr(hits, b"home", 2)  # 7
        b.incr(hits, b"home", 3)  # 10: adds to the one before
        b.decr(hits, b"fresh", 4)  # -4
        assert len(b) == 5 and b.counters is None
    assert b.counters == [11, 7, 10, -4]
    assert stats[b"orders"] == b"11" and hits[b"home"] == b"10" and hits[b"fresh"] == b"-4"
    b = db.batch()
    b.incr(hits, b"home", 1)
    assert b.commit(durability="sync") == [11]
    assert db.batch().commit() == []

    hits[b"text"] = b"hello"
    b = db.batch()
    b.insert(stats, b"written", b"no")
    b.incr(hits, b"home", 1)
    b.incr(hits, b"text", 1)
    with pytest.raises(cairn.NotACounterError):
        b.commit()
    assert b.counters is None
    assert b"written" not in stats and hits[b"home"] == b"11"
    hits[b"max"] = str(2**63 - 1).encode()
    with pytest.raises(cairn.CounterOverflowError):
        with db.batch() as b:
            b.insert(stats, b"written", b"no")
            b.incr(hits, b"max", 1)
    assert b"written" not in stats


def test_batch_rejects_keyspace_of_another_store(db, tmp_path):
    with cairn.Db(tmp_path / "other") as other:
        foreign = other.keyspace("k")
        with pytest.raises(cairn.InvalidArgumentError, match="another store"):
            with db.batch() as b:
                b.insert(foreign, b"a", b"1")


def test_snapshot(db):
    ks = db.keyspace("k")
    ks[b"a"] = b"1"
    ks[b"b"] = b"2"
    with db.snapshot() as s:
        ks[b"a"] = b"changed"
        del ks[b"b"]
        ks[b"c"] = b"3"
        assert s.get(ks, b"a") == b"1" and s.get(ks, b"b") == b"2"
        assert s.get(ks, b"c") is None and s.get(ks, b"c", b"d") == b"d"
        assert s.contains(ks, b"b") and not s.contains(ks, b"c")
        assert s.get_many(ks, [b"c", b"a", b"b", b"a"]) == [None, b"1", b"2", b"1"]
        assert s.get_many(ks, []) == []
        with pytest.raises(TypeError):
            s.get_many(ks, [b"a", 7])
        assert s.head(ks, b"a").value_len == 1
        assert s.len(ks) == 2
        assert list(s.items(ks)) == [(b"a", b"1"), (b"b", b"2")]
        assert list(s.keys(ks, reverse=True)) == [b"b", b"a"]
        assert list(s.range(ks, b"b")) == [(b"b", b"2")]
        assert list(s.prefix(ks, b"a")) == [(b"a", b"1")]
        scan = s.items(ks)
        assert s.seqno > 0 and "Snapshot" in repr(s)
    with pytest.raises(cairn.ClosedError):
        s.get(ks, b"a")
    assert len(list(scan)) == 2  # a scan keeps its snapshot's view


def test_maintenance_stats_backup_verify(db, tmp_path):
    ks = db.keyspace("k")
    ks.update((b"%05d" % i, b"v" * 100) for i in range(2000))
    db.flush_wal()
    db.flush_wal(sync=False)
    db.flush()
    assert db.compact() >= 0
    assert db.compact_expired() >= 0
    assert db.collect_garbage() >= 0
    db.wait_for_compactions()
    stats = db.stats()
    assert stats["last_seqno"] == db.last_seqno >= 1 and stats["flushes"] >= 1
    assert db.durable_seqno <= db.last_seqno
    assert sum(stats["tables_per_level"]) >= 1
    assert db.disk_size() > 0
    report = db.verify()
    assert any(f["kind"] == "table file" for f in report["files"])
    info = db.backup(tmp_path / "backup")
    assert info["tables"] >= 1 and info["seqno"] >= 1
    assert cairn.verify(tmp_path / "backup")["files"]
    with cairn.Db(tmp_path / "backup") as copy:
        assert len(copy.keyspace("k")) == 2000


def test_read_only_open(path):
    with cairn.Db(path) as db:
        db.keyspace("k")[b"a"] = b"1"
    with cairn.Db.open_read_only(path) as ro:
        assert ro.read_only and not ro.follower
        ks = ro["k"]
        assert ks[b"a"] == b"1"
        with pytest.raises(cairn.ReadOnlyError):
            ks[b"b"] = b"2"
        with pytest.raises(cairn.ReadOnlyError):
            ro.flush()


def test_mmap_reads_read_tables_through_maps(path):
    data = {b"%06d" % i: b"%d" % i * 20 for i in range(20000)}
    with cairn.Db(path, durability="buffered", mmap_reads=True) as db:
        ks = db.keyspace("k")
        ks.update(data)
        db.flush()
        db.compact()
        assert sum(db.stats()["tables_per_level"]) >= 1
        assert all(ks[k] == v for k, v in data.items())
        assert list(ks.items()) == sorted(data.items())
    for opener in (cairn.Db.open_read_only, cairn.Db.open_follower):
        with opener(path, mmap_reads=True, block_cache_size=0) as ro:
            ks = ro["k"]
            assert all(ks[k] == v for k, v in data.items())
            assert [k for k, _ in ks.range(reverse=True)] == sorted(data, reverse=True)


def test_row_cache_answers_repeated_reads_of_tables(path):
    data = {b"%06d" % i: b"%d" % i * 20 for i in range(2000)}
    with cairn.Db(path, durability="buffered", row_cache_size=1 << 20) as db:
        ks = db.keyspace("k")
        ks.update(data)
        db.flush()
        for _ in range(2):
            assert all(ks[k] == v for k, v in data.items())
        s = db.stats()
        assert s["row_cache_capacity"] == 1 << 20
        assert s["row_cache_hits"] >= len(data) // 2
        assert 0 < s["row_cache_bytes"] <= s["row_cache_capacity"]
        del ks[b"000007"]
        db.flush()
        assert ks.get(b"000007") is None
    with cairn.Db.open_read_only(path, row_cache_size=1 << 20) as ro:
        ks = ro["k"]
        for _ in range(2):
            assert ks[b"000008"] == data[b"000008"]
        assert ro.stats()["row_cache_hits"] >= 1


def test_follower_sees_writer_after_refresh(path):
    with cairn.Db(path) as db:
        ks = db.keyspace("k")
        ks[b"a"] = b"1"
        with cairn.Db.open_follower(path) as f:
            assert f.follower and f.read_only
            fk = f["k"]
            assert fk[b"a"] == b"1"
            ks[b"b"] = b"2"
            assert f.refresh() is True
            assert fk[b"b"] == b"2"
    with pytest.raises(cairn.InvalidArgumentError):
        with cairn.Db(path) as db:
            db.refresh()


def test_closed_store_raises_closed_error_everywhere(path):
    db = cairn.Db(path)
    ks = db.keyspace("k")
    ks.update({b"%03d" % i: b"v" for i in range(100)})
    it = iter(ks)
    next(it)
    snap = db.snapshot()
    batch = db.batch()
    db.close()
    calls = [
        lambda: ks[b"a"], lambda: ks.__setitem__(b"a", b"b"), lambda: len(ks),
        lambda: list(ks), lambda: next(it), lambda: snap.get(ks, b"a"),
        lambda: batch.insert(ks, b"a", b"b"), lambda: batch.commit(),
        lambda: db.keyspace("k"), lambda: db.flush(), lambda: db.stats(),
        lambda: db.snapshot(), lambda: db.batch(), lambda: db.last_seqno,
    ]
    for call in calls:
        with pytest.raises(cairn.ClosedError):
            call()
    with pytest.raises(cairn.ClosedError):
        with db:
            pass
    # Nothing holds the store: it reopens at once, with every write.
    with cairn.Db(path) as again:
        assert len(again.keyspace("k")) == 100


def test_close_waits_for_calls_in_flight(path):
    db = cairn.Db(path)
    ks = db.keyspace("k")
    errors = []

    def writer():
        try:
            for i in range(100_000):
                ks[b"%06d" % i] = b"v"
        except cairn.ClosedError:
            pass
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    db.close()
    t.join()
    assert errors == []


def test_path_iterator_close_and_wait(db, path):
    assert str(db.path) == str(path)
    ks = db.keyspace("k")
    ks.update({b"a": b"1", b"b": b"2"})
    it = ks.range()
    assert next(it) == (b"a", b"1")
    it.close()
    with pytest.raises(cairn.ClosedError):
        next(it)
    db.wait_for_compactions()


def test_follower_with_refresh_interval(path):
    with cairn.Db(path) as db:
        ks = db.keyspace("k")
        with cairn.Db.open_follower(path, refresh_interval=0.01, block_cache_size=1 << 20) as f:
            fk = f["k"]
            ks[b"a"] = b"1"
            deadline = time.monotonic() + 5
            while fk.get(b"a") is None and time.monotonic() < deadline:
                time.sleep(0.02)  # the follower's own thread refreshes its view
            assert fk[b"a"] == b"1"


def test_space_stats_and_recovery_report(path):
    with cairn.Db(path) as db:
        media = db.keyspace("media", blob_threshold=1024)
        media[b"big"] = b"x" * 10_000
        db.flush()
        space = db.space_stats()
        assert space["blob_bytes"] > 0 and space["blob_files"][0]["live_bytes"] > 0
        assert space["table_bytes"] > 0
        report = db.recovery_report()
        assert report["clean"] and report["losses"] == [] and not report["lost_durable_writes"]
    # A torn tail: bytes appended to the newest log file, as a crash mid-write leaves.
    logs = sorted(p for p in os.listdir(path) if p.endswith(".wal"))
    with open(os.path.join(path, logs[-1]), "ab") as f:
        f.write(b"\x07" * 20)
    with cairn.Db(path) as db:
        report = db.recovery_report()
        assert report["log_files"] >= 1 and not report["clean"]
        assert report["losses"][0]["cause"] == "torn tail"
        assert report["losses"][0]["path"].endswith(logs[-1])
        assert db["media"][b"big"] == b"x" * 10_000


def test_bad_argument_types(db):
    ks = db.keyspace("k")
    with pytest.raises(TypeError):
        db.snapshot().get("not a keyspace", b"a")
    with pytest.raises(TypeError):
        db.batch().insert(ks, "text", b"v")
    with pytest.raises(TypeError):
        db.keyspace(b"bytes-name")
    with pytest.raises(TypeError):
        ks.range(1, 2)
    with pytest.raises(TypeError):
        ks.incr(b"n", "1")
    with pytest.raises(OverflowError):
        ks.incr(b"n", 2**64)
    with pytest.raises(TypeError):
        ks.insert(b"k", b"v", ttl="soon")
    with pytest.raises(ValueError):  # as dict.update: a pair must have two items
        ks.update([(b"a",)])
    with pytest.raises(TypeError):
        cairn.Db(42)
