"""Transactions from Python: read-your-own-writes, commit and rollback, the context
manager, conflicts (``ConflictError`` with its attributes), write skew under snapshot
isolation and serializable, ``Db.update`` retries, compare-and-swap and fetch-update
under threads, and the bank invariant under concurrent transfers."""

import threading

import pytest

import cairn


@pytest.fixture
def db(tmp_path):
    with cairn.Db(str(tmp_path / "store"), durability="buffered") as d:
        yield d


def test_reads_own_writes_and_commits_atomically(db):
    ks = db.keyspace("k")
    ks[b"a"] = b"1"
    tx = db.transaction()
    tx.insert(ks, b"a", b"2")
    tx.insert(ks, b"b", b"3", tag=7, meta=b"m")
    tx.remove(ks, b"gone")
    assert tx.get(ks, b"a") == b"2"
    assert tx.get_many(ks, [b"gone", b"b", b"a", b"x"]) == [None, b"3", b"2", None]
    assert tx.contains(ks, b"b")
    assert tx.range(ks) == [(b"a", b"2"), (b"b", b"3")]
    assert tx.prefix(ks, b"", reverse=True) == [(b"b", b"3"), (b"a", b"2")]
    assert ks[b"a"] == b"1" and b"b" not in ks
    assert len(tx) == 3
    seqno = tx.commit()
    assert seqno == db.last_seqno
    assert ks[b"a"] == b"2" and ks.head(b"b").tag == 7
    with pytest.raises(cairn.ClosedError):
        tx.get(ks, b"a")


def test_context_manager_commits_or_rolls_back(db):
    ks = db.keyspace("k")
    with db.transaction() as tx:
        tx.insert(ks, b"x", b"1")
        tx.remove_prefix(ks, b"nothing")
    assert ks[b"x"] == b"1"
    with pytest.raises(RuntimeError):
        with db.transaction() as tx:
            tx.insert(ks, b"y", b"1")
            raise RuntimeError("abort")
    assert b"y" not in ks
    tx = db.transaction()
    tx.insert(ks, b"z", b"1")
    tx.rollback()
    assert b"z" not in ks


def test_a_later_write_to_a_written_key_conflicts(db):
    ks = db.keyspace("accounts")
    ks[b"alice"] = b"100"
    tx = db.transaction()
    assert tx.incr(ks, b"alice", -10) == 90
    tx.insert(ks, b"other", b"x")
    ks[b"alice"] = b"150"
    with pytest.raises(cairn.ConflictError) as err:
        tx.commit()
    assert err.value.keyspace == "accounts"
    assert err.value.key == b"alice"
    assert err.value.read is False
    assert isinstance(err.value, cairn.Error)
    assert ks[b"alice"] == b"150" and b"other" not in ks


@pytest.mark.parametrize("isolation,both_commit", [("snapshot", True), ("serializable", False)])
def test_write_skew(db, isolation, both_commit):
    ks = db.keyspace("oncall")
    ks[b"x"], ks[b"y"] = b"1", b"1"
    t1 = db.transaction(isolation=isolation)
    t2 = db.transaction(isolation=isolation)
    assert t1.get(ks, b"y") == b"1" and t2.get(ks, b"x") == b"1"
    t1.insert(ks, b"x", b"0")
    t2.insert(ks, b"y", b"0")
    t1.commit()
    if both_commit:
        t2.commit()
    else:
        with pytest.raises(cairn.ConflictError) as err:
            t2.commit()
        assert err.value.read is True


def test_update_retries_then_gives_up(db):
    ks = db.keyspace("k")
    ks[b"n"] = b"0"
    runs = []

    def bump(tx):
        runs.append(1)
        n = tx.incr(ks, b"n", 10)
        if len(runs) < 3:
            ks.incr(b"n", 1)  # another writer, after the snapshot
        return n

    assert db.update(bump) == 12
    assert len(runs) == 3 and ks[b"n"] == b"12"

    def always_conflicts(tx):
        tx.insert(ks, b"n", b"x")
        ks[b"n"] = b"y"

    with pytest.raises(cairn.ConflictError):
        db.update(always_conflicts, max_attempts=3)

    def fails(tx):
        tx.insert(ks, b"never", b"1")
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        db.update(fails)
    assert b"never" not in ks
    with pytest.raises(cairn.InvalidArgumentError):
        db.transaction(isolation="dirty")


def test_compare_and_swap_and_fetch_update_under_threads(db):
    ks = db.keyspace("k")
    assert ks.compare_and_swap(b"lock", None, b"me")
    assert not ks.compare_and_swap(b"lock", None, b"you")
    assert ks.compare_and_swap(b"lock", b"me", None)
    assert b"lock" not in ks
    assert ks.fetch_update(b"f", lambda v: b"1") is None
    assert ks.fetch_update(b"f", lambda v: None) == b"1"
    assert b"f" not in ks

    per_thread = 100

    def cas_worker():
        for _ in range(per_thread):
            while True:
                cur = ks.get(b"n")
                new = str(int(cur or b"0") + 1).encode()
                if ks.compare_and_swap(b"n", cur, new):
                    break

    def fetch_worker():
        for _ in range(per_thread):
            ks.fetch_update(b"n", lambda v: str(int(v or b"0") + 1).encode())

    threads = [threading.Thread(target=w) for w in (cas_worker, fetch_worker) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ks[b"n"] == str(4 * per_thread).encode()


def test_concurrent_transfers_keep_the_total(db):
    ks = db.keyspace("accounts")
    for i in range(10):
        ks[b"acct%d" % i] = b"100"
    errors = []

    def worker(seed):
        import random

        rng = random.Random(seed)
        try:
            for _ in range(150):
                a, b = rng.sample(range(10), 2)
                amount = rng.randint(1, 30)

                def transfer(tx):
                    balance = int(tx.get(ks, b"acct%d" % a))
                    if balance < amount:
                        return False
                    tx.incr(ks, b"acct%d" % a, -amount)
                    tx.incr(ks, b"acct%d" % b, amount)
                    return True

                db.update(transfer, max_attempts=1000)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    balances = [int(v) for v in ks.values()]
    assert sum(balances) == 1000 and min(balances) >= 0


def test_closed_store_closes_transactions(tmp_path):
    d = cairn.Db(str(tmp_path / "s"))
    ks = d.keyspace("k")
    tx = d.transaction()
    tx.insert(ks, b"a", b"1")
    d.close()
    with pytest.raises(cairn.ClosedError):
        tx.commit()
