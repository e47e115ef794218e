//! The borrowing scan, `ScanCursor`, against the owned one, `Iter`: random puts (small,
//! large enough to be separated into the value log, with metadata, with a time to live),
//! removes, range removes and merge operands, with flushes, compactions, snapshots and
//! the clock moving between them. After each step a forward and a reverse cursor over
//! random bounds, now and at the live snapshot, must yield exactly what
//! `Keyspace::range` (and `.rev()`) yields there. And the error path: a damaged table
//! read through a cursor gives `Corruption`, then nothing.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use cairn::{Append, Clock, Db, Keyspace, KeyspaceOptions, Meta, Readable, ScanCursor, Snapshot};
use proptest::prelude::*;

use ordered_common::{mem_tempdir, tiny};

const START: u64 = 1_700_000_000_000;
/// Values of this many bytes and more go to the value log.
const SEPARATE: usize = 48;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, Clone)]
enum Op {
    /// A plain value: short, or long enough to be separated.
    Put(u8, bool),
    /// A value with metadata.
    PutMeta(u8),
    /// A value living `secs` seconds.
    PutTtl(u8, u8),
    Delete(u8),
    RangeDelete(u8, u8),
    Merge(u8),
    /// Moves the clock on by this many seconds.
    Tick(u8),
    Flush,
    Compact,
    /// Takes a snapshot (replacing the one held).
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..24;
    prop_oneof![
        6 => (key.clone(), any::<bool>()).prop_map(|(k, big)| Op::Put(k, big)),
        1 => key.clone().prop_map(Op::PutMeta),
        2 => (key.clone(), 1u8..6).prop_map(|(k, s)| Op::PutTtl(k, s)),
        3 => key.clone().prop_map(Op::Delete),
        1 => (key.clone(), 1u8..6).prop_map(|(k, w)| Op::RangeDelete(k, k.saturating_add(w))),
        4 => key.prop_map(Op::Merge),
        1 => (1u8..4).prop_map(Op::Tick),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Snapshot),
    ]
}

fn key(k: u8) -> Vec<u8> {
    vec![b'k', k]
}

/// A key bound: none, or included/excluded at a key that may or may not be written.
fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => (0u8..26).prop_map(|k| Bound::Included(key(k))),
        2 => (0u8..26).prop_map(|k| Bound::Excluded(key(k))),
    ]
}

/// The value written by step `i`: `big` values are separated.
fn value(i: usize, big: bool) -> Vec<u8> {
    let len = if big { SEPARATE + i % 40 } else { 1 + i % 20 };
    (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect()
}

/// Everything a cursor yields, failing the test on an error.
fn drain(mut c: ScanCursor) -> Pairs {
    let mut out = Vec::new();
    while let Some((k, v)) = c.next().unwrap() {
        out.push((k.to_vec(), v.to_vec()));
    }
    // The end is final.
    assert!(c.next().unwrap().is_none());
    out
}

type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Compares cursors with `range` over `bounds`, at `snapshot` or now.
fn check(ks: &Keyspace, snapshot: Option<&Snapshot>, bounds: &Range) -> Result<(), TestCaseError> {
    let (fwd, rev, cursor, cursor_rev) = match snapshot {
        Some(s) => (
            s.range(ks, bounds.clone()),
            s.range(ks, bounds.clone()),
            s.cursor(ks, bounds.clone()),
            s.cursor_rev(ks, bounds.clone()),
        ),
        None => (
            ks.range(bounds.clone()),
            ks.range(bounds.clone()),
            ks.cursor(bounds.clone()),
            ks.cursor_rev(bounds.clone()),
        ),
    };
    prop_assert!(!cursor.is_reverse() && cursor_rev.is_reverse());
    let expected: Pairs = fwd.map(|r| r.unwrap()).collect();
    let expected_rev: Pairs = rev.rev().map(|r| r.unwrap()).collect();
    prop_assert_eq!(drain(cursor), expected, "forward over {:?}", bounds);
    prop_assert_eq!(drain(cursor_rev), expected_rev, "reverse over {:?}", bounds);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn cursors_yield_what_range_yields(
        ops in proptest::collection::vec(op(), 1..120),
        ranges in proptest::collection::vec((bound(), bound()), 4),
    ) {
        let dir = mem_tempdir();
        let clock = Clock::manual(START);
        let db = Db::open(dir.path(), tiny(2 << 10, 256).clock(clock.clone())).unwrap();
        let options = KeyspaceOptions::separated(SEPARATE)
            .merge_operator(Arc::new(Append::with_separator(",")));
        let ks = db.keyspace_with("c", options).unwrap();
        let mut snapshot: Option<Snapshot> = None;
        let all: Range = (Bound::Unbounded, Bound::Unbounded);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Put(k, big) => ks.insert(key(k), value(i, big)).unwrap(),
                Op::PutMeta(k) => ks
                    .insert_meta(key(k), value(i, i % 3 == 0), Meta::new(7, "m"))
                    .unwrap(),
                Op::PutTtl(k, secs) => ks
                    .insert_ttl(key(k), value(i, i % 2 == 0), Duration::from_secs(secs.into()))
                    .unwrap(),
                Op::Delete(k) => ks.remove(key(k)).unwrap(),
                Op::RangeDelete(a, b) => ks.remove_range(key(a)..key(b)).unwrap(),
                Op::Merge(k) => ks.merge(key(k), value(i, false)).unwrap(),
                Op::Tick(secs) => clock.advance(Duration::from_secs(secs.into())),
                Op::Flush => db.flush().unwrap(),
                Op::Compact => {
                    db.compact().unwrap();
                    db.wait_for_compactions().unwrap();
                }
                Op::Snapshot => snapshot = Some(db.snapshot()),
            }
            check(&ks, None, &all)?;
            check(&ks, snapshot.as_ref(), &ranges[i % ranges.len()])?;
        }
        for bounds in &ranges {
            check(&ks, None, bounds)?;
            if let Some(s) = &snapshot {
                check(&ks, Some(s), bounds)?;
            }
        }
    }
}

#[test]
fn a_cursor_of_a_dropped_keyspace_or_another_store_fails_first_then_ends() {
    let dir = mem_tempdir();
    let other = mem_tempdir();
    let db = Db::open(dir.path(), tiny(64 << 10, 1024)).unwrap();
    let elsewhere = Db::open(other.path(), tiny(64 << 10, 1024)).unwrap();
    let ks = db.keyspace("a").unwrap();
    ks.insert("k", "v").unwrap();
    let foreign = elsewhere.snapshot();
    let mut c = foreign.cursor::<&str, _>(&ks, ..);
    assert!(matches!(c.next(), Err(cairn::Error::InvalidArgument(_))));
    assert_eq!(c.next().unwrap(), None);

    db.drop_keyspace("a").unwrap();
    let mut c = ks.cursor_rev::<&str, _>(..);
    assert!(c.next().is_err());
    assert_eq!(c.next().unwrap(), None);
}

#[test]
fn a_damaged_table_read_through_a_cursor_is_corruption_then_nothing() {
    let dir = mem_tempdir();
    let options = || tiny(1 << 20, 512).block_cache_size(0);
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let ks = db.keyspace("d").unwrap();
        for i in 0..2000u32 {
            ks.insert(format!("key{i:05}"), format!("value{i:05}"))
                .unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let tables: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    // Flip bytes in the middle of the data blocks (the index and footer are at the end).
    let mut bytes = std::fs::read(&tables[0]).unwrap();
    let at = bytes.len() / 3;
    for b in &mut bytes[at..at + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&tables[0], &bytes).unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.get_keyspace("d").unwrap();
    for reverse in [false, true] {
        let mut c = if reverse {
            ks.cursor_rev::<&str, _>(..)
        } else {
            ks.cursor::<&str, _>(..)
        };
        let mut before = 0;
        let err = loop {
            match c.next() {
                Ok(Some(_)) => before += 1,
                Ok(None) => panic!("the damage went unnoticed ({before} pairs read)"),
                Err(e) => break e,
            }
        };
        assert!(err.is_corruption(), "{err}");
        assert!(before < 2000);
        assert_eq!(c.next().unwrap(), None);
        assert_eq!(c.next().unwrap(), None);
        // The owned scan stops at the same pair with the same kind of error.
        let mut it = ks.iter();
        let owned: Vec<_> = if reverse {
            it.by_ref().rev().take_while(|r| r.is_ok()).collect()
        } else {
            it.by_ref().take_while(|r| r.is_ok()).collect()
        };
        assert_eq!(owned.len(), before);
        assert!(it.next().is_none());
    }
}
