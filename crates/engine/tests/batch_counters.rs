//! Counter increments inside a batch (`Batch::incr`): they read the batch's own earlier
//! writes and add up, a failing one refuses the whole batch, the commit reports each new
//! value in order, and batches of increments from many threads on shared keys are exact
//! and atomic in every durability mode.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use cairn::Readable;
use cairn::{Db, Durability, EntryOptions, Error, Meta, Options};

use ordered_common::{mem_tempdir, tiny};

#[test]
fn increments_read_the_batch_and_add_up() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let (a, b) = (db.keyspace("a").unwrap(), db.keyspace("b").unwrap());
    a.insert("n", "5").unwrap();
    let before = db.last_seqno();

    let mut batch = db.batch();
    batch.incr(&a, "n", 1); // 6: reads the store
    batch.incr(&a, "n", 2); // 8: adds to the first
    batch.insert(&b, "m", "100");
    batch.incr(&b, "m", -1); // 99: reads the put before it
    batch.remove(&a, "n");
    batch.decr(&a, "n", 3); // -3: the key was removed in the batch
    batch.incr(&b, "fresh", 7);
    assert_eq!(batch.len(), 7);
    let done = batch.commit_counters().unwrap();

    assert_eq!(done.counters(), &[6, 8, 99, -3, 7]);
    assert_eq!(done.counter(3), Some(-3));
    assert_eq!(done.counter(5), None);
    // Every op and every increment got a seqno, in one atomic write.
    assert_eq!(done.seqno(), before + 7);
    assert_eq!(db.last_seqno(), before + 7);
    assert_eq!(a.get("n").unwrap(), Some(b"-3".to_vec()));
    assert_eq!(b.get("m").unwrap(), Some(b"99".to_vec()));
    assert_eq!(b.get("fresh").unwrap(), Some(b"7".to_vec()));

    // `commit` still returns `()`, and applies the increments.
    let mut batch = db.batch();
    batch.incr(&a, "n", 10);
    batch.commit().unwrap();
    assert_eq!(a.get("n").unwrap(), Some(b"7".to_vec()));

    // A batch of only increments, with its own durability; an empty batch reports the
    // store's last seqno.
    let mut batch = db.batch();
    batch.incr(&a, "only", 1);
    let done = batch.commit_counters_with(Some(Durability::Sync)).unwrap();
    assert_eq!((done.counters(), done.seqno()), (&[1][..], db.last_seqno()));
    assert_eq!(db.durable_seqno(), db.last_seqno());
    let done = db.batch().commit_counters().unwrap();
    assert_eq!((done.counters(), done.seqno()), (&[][..], db.last_seqno()));
}

#[test]
fn an_increment_keeps_the_attributes_of_what_it_reads() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let opts = EntryOptions::new()
        .meta(Meta::new(9, "m"))
        .ttl(Duration::from_secs(3600));
    ks.insert_entry("stored", "1", &opts).unwrap();
    let mut batch = db.batch();
    batch.incr(&ks, "stored", 1);
    batch.insert_entry(&ks, "batched", "10", &opts);
    batch.incr(&ks, "batched", 5);
    assert_eq!(batch.commit_counters().unwrap().counters(), &[2, 15]);
    for (key, value) in [("stored", &b"2"[..]), ("batched", &b"15"[..])] {
        let head = ks.head(key).unwrap().unwrap();
        assert_eq!((head.tag, head.meta.as_slice()), (9, &b"m"[..]), "{key}");
        assert!(head.expires_at.is_some(), "{key}");
        assert_eq!(ks.get(key).unwrap().as_deref(), Some(value));
    }
}

#[test]
fn a_failing_increment_refuses_the_whole_batch() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let (a, b) = (db.keyspace("a").unwrap(), db.keyspace("b").unwrap());
    a.insert("text", "hello").unwrap();
    a.insert("max", i64::MAX.to_string()).unwrap();
    b.insert("n", "1").unwrap();
    let before = db.last_seqno();

    // Not a counter in the store; overflow; not a counter because of the batch's own put;
    // overflow only because of the batch's own earlier increment.
    type AddTo = fn(&mut cairn::Batch, &cairn::Keyspace);
    let cases: [(&str, AddTo); 4] = [
        ("stored text", |batch, a| batch.incr(a, "text", 1)),
        ("overflow", |batch, a| batch.incr(a, "max", 1)),
        ("batch's put", |batch, a| {
            batch.insert(a, "c", "x");
            batch.incr(a, "c", 1);
        }),
        ("batch's increments", |batch, a| {
            batch.incr(a, "c", i64::MAX);
            batch.incr(a, "c", 1);
        }),
    ];
    for (what, add) in cases {
        let mut batch = db.batch();
        batch.insert(&b, "written", "no");
        batch.incr(&b, "n", 1);
        add(&mut batch, &a);
        batch.remove(&b, "n");
        let err = batch.commit_counters().unwrap_err();
        match what {
            "overflow" | "batch's increments" => {
                assert!(
                    matches!(err, Error::CounterOverflow { .. }),
                    "{what}: {err}"
                );
            }
            _ => assert!(matches!(err, Error::NotACounter { .. }), "{what}: {err}"),
        }
        assert_eq!(db.last_seqno(), before, "{what}: nothing written");
        assert_eq!(b.get("written").unwrap(), None, "{what}");
        assert_eq!(b.get("n").unwrap(), Some(b"1".to_vec()), "{what}");
        assert_eq!(a.get("c").unwrap(), None, "{what}");
    }
    assert_eq!(a.get("text").unwrap(), Some(b"hello".to_vec()));

    // An oversized key is refused when added, and reported by the commit.
    let mut batch = db.batch();
    batch.incr(&a, vec![b'k'; 70_000], 1);
    batch.insert(&b, "written", "no");
    assert!(matches!(
        batch.commit_counters(),
        Err(Error::InvalidArgument(_))
    ));
    // A dropped keyspace refuses the batch too.
    let gone = db.keyspace("gone").unwrap();
    let mut batch = db.batch();
    batch.insert(&b, "written", "no");
    batch.incr(&gone, "n", 1);
    db.drop_keyspace("gone").unwrap();
    assert!(matches!(batch.commit(), Err(Error::InvalidArgument(_))));
    assert_eq!(b.get("written").unwrap(), None);
}

#[test]
fn increments_survive_reopen_and_flush() {
    let dir = mem_tempdir();
    {
        let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
        let ks = db.keyspace("c").unwrap();
        for i in 0..300 {
            let mut batch = db.batch();
            batch.insert(&ks, format!("pad{i:04}"), "x".repeat(40));
            batch.incr(&ks, "total", 2);
            batch.incr(&ks, format!("n{}", i % 3), 1);
            let done = batch.commit_counters().unwrap();
            assert_eq!(done.counters(), &[2 * (i + 1), i / 3 + 1]);
        }
        assert!(db.stats().flushes > 0, "the workload flushes");
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db.keyspace("c").unwrap();
    assert_eq!(ks.get("total").unwrap(), Some(b"600".to_vec()));
    for n in 0..3 {
        assert_eq!(ks.get(format!("n{n}")).unwrap(), Some(b"100".to_vec()));
    }
}

const THREADS: i64 = 6;
const BATCHES: i64 = 400;
const KEYS: i64 = 3;

const MODES: [Option<Durability>; 5] = [
    None,
    Some(Durability::Sync),
    Some(Durability::Async { queue_depth: 8 }),
    Some(Durability::None),
    Some(Durability::Periodic(Duration::from_millis(1))),
];

/// Threads commit batches that each add 1 to every shared key and `t` to a total, beside
/// single-key increments and batches refused for a bad counter. Every total is exact,
/// every batch's values are consistent with one another (it applied atomically), and a
/// reader never sees a batch half applied.
#[test]
fn concurrent_batches_of_increments_are_exact_and_atomic() {
    for mode in MODES {
        let dir = mem_tempdir();
        let db = Db::open(dir.path(), tiny(16 << 10, 512)).unwrap();
        let ks = db.keyspace("c").unwrap();
        let other = db.keyspace("o").unwrap();
        ks.insert("bad", "not a number").unwrap();
        let done = AtomicBool::new(false);
        thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut snapshots = 0;
                while !done.load(Ordering::Acquire) || snapshots == 0 {
                    let snap = db.snapshot();
                    let vals: Vec<i64> = (0..KEYS)
                        .map(|k| {
                            snap.get(&ks, format!("k{k}"))
                                .unwrap()
                                .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap())
                        })
                        .collect();
                    // Each batch adds 1 to every k and a mirror count to `o/mirror`.
                    let mirror = snap
                        .get(&other, "batches")
                        .unwrap()
                        .map_or(0, |v| String::from_utf8(v).unwrap().parse::<i64>().unwrap());
                    assert!(
                        vals.iter().all(|v| *v == mirror),
                        "{mode:?}: half a batch visible: {vals:?} vs {mirror}"
                    );
                    snapshots += 1;
                }
                snapshots
            });
            let writers: Vec<_> = (1..=THREADS)
                .map(|t| {
                    let (db, ks, other) = (&db, &ks, &other);
                    s.spawn(move || {
                        let mut singles = 0;
                        for i in 0..BATCHES {
                            let mut batch = db.batch();
                            for k in 0..KEYS {
                                batch.incr(ks, format!("k{k}"), 1);
                            }
                            batch.incr(other, "batches", 1);
                            batch.incr(ks, "total", t);
                            let got = batch.commit_counters_with(mode).unwrap();
                            let c = got.counters();
                            assert!(
                                c[..=KEYS as usize].iter().all(|v| *v == c[0]),
                                "{mode:?}: one batch saw different counts {c:?}"
                            );
                            if i % 10 == 0 {
                                ks.incr_with("total", 1000, mode).unwrap();
                                singles += 1;
                            }
                            if i % 25 == 0 {
                                let mut refused = db.batch();
                                refused.incr(ks, "total", 1);
                                refused.incr(ks, "k0", 1);
                                refused.incr(ks, "bad", 1);
                                assert!(matches!(
                                    refused.commit_with(mode),
                                    Err(Error::NotACounter { .. })
                                ));
                            }
                        }
                        singles
                    })
                })
                .collect();
            let singles: i64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
            done.store(true, Ordering::Release);
            assert!(reader.join().unwrap() > 0);
            let n = THREADS * BATCHES;
            for k in 0..KEYS {
                assert_eq!(
                    ks.get(format!("k{k}")).unwrap(),
                    Some(n.to_string().into_bytes()),
                    "{mode:?}"
                );
            }
            let total = BATCHES * (1..=THREADS).sum::<i64>() + 1000 * singles;
            assert_eq!(
                ks.get("total").unwrap(),
                Some(total.to_string().into_bytes()),
                "{mode:?}"
            );
        });
        db.close().unwrap();
    }
}
