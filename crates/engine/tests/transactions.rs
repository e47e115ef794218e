//! Transactions: read-your-own-writes (points and scans, both directions), atomic commit
//! and rollback, conflict detection against plain writes, batches, range removes and
//! other transactions (in the memtable, after a flush and after compaction), snapshot
//! isolation's write skew and serializable isolation's refusal of it and of phantoms,
//! and the bank invariant under threads, flushes, compactions and a reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cairn::{Db, Durability, EntryOptions, Error, Isolation, Meta, Options, TransactionOptions};
use proptest::prelude::*;

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, Options::default().durability(Durability::Buffered)).unwrap()
}

fn serializable() -> TransactionOptions {
    TransactionOptions::new().isolation(Isolation::Serializable)
}

fn conflict_key(e: &Error) -> Vec<u8> {
    match e {
        Error::Conflict { key, .. } => key.clone(),
        other => panic!("expected a conflict, got {other}"),
    }
}

#[test]
fn a_transaction_reads_its_own_writes_and_commits_them_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let a = db.keyspace("a").unwrap();
    let b = db.keyspace("b").unwrap();
    a.insert("k1", "old").unwrap();
    a.insert("k2", "gone").unwrap();

    let mut tx = db.transaction();
    tx.insert(&a, "k1", "new");
    tx.remove(&a, "k2");
    tx.insert(&b, "x", "1");
    let tagged = EntryOptions::new().meta(Meta::new(7, b"m".to_vec()));
    tx.insert_entry(&b, "y", "2", &tagged);
    assert_eq!(tx.get(&a, "k1").unwrap(), Some(b"new".to_vec()));
    assert_eq!(tx.get(&a, "k2").unwrap(), None);
    assert!(!tx.contains_key(&a, "k2").unwrap());
    let head = tx.head(&b, "y").unwrap().unwrap();
    assert_eq!(
        (head.tag, head.meta.as_slice(), head.seqno),
        (7, &b"m"[..], 0)
    );
    // Outside, nothing yet.
    assert_eq!(a.get("k1").unwrap(), Some(b"old".to_vec()));
    assert_eq!(b.get("x").unwrap(), None);
    assert_eq!(tx.len(), 4);
    tx.commit().unwrap();
    assert_eq!(a.get("k1").unwrap(), Some(b"new".to_vec()));
    assert_eq!(a.get("k2").unwrap(), None);
    assert_eq!(b.get("x").unwrap(), Some(b"1".to_vec()));
    assert_eq!(b.head("y").unwrap().unwrap().tag, 7);

    // Rolled back or dropped: nothing written.
    let mut tx = db.transaction();
    tx.insert(&a, "k9", "v");
    tx.rollback();
    let mut tx = db.transaction();
    tx.insert(&a, "k9", "v");
    drop(tx);
    assert_eq!(a.get("k9").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn range_removes_and_later_writes_apply_in_the_order_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let ks = db.keyspace("k").unwrap();
    for k in ["a1", "a2", "a3", "b1"] {
        ks.insert(k, "snap").unwrap();
    }
    let mut tx = db.transaction();
    tx.insert(&ks, "a4", "before"); // removed by the range remove below
    tx.remove_prefix(&ks, "a");
    tx.insert(&ks, "a2", "after");
    assert_eq!(tx.get(&ks, "a1").unwrap(), None);
    assert_eq!(tx.get(&ks, "a4").unwrap(), None);
    assert_eq!(tx.get(&ks, "a2").unwrap(), Some(b"after".to_vec()));
    let seen: Vec<_> = tx
        .range::<&[u8], _>(&ks, ..)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(seen, vec![b"a2".to_vec(), b"b1".to_vec()]);
    tx.commit().unwrap();
    let stored: Vec<_> = ks.iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        stored,
        vec![
            (b"a2".to_vec(), b"after".to_vec()),
            (b"b1".to_vec(), b"snap".to_vec())
        ]
    );
    db.close().unwrap();
}

#[derive(Debug, Clone)]
enum TxOp {
    Put(u8, u8),
    Remove(u8),
    RemoveRange(u8, u8),
}

fn tx_op() -> impl Strategy<Value = TxOp> {
    prop_oneof![
        4 => (0u8..40, any::<u8>()).prop_map(|(k, v)| TxOp::Put(k, v)),
        2 => (0u8..40).prop_map(TxOp::Remove),
        1 => (0u8..40, 0u8..12).prop_map(|(s, n)| TxOp::RemoveRange(s, s.saturating_add(n))),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:03}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48 * cairn::testing::soak_factor() as u32))]

    /// A transaction's scans equal the snapshot's pairs with its pending writes applied,
    /// forwards, backwards and from both ends alternately, over any range.
    #[test]
    fn scans_merge_the_snapshot_with_pending_writes(
        before in proptest::collection::btree_map(0u8..40, any::<u8>(), 0..30),
        flush in any::<bool>(),
        ops in proptest::collection::vec(tx_op(), 0..30),
        lo in 0u8..42,
        len in 0u8..45,
        pattern in proptest::collection::vec(any::<bool>(), 0..90),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let ks = db.keyspace("k").unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (k, v) in &before {
            ks.insert(key(*k), [*v]).unwrap();
            model.insert(key(*k), vec![*v]);
        }
        if flush {
            db.flush().unwrap();
        }
        let mut tx = db.transaction();
        // A write after the transaction began is not seen by it.
        ks.insert(key(41), "late").unwrap();
        for op in &ops {
            match op {
                TxOp::Put(k, v) => {
                    tx.insert(&ks, key(*k), [*v]);
                    model.insert(key(*k), vec![*v]);
                }
                TxOp::Remove(k) => {
                    tx.remove(&ks, key(*k));
                    model.remove(&key(*k));
                }
                TxOp::RemoveRange(s, e) => {
                    tx.remove_range(&ks, key(*s)..key(*e));
                    let (s, e) = (key(*s), key(*e));
                    model.retain(|k, _| !(*k >= s && *k < e));
                }
            }
        }
        let (lo, hi) = (key(lo), key(lo.saturating_add(len)));
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(lo.clone()..hi.clone())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let fwd: Vec<_> = tx.range(&ks, lo.clone()..hi.clone()).map(|r| r.unwrap()).collect();
        prop_assert_eq!(&fwd, &want);
        let mut rev: Vec<_> = tx.range(&ks, lo.clone()..hi.clone()).rev().map(|r| r.unwrap()).collect();
        rev.reverse();
        prop_assert_eq!(&rev, &want);
        // Both ends alternately: the front part then the back part, no repeats.
        let mut it = tx.range(&ks, lo.clone()..hi.clone());
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut i = 0;
        loop {
            let from_back = pattern.get(i).copied().unwrap_or(false);
            i += 1;
            let item = if from_back { it.next_back() } else { it.next() };
            match item {
                Some(r) => if from_back { back.push(r.unwrap()) } else { front.push(r.unwrap()) },
                None => break,
            }
        }
        back.reverse();
        front.extend(back);
        prop_assert_eq!(&front, &want);
        for k in 0u8..42 {
            prop_assert_eq!(tx.get(&ks, key(k)).unwrap(), model.get(&key(k)).cloned());
        }
        let all: Vec<Vec<u8>> = (0u8..42).map(key).collect();
        let want_all: Vec<Option<Vec<u8>>> = all.iter().map(|k| model.get(k).cloned()).collect();
        prop_assert_eq!(tx.get_many(&ks, &all).unwrap(), want_all);
        tx.commit().unwrap();
        // The commit applies the same writes to the store as it is now: the late write,
        // which the transaction did not see, stays unless a range remove covers it (the
        // range remove removes every key in its range as of the commit).
        let mut after: BTreeMap<Vec<u8>, Vec<u8>> =
            before.iter().map(|(k, v)| (key(*k), vec![*v])).collect();
        after.insert(key(41), b"late".to_vec());
        for op in &ops {
            match op {
                TxOp::Put(k, v) => {
                    after.insert(key(*k), vec![*v]);
                }
                TxOp::Remove(k) => {
                    after.remove(&key(*k));
                }
                TxOp::RemoveRange(s, e) => {
                    let (s, e) = (key(*s), key(*e));
                    after.retain(|k, _| !(*k >= s && *k < e));
                }
            }
        }
        let stored: BTreeMap<_, _> = ks.iter().map(|r| r.unwrap()).collect();
        prop_assert_eq!(stored, after);
        db.close().unwrap();
    }
}

/// A key the transaction writes, changed by another writer after its snapshot (a plain
/// write, a batch, a removal, a range remove, another transaction), makes the commit
/// fail and write nothing, wherever the newer version lies (memtable, table, compacted).
#[test]
fn a_write_after_the_snapshot_to_a_written_key_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let ks = db.keyspace("k").unwrap();
    ks.insert("x", "0").unwrap();
    type Interfere = Box<dyn Fn(&Db, &cairn::Keyspace)>;
    let cases: Vec<(&str, Interfere)> = vec![
        (
            "plain write",
            Box::new(|_, ks| ks.insert("x", "1").unwrap()),
        ),
        ("remove", Box::new(|_, ks| ks.remove("x").unwrap())),
        (
            "range remove",
            Box::new(|_, ks| ks.remove_range("w".."y").unwrap()),
        ),
        (
            "batch",
            Box::new(|db, ks| {
                let mut b = db.batch();
                b.insert(ks, "x", "2");
                b.commit().unwrap();
            }),
        ),
        (
            "counter",
            Box::new(|_, ks| {
                ks.insert("x", "5").unwrap();
                ks.incr("x", 1).unwrap();
            }),
        ),
        (
            "transaction",
            Box::new(|db, ks| {
                let mut t = db.transaction();
                t.insert(ks, "x", "3");
                t.commit().unwrap();
            }),
        ),
        (
            "flushed write",
            Box::new(|db, ks| {
                ks.insert("x", "4").unwrap();
                db.flush().unwrap();
            }),
        ),
        (
            "compacted write",
            Box::new(|db, ks| {
                ks.insert("x", "6").unwrap();
                db.flush().unwrap();
                db.compact().unwrap();
            }),
        ),
    ];
    for (name, interfere) in cases {
        ks.insert("x", "0").unwrap();
        let mut tx = db.transaction();
        assert!(tx.get(&ks, "x").unwrap().is_some() || name == "remove");
        tx.insert(&ks, "x", "tx");
        tx.insert(&ks, "other", "tx");
        interfere(&db, &ks);
        let before = ks.get("x").unwrap();
        let err = tx.commit().unwrap_err();
        assert!(err.is_conflict(), "{name}: {err}");
        assert_eq!(conflict_key(&err), b"x", "{name}");
        assert!(err.to_string().contains("\"k\""), "{name}: {err}");
        assert_eq!(ks.get("x").unwrap(), before, "{name}: nothing written");
        assert_eq!(ks.get("other").unwrap(), None, "{name}: nothing written");
    }
    // Writes to other keys, and writes before the snapshot, do not conflict.
    ks.insert("x", "0").unwrap();
    let mut tx = db.transaction();
    ks.insert("unrelated", "1").unwrap();
    tx.insert(&ks, "x", "tx");
    tx.commit().unwrap();
    assert_eq!(ks.get("x").unwrap(), Some(b"tx".to_vec()));
    db.close().unwrap();
}

/// Write skew: two transactions each read both keys and write a different one. Snapshot
/// isolation lets both commit; serializable isolation refuses the second.
#[test]
fn write_skew_is_refused_under_serializable_and_allowed_under_snapshot_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let oncall = db.keyspace("oncall").unwrap();
    for (opts, both_commit) in [(TransactionOptions::new(), true), (serializable(), false)] {
        oncall.insert("alice", "1").unwrap();
        oncall.insert("bob", "1").unwrap();
        let mut t1 = db.transaction_with(&opts);
        let mut t2 = db.transaction_with(&opts);
        for t in [&mut t1, &mut t2] {
            let on = t
                .prefix(&oncall, "")
                .filter(|r| r.as_ref().unwrap().1 == b"1")
                .count();
            assert_eq!(on, 2);
        }
        t1.insert(&oncall, "alice", "0");
        t2.insert(&oncall, "bob", "0");
        t1.commit().unwrap();
        let second = t2.commit();
        assert_eq!(second.is_ok(), both_commit, "{second:?}");
        if let Err(e) = second {
            assert!(matches!(e, Error::Conflict { read: true, .. }), "{e}");
        }
    }
    db.close().unwrap();
}

/// Serializable: a key inserted into a range the transaction scanned (a phantom), or a
/// change to a key it read (present or absent), fails its commit.
#[test]
fn serializable_reads_conflict_with_later_writes_to_what_they_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let ks = db.keyspace("k").unwrap();
    ks.insert("item:1", "a").unwrap();

    let mut tx = db.transaction_with(&serializable());
    assert_eq!(tx.prefix(&ks, "item:").count(), 1);
    tx.insert(&ks, "count", "1");
    ks.insert("item:2", "b").unwrap(); // a phantom
    let err = tx.commit().unwrap_err();
    assert_eq!(conflict_key(&err), b"item:2");

    let mut tx = db.transaction_with(&serializable());
    assert_eq!(tx.get(&ks, "absent").unwrap(), None);
    tx.insert(&ks, "derived", "1");
    ks.insert("absent", "now present").unwrap();
    assert_eq!(conflict_key(&tx.commit().unwrap_err()), b"absent");

    // Every key a batched read reads at the snapshot is checked, not the ones the
    // transaction wrote itself.
    let mut tx = db.transaction_with(&serializable());
    tx.insert(&ks, "own", "1");
    let got = tx.get_many(&ks, &["item:1", "own", "absent2"]).unwrap();
    assert_eq!(got, [Some(b"a".to_vec()), Some(b"1".to_vec()), None]);
    ks.insert("absent2", "now present").unwrap();
    assert_eq!(conflict_key(&tx.commit().unwrap_err()), b"absent2");

    // A read-only serializable transaction also checks its reads at commit.
    let tx = db.transaction_with(&serializable());
    assert!(tx.get(&ks, "item:1").unwrap().is_some());
    ks.remove("item:1").unwrap();
    assert!(tx.commit().unwrap_err().is_conflict());

    // Under snapshot isolation, reads are not checked.
    let mut tx = db.transaction();
    assert_eq!(tx.prefix(&ks, "item:").count(), 1);
    tx.insert(&ks, "count", "1");
    ks.insert("item:3", "c").unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
}

#[test]
fn update_retries_on_conflict_and_gives_up_after_its_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let ks = db.keyspace("k").unwrap();
    ks.insert("n", "0").unwrap();
    // The closure itself interferes on the first two runs.
    let runs = AtomicU64::new(0);
    let out = db
        .update(|tx| {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            let n = tx.incr(&ks, "n", 10)?;
            if run < 2 {
                ks.incr("n", 1)?; // another writer, after the snapshot
            }
            Ok(n)
        })
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(out, 12);
    assert_eq!(ks.get("n").unwrap(), Some(b"12".to_vec()));

    let runs = AtomicU64::new(0);
    let opts = TransactionOptions::new().max_attempts(3);
    let err = db
        .update_with(&opts, |tx| {
            runs.fetch_add(1, Ordering::SeqCst);
            tx.insert(&ks, "n", "x");
            ks.insert("n", "y")?;
            Ok(())
        })
        .unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // An error of the closure ends it at once, writing nothing.
    let err = db
        .update(|tx| {
            tx.insert(&ks, "z", "1");
            tx.incr(&ks, "n", 1) // "y" is not a counter
        })
        .unwrap_err();
    assert!(matches!(err, Error::NotACounter { .. }), "{err}");
    assert_eq!(ks.get("z").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn a_keyspace_of_another_store_is_refused() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (open(d1.path()), open(d2.path()));
    let ka = a.keyspace("k").unwrap();
    let kb = b.keyspace("k").unwrap();
    let mut tx = a.transaction();
    assert!(matches!(tx.get(&kb, "x"), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        tx.range::<&[u8], _>(&kb, ..).next(),
        Some(Err(Error::InvalidArgument(_)))
    ));
    tx.insert(&ka, "fine", "1");
    tx.insert(&kb, "x", "1");
    assert!(matches!(tx.commit(), Err(Error::InvalidArgument(_))));
    assert_eq!(ka.get("fine").unwrap(), None);
    a.close().unwrap();
    b.close().unwrap();
}

/// The bank: concurrent random transfers between accounts, each a transaction that reads
/// both balances and refuses to overdraw, while another thread flushes and compacts. The
/// total never changes and no balance goes negative, in every snapshot taken meanwhile
/// and after a reopen.
#[test]
fn concurrent_transfers_keep_the_total_and_never_overdraw() {
    for isolation in [Isolation::Snapshot, Isolation::Serializable] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default()
            .durability(Durability::Buffered)
            .memtable_size(64 << 10);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let accounts = db.keyspace("accounts").unwrap();
        const N: u64 = 20;
        const START: i64 = 100;
        for i in 0..N {
            accounts
                .insert(format!("acct{i:02}"), START.to_string())
                .unwrap();
        }
        let total = START * N as i64;
        let stop = Arc::new(AtomicBool::new(false));
        let committed = Arc::new(AtomicU64::new(0));
        let tx_opts = TransactionOptions::new()
            .isolation(isolation)
            .max_attempts(1000);
        let transfers = 300 * cairn::testing::soak_factor();
        let mut workers = Vec::new();
        for t in 0..4u64 {
            let (db, accounts, committed) = (db.clone(), accounts.clone(), Arc::clone(&committed));
            let tx_opts = tx_opts.clone();
            workers.push(std::thread::spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                for _ in 0..transfers {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let from = format!("acct{:02}", x % N);
                    let to = format!("acct{:02}", (x / N) % N);
                    let amount = (x % 37) as i64 + 1;
                    if from == to {
                        continue;
                    }
                    db.update_with(&tx_opts, |tx| {
                        let balance: i64 = String::from_utf8(tx.get(&accounts, &from)?.unwrap())
                            .unwrap()
                            .parse()
                            .unwrap();
                        if balance < amount {
                            return Ok(()); // refused: would overdraw
                        }
                        tx.incr(&accounts, &from, -amount)?;
                        tx.incr(&accounts, &to, amount)?;
                        Ok(())
                    })
                    .unwrap();
                    committed.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        let checker = {
            let (db, accounts, stop) = (db.clone(), accounts.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut checks = 0;
                while !stop.load(Ordering::Relaxed) {
                    let snap = db.snapshot();
                    let mut sum = 0i64;
                    for r in cairn::Readable::iter(&snap, &accounts) {
                        let v: i64 = String::from_utf8(r.unwrap().1).unwrap().parse().unwrap();
                        assert!(v >= 0, "a negative balance");
                        sum += v;
                    }
                    assert_eq!(sum, total, "the total changed");
                    checks += 1;
                    if checks % 5 == 0 {
                        db.flush().unwrap();
                    }
                    if checks % 11 == 0 {
                        db.compact().unwrap();
                    }
                }
                checks
            })
        };
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(checker.join().unwrap() > 0);
        assert!(committed.load(Ordering::Relaxed) > 0);
        drop(accounts);
        db.close().unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        let accounts = db.keyspace("accounts").unwrap();
        let balances: Vec<i64> = accounts
            .iter()
            .map(|r| String::from_utf8(r.unwrap().1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(balances.len(), N as usize);
        assert!(balances.iter().all(|b| *b >= 0));
        assert_eq!(balances.iter().sum::<i64>(), total, "{isolation:?}");
        drop(accounts);
        db.close().unwrap();
    }
}

/// Compare-and-swap and fetch-update under contention: threads race to increment one
/// counter through each; every increment lands exactly once.
#[test]
fn compare_and_swap_and_fetch_update_lose_no_update_under_threads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let ks = db.keyspace("k").unwrap();
    // Plain semantics first.
    assert_eq!(ks.compare_and_swap("a", None, Some(b"1")).unwrap(), Ok(()));
    let miss = ks
        .compare_and_swap("a", None, Some(b"2"))
        .unwrap()
        .unwrap_err();
    assert_eq!(miss.current, Some(b"1".to_vec()));
    assert_eq!(ks.compare_and_swap("a", Some(b"1"), None).unwrap(), Ok(()));
    assert_eq!(ks.get("a").unwrap(), None);
    assert_eq!(ks.fetch_update("b", |_| Some(b"x".to_vec())).unwrap(), None);
    assert_eq!(ks.fetch_update("b", |_| None).unwrap(), Some(b"x".to_vec()));
    assert_eq!(ks.get("b").unwrap(), None);

    let per_thread = 200 * cairn::testing::soak_factor();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let ks = ks.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    if t % 2 == 0 {
                        loop {
                            let cur = ks.get("n").unwrap();
                            let n: u64 = cur
                                .as_deref()
                                .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
                            let next = (n + 1).to_string();
                            if ks
                                .compare_and_swap("n", cur.as_deref(), Some(next.as_bytes()))
                                .unwrap()
                                .is_ok()
                            {
                                break;
                            }
                        }
                    } else {
                        ks.fetch_update("n", |cur| {
                            let n: u64 =
                                cur.map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
                            Some((n + 1).to_string().into_bytes())
                        })
                        .unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        ks.get("n").unwrap(),
        Some((4 * per_thread).to_string().into_bytes())
    );
    db.close().unwrap();
}

/// What one committed transaction of a history did.
#[derive(Debug, Clone)]
struct Committed {
    read_at: u64,
    commit: u64,
    reads: Vec<(u8, Option<Vec<u8>>)>,
    writes: Vec<(u8, Option<Vec<u8>>)>,
}

/// Random concurrent transactions over a few keys, each reading some keys and writing
/// values derived from what it read; the committed ones are checked against a serial
/// replay in commit-seqno order. Snapshot isolation: each read equals the replayed state
/// at the transaction's snapshot, and no two committed transactions that overlap in time
/// wrote the same key. Serializable: each read equals the replayed state just before the
/// transaction's commit. Both: the store ends equal to the replay.
#[test]
fn concurrent_histories_match_a_serial_replay() {
    for isolation in [Isolation::Snapshot, Isolation::Serializable] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(
            dir.path(),
            Options::default()
                .durability(Durability::None)
                .memtable_size(32 << 10),
        )
        .unwrap();
        let ks = db.keyspace("k").unwrap();
        const KEYS: u64 = 8;
        let per_thread = 150 * cairn::testing::soak_factor();
        let log = Arc::new(parking_lot::Mutex::new(Vec::<Committed>::new()));
        let conflicts = Arc::new(AtomicU64::new(0));
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let (db, ks, log, conflicts) = (
                    db.clone(),
                    ks.clone(),
                    Arc::clone(&log),
                    Arc::clone(&conflicts),
                );
                std::thread::spawn(move || {
                    let mut x = 0x2545_F491_4F6C_DD1Du64.wrapping_mul(t + 1);
                    let mut next = || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    let opts = TransactionOptions::new().isolation(isolation);
                    for i in 0..per_thread {
                        let mut tx = db.transaction_with(&opts);
                        let read_at = tx.read_seqno();
                        let mut reads = Vec::new();
                        if next() % 4 == 0 {
                            // A scan of every key: it reads the absent ones as absent.
                            let found: BTreeMap<u8, Vec<u8>> = tx
                                .range::<&[u8], _>(&ks, ..)
                                .map(|r| r.unwrap())
                                .map(|(k, v)| (k[0], v))
                                .collect();
                            for k in 0..KEYS as u8 {
                                reads.push((k, found.get(&k).cloned()));
                            }
                        } else {
                            for _ in 0..(1 + next() % 3) {
                                let k = (next() % KEYS) as u8;
                                reads.push((k, tx.get(&ks, [k]).unwrap()));
                            }
                        }
                        // Let other transactions commit meanwhile.
                        std::thread::yield_now();
                        let mut writes = Vec::new();
                        for _ in 0..(next() % 3) {
                            let k = (next() % KEYS) as u8;
                            if next() % 5 == 0 {
                                tx.remove(&ks, [k]);
                                writes.retain(|(w, _)| *w != k);
                                writes.push((k, None));
                            } else {
                                // Derived from the reads, so a stale read shows in the value.
                                let seen: usize = reads
                                    .iter()
                                    .map(|(_, v)| v.as_ref().map_or(0, Vec::len))
                                    .sum();
                                let v = format!("t{t}i{i}s{seen}").into_bytes();
                                tx.insert(&ks, [k], &v);
                                writes.retain(|(w, _)| *w != k);
                                writes.push((k, Some(v)));
                            }
                        }
                        match tx.commit() {
                            Ok(commit) => log.lock().push(Committed {
                                read_at,
                                commit,
                                reads,
                                writes,
                            }),
                            Err(e) if e.is_conflict() => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                        if i % 40 == 0 && t == 0 {
                            db.flush().unwrap();
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let mut history = log.lock().clone();
        // Read-only transactions share the seqno of the last write before their check;
        // they go after it.
        history.sort_by(|a, b| {
            a.commit
                .cmp(&b.commit)
                .then((!b.writes.is_empty()).cmp(&!a.writes.is_empty()))
        });
        let mut state: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
        // The state after each writing commit, by its seqno, for reads at a snapshot.
        let mut states: Vec<(u64, BTreeMap<u8, Vec<u8>>)> = vec![(0, BTreeMap::new())];
        let state_at = |states: &[(u64, BTreeMap<u8, Vec<u8>>)], seqno: u64| {
            let i = states.partition_point(|(s, _)| *s <= seqno);
            states[i - 1].1.clone()
        };
        let mut last_writer: BTreeMap<u8, u64> = BTreeMap::new();
        for (n, c) in history.iter().enumerate() {
            let expected = match isolation {
                Isolation::Snapshot => state_at(&states, c.read_at),
                _ => state.clone(),
            };
            for (k, v) in &c.reads {
                assert_eq!(
                    v.as_ref(),
                    expected.get(k),
                    "{isolation:?}: commit #{n} ({c:?}) read key {k} wrong"
                );
            }
            for (k, _) in &c.writes {
                if let Some(prev) = last_writer.get(k) {
                    assert!(
                        *prev <= c.read_at,
                        "{isolation:?}: lost update on key {k}: commit #{n} ({c:?}) overwrote \
                         a commit at {prev} after its snapshot"
                    );
                }
            }
            for (k, v) in &c.writes {
                match v {
                    Some(v) => state.insert(*k, v.clone()),
                    None => state.remove(k),
                };
                last_writer.insert(*k, c.commit);
            }
            if !c.writes.is_empty() {
                states.push((c.commit, state.clone()));
            }
        }
        let stored: BTreeMap<u8, Vec<u8>> = ks
            .iter()
            .map(|r| r.unwrap())
            .map(|(k, v)| (k[0], v))
            .collect();
        assert_eq!(stored, state, "{isolation:?}");
        assert!(
            history.len() > 100,
            "{isolation:?}: {} committed",
            history.len()
        );
        eprintln!(
            "{isolation:?}: {} committed, {} conflicts",
            history.len(),
            conflicts.load(Ordering::Relaxed)
        );
        drop(ks);
        db.close().unwrap();
    }
}
