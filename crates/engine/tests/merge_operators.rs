//! Merge operators end to end: writes refused without an operator, operands checked when
//! written, reopening with another operator or none, a failing operator (reads report it,
//! compaction keeps the operands), compaction combining operands without crossing a
//! snapshot, separated bases, attributes of merged values, counters reading through
//! operands, merges in batches and transactions, and an operator that panics while a
//! write reads through it (later writes are refused, none hangs).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod ordered_common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cairn::{
    AddI64, Append, Db, Durability, EntryOptions, Error, KeyspaceOptions, MergeOperator, Meta,
    Options, Readable,
};

use ordered_common::{assert_invalid, mem_tempdir, tiny};

fn with(op: Arc<dyn MergeOperator>) -> KeyspaceOptions {
    KeyspaceOptions::default().merge_operator(op)
}

/// `AddI64`, counting its calls, failing while `broken` is set and panicking while
/// `panics` is.
#[derive(Default)]
struct Probe {
    full_merges: AtomicU64,
    operands_seen: AtomicU64,
    broken: AtomicBool,
    panics: AtomicBool,
}

impl MergeOperator for Probe {
    fn name(&self) -> &str {
        "test.probe"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        assert!(!self.panics.load(Ordering::SeqCst), "the operator panics");
        self.full_merges.fetch_add(1, Ordering::SeqCst);
        self.operands_seen
            .fetch_add(operands.len() as u64, Ordering::SeqCst);
        if self.broken.load(Ordering::SeqCst) {
            return Err("the probe is broken".into());
        }
        AddI64.full_merge(key, existing, operands)
    }

    fn partial_merge(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        if self.broken.load(Ordering::SeqCst) {
            return None;
        }
        AddI64.partial_merge(key, older, newer)
    }
}

#[test]
fn merges_without_an_operator_are_refused_and_write_nothing() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let plain = db.keyspace("plain").unwrap();
    assert_invalid(plain.merge("k", "1"), "no merge operator");
    let mut batch = db.batch();
    batch.insert(&plain, "a", "1");
    batch.merge(&plain, "k", "1");
    assert_invalid(batch.commit(), "no merge operator");
    let mut tx = db.transaction();
    tx.insert(&plain, "b", "1");
    tx.merge(&plain, "k", "1");
    assert_invalid(tx.commit(), "no merge operator");
    assert_eq!(plain.len().unwrap(), 0);
}

#[test]
fn add_i64_refuses_operands_that_are_not_counters() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
    for bad in ["", "+1", "01", "1.5", "x", "99999999999999999999"] {
        assert_invalid(c.merge("k", bad), "refused the operand");
    }
    c.merge("k", "-3").unwrap();
    c.merge("k", "10").unwrap();
    assert_eq!(c.get("k").unwrap(), Some(b"7".to_vec()));
    // A base that is not a counter fails the read, naming the operator and the key.
    c.insert("text", "hello").unwrap();
    c.merge("text", "1").unwrap();
    match c.get("text") {
        Err(Error::MergeFailed { operator, key, .. }) => {
            assert_eq!(
                (operator.as_str(), key.as_slice()),
                ("cairn.add_i64", &b"text"[..])
            );
        }
        other => panic!("expected MergeFailed, got {other:?}"),
    }
}

#[test]
fn reopening_with_another_operator_or_none_is_refused() {
    let dir = mem_tempdir();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
        c.insert("plain", "5").unwrap();
        c.merge("m", "5").unwrap();
        db.close().unwrap();
    }
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_invalid(
            db.keyspace_with("c", with(Arc::new(Append::new()))),
            "\"cairn.add_i64\"",
        );
        // Without an operator: plain values read, operands do not, merges are refused.
        let c = db.keyspace("c").unwrap();
        assert_eq!(c.get("plain").unwrap(), Some(b"5".to_vec()));
        assert_invalid(c.get("m"), "no merge operator is registered");
        assert!(matches!(
            c.iter().collect::<cairn::Result<Vec<_>>>(),
            Err(Error::InvalidArgument(_))
        ));
        assert_invalid(c.merge("m", "1"), "no merge operator");
        db.close().unwrap();
    }
    {
        // The name survives reopens (and manifest snapshots) without an operator given.
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_invalid(
            db.keyspace_with("c", with(Arc::new(Append::new()))),
            "cairn.add_i64",
        );
        let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
        c.merge("m", "1").unwrap();
        assert_eq!(c.get("m").unwrap(), Some(b"6".to_vec()));
    }
}

#[test]
fn a_failing_operator_loses_nothing() {
    let dir = mem_tempdir();
    let probe = Arc::new(Probe::default());
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let c = db.keyspace_with("c", with(probe.clone())).unwrap();
    c.insert("k", "100").unwrap();
    for _ in 0..20 {
        c.merge("k", "1").unwrap();
    }
    db.flush().unwrap();
    probe.broken.store(true, Ordering::SeqCst);
    assert!(matches!(c.get("k"), Err(Error::MergeFailed { .. })));
    assert!(matches!(
        c.iter().next(),
        Some(Err(Error::MergeFailed { .. }))
    ));
    db.compact().unwrap();
    assert!(db.stats().merge_failures >= 1, "{:?}", db.stats());
    probe.broken.store(false, Ordering::SeqCst);
    assert_eq!(c.get("k").unwrap(), Some(b"120".to_vec()));
    // Now compaction combines them: a read merges nothing more. (A full compaction
    // rewrites only what is not yet in one level: a new operand brings the key back.)
    c.merge("k", "0").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    let before = probe.full_merges.load(Ordering::SeqCst);
    assert_eq!(c.get("k").unwrap(), Some(b"120".to_vec()));
    assert_eq!(probe.full_merges.load(Ordering::SeqCst), before);
}

#[test]
fn compaction_combines_operands_but_not_across_a_snapshot() {
    let dir = mem_tempdir();
    let probe = Arc::new(Probe::default());
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let c = db.keyspace_with("c", with(probe.clone())).unwrap();
    for _ in 0..50 {
        c.merge("k", "2").unwrap();
    }
    let snap = db.snapshot();
    for _ in 0..50 {
        c.merge("k", "1").unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    let reads = |probe: &Probe| {
        (
            probe.full_merges.load(Ordering::SeqCst),
            probe.operands_seen.load(Ordering::SeqCst),
        )
    };
    let (calls, seen) = reads(&probe);
    assert_eq!(snap.get(&c, "k").unwrap(), Some(b"100".to_vec()));
    assert_eq!(c.get("k").unwrap(), Some(b"150".to_vec()));
    // Below the snapshot the operands became one value; above it they were folded into
    // one operand (its base lies in the snapshot's stripe), so the newest read merges one.
    let (calls2, seen2) = reads(&probe);
    assert_eq!(calls2 - calls, 1, "only the newest read merges");
    assert_eq!(seen2 - seen, 1, "the 50 newer operands became one");
    drop(snap);
    c.merge("k", "0").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    let (calls, _) = reads(&probe);
    assert_eq!(c.get("k").unwrap(), Some(b"150".to_vec()));
    assert_eq!(
        reads(&probe).0,
        calls,
        "without the snapshot the key holds one value"
    );
}

#[test]
fn merged_values_carry_the_base_attributes_and_the_newest_seqno() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let log = db
        .keyspace_with("log", with(Arc::new(Append::with_separator("|"))))
        .unwrap();
    log.insert_entry("k", "a", &EntryOptions::new().meta(Meta::new(7, "m")))
        .unwrap();
    log.merge("k", "b").unwrap();
    log.merge("fresh", "x").unwrap();
    let head = log.head("k").unwrap().unwrap();
    assert_eq!(
        (head.tag, head.meta.as_slice(), head.value_len),
        (7, &b"m"[..], 3)
    );
    assert_eq!(head.seqno, db.snapshot().seqno() - 1);
    assert_eq!(log.get("k").unwrap(), Some(b"a|b".to_vec()));
    let fresh = log.head("fresh").unwrap().unwrap();
    assert_eq!((fresh.tag, fresh.value_len), (0, 1));
    assert!(log.contains_key("fresh").unwrap());
    let mut buf = Vec::new();
    assert!(log.get_into("k", &mut buf).unwrap());
    assert_eq!(buf, b"a|b");
    // Removes and range removes end the chain.
    log.remove("k").unwrap();
    log.merge("k", "c").unwrap();
    assert_eq!(log.get("k").unwrap(), Some(b"c".to_vec()));
    log.remove_range("a".."z").unwrap();
    assert_eq!(log.get("k").unwrap(), None);
    log.merge("k", "d").unwrap();
    assert_eq!(log.get("k").unwrap(), Some(b"d".to_vec()));
    assert_eq!(log.len().unwrap(), 1);
}

#[test]
fn a_separated_base_is_read_from_the_value_log() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let opts = KeyspaceOptions::separated(64).merge_operator(Arc::new(Append::new()));
    let big = db.keyspace_with("big", opts).unwrap();
    let base = vec![b'x'; 1000];
    big.insert("k", &base).unwrap();
    assert!(big.head("k").unwrap().unwrap().separated);
    big.merge("k", "tail").unwrap();
    let want = [base.as_slice(), b"tail"].concat();
    assert_eq!(big.get("k").unwrap(), Some(want.clone()));
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(big.get("k").unwrap(), Some(want.clone()));
    let rev: Vec<_> = big.iter().rev().map(|r| r.unwrap()).collect();
    assert_eq!(rev, vec![(b"k".to_vec(), want)]);
}

#[test]
fn counters_read_through_operands() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
    c.merge("n", "5").unwrap();
    assert_eq!(c.incr("n", 1).unwrap(), 6);
    c.merge("n", "10").unwrap();
    assert_eq!(c.incr("n", 0).unwrap(), 16);
    c.fetch_update("n", |v| v.map(|v| [v, b"0"].concat()))
        .unwrap();
    assert_eq!(c.get("n").unwrap(), Some(b"160".to_vec()));
    // In one batch: a merge then more merges.
    let mut batch = db.batch();
    batch.merge(&c, "n", "1");
    batch.merge(&c, "n", "-2");
    batch.commit().unwrap();
    assert_eq!(c.get("n").unwrap(), Some(b"159".to_vec()));
}

#[test]
fn transactions_see_their_merges_and_conflict_on_them() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
    c.insert("a", "10").unwrap();

    let mut tx = db.transaction();
    tx.merge(&c, "a", "5");
    tx.merge(&c, "a", "1");
    tx.merge(&c, "new", "3");
    assert_eq!(tx.get(&c, "a").unwrap(), Some(b"16".to_vec()));
    assert_eq!(tx.head(&c, "a").unwrap().unwrap().value_len, 2);
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = tx.prefix(&c, "").map(|r| r.unwrap()).collect();
    assert_eq!(
        scanned,
        vec![
            (b"a".to_vec(), b"16".to_vec()),
            (b"new".to_vec(), b"3".to_vec())
        ]
    );
    assert_eq!(tx.incr(&c, "new", 1).unwrap(), 4);
    // Not yet visible outside.
    assert_eq!(c.get("a").unwrap(), Some(b"10".to_vec()));
    tx.commit().unwrap();
    assert_eq!(c.get("a").unwrap(), Some(b"16".to_vec()));
    assert_eq!(c.get("new").unwrap(), Some(b"4".to_vec()));

    // A merge onto the transaction's own insert or remove applies at once.
    let mut tx = db.transaction();
    tx.insert(&c, "b", "1");
    tx.merge(&c, "b", "1");
    tx.remove(&c, "a");
    tx.merge(&c, "a", "7");
    assert_eq!(tx.get(&c, "b").unwrap(), Some(b"2".to_vec()));
    tx.commit().unwrap();
    assert_eq!(c.get("b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(c.get("a").unwrap(), Some(b"7".to_vec()));

    // A merge is a write for conflict detection.
    let mut first = db.transaction();
    let mut second = db.transaction();
    first.merge(&c, "a", "1");
    second.merge(&c, "a", "1");
    first.commit().unwrap();
    assert!(second.commit().unwrap_err().is_conflict());
    assert_eq!(c.get("a").unwrap(), Some(b"8".to_vec()));
}

#[test]
fn a_read_only_open_reads_operands_with_the_operator_given() {
    let dir = mem_tempdir();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
        c.insert("k", "1").unwrap();
        c.merge("k", "2").unwrap();
        db.close().unwrap();
    }
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    let plain = db.keyspace("c").unwrap();
    assert_invalid(plain.get("k"), "no merge operator is registered");
    assert!(matches!(
        db.keyspace_with("c", with(Arc::new(Append::new()))),
        Err(Error::InvalidArgument(_))
    ));
    let c = db.keyspace_with("c", with(Arc::new(AddI64))).unwrap();
    assert_eq!(c.get("k").unwrap(), Some(b"3".to_vec()));
    assert!(matches!(c.merge("k", "1"), Err(Error::ReadOnly)));
}

/// Runs `f` on a thread of its own and returns what it returned, failing the test if it
/// has not returned within 20 s (a hang).
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .expect("the call hung")
}

#[test]
fn an_operator_that_panics_while_a_write_resolves_a_counter_stops_writes_without_a_hang() {
    let dir = mem_tempdir();
    let op = Arc::new(Probe::default());
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    let c = db.keyspace_with("c", with(op.clone())).unwrap();
    c.insert("plain", "1").unwrap();
    c.merge("n", "5").unwrap();
    assert_eq!(c.incr("n", 1).unwrap(), 6);
    c.merge("n", "1").unwrap();
    op.panics.store(true, Ordering::SeqCst);
    // The increment reads `n` through its operand inside the write group's leader: the
    // operator's panic reaches the caller, as any panic of the caller's own code would.
    let leader = {
        let c = c.clone();
        within_20s(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.incr("n", 1))).is_err()
        })
    };
    assert!(leader, "the increment returned instead of panicking");
    op.panics.store(false, Ordering::SeqCst);
    // Every later write is refused instead of waiting for a leader that is gone.
    for attempt in 0..3 {
        let c1 = c.clone();
        let r = within_20s(move || c1.insert(format!("k{attempt}"), "v"));
        assert!(matches!(r, Err(Error::Poisoned)), "{r:?}");
        let c2 = c.clone();
        let r = within_20s(move || c2.try_insert_with("t", "v", Some(Durability::Buffered)));
        assert!(matches!(r, Err(Error::Poisoned)), "{r:?}");
    }
    // Reads still work, and the store closes.
    assert_eq!(c.get("plain").unwrap(), Some(b"1".to_vec()));
    drop(c);
    let db = Arc::try_unwrap(db).map_err(|_| "still shared").unwrap();
    within_20s(move || db.close()).unwrap();
    // Reopened, it takes writes again and holds every acknowledged one.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let c = db
        .keyspace_with("c", with(Arc::new(Probe::default())))
        .unwrap();
    assert_eq!(c.get("n").unwrap(), Some(b"7".to_vec()));
    c.insert("after", "1").unwrap();
    assert_eq!(c.get("after").unwrap(), Some(b"1".to_vec()));
}
