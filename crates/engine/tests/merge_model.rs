//! Model-based property test of merge operators: random sequences of puts, removes,
//! range removes, merges (alone and in batches), flushes, compactions, reopens and
//! snapshots, applied to a store whose keyspace has a merge operator and to a model (a
//! `BTreeMap` holding each key's merged value, plus a saved copy per live snapshot).
//! After each step the point reads, forward and reverse scans and counts of the keyspace
//! (now and at every live snapshot) are compared with the model.
//!
//! Both built-in operators run: `AddI64` (every value and operand is a counter) and
//! `Append` with a separator. Tiny memtables and tables make flushes and compactions
//! (which combine operands, `compaction/stream.rs`) run all the time, so operands meet
//! their bases in memtables, level 0 and deeper levels, under live snapshots and not.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn::{AddI64, Append, Db, Keyspace, KeyspaceOptions, MergeOperator, Readable, Snapshot};
use proptest::prelude::*;

use ordered_common::{mem_tempdir, tiny};

#[derive(Debug, Clone)]
enum Op {
    Put(u8, i16),
    Delete(u8),
    RangeDelete(u8, u8),
    Merge(u8, i16),
    /// Two merges and a put of other keys in one batch.
    Batch(u8, i16, u8, i16),
    Flush,
    Compact,
    Reopen,
    Snapshot,
    DropSnapshot(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..8;
    let n = -50i16..50;
    prop_oneof![
        3 => (key.clone(), n.clone()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => key.clone().prop_map(Op::Delete),
        1 => (key.clone(), 1u8..4).prop_map(|(k, w)| Op::RangeDelete(k, k + w)),
        8 => (key.clone(), n.clone()).prop_map(|(k, v)| Op::Merge(k, v)),
        2 => (key.clone(), n.clone(), key, n).prop_map(|(a, x, b, y)| Op::Batch(a, x, b, y)),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        1 => Just(Op::Snapshot),
        1 => (0usize..4).prop_map(Op::DropSnapshot),
    ]
}

fn key(k: u8) -> Vec<u8> {
    vec![b'k', k]
}

/// What the two built-ins do, in the model.
#[derive(Clone, Copy)]
enum Kind {
    Add,
    Append,
    /// `Append` in a keyspace that separates values of 3 bytes and more into the value
    /// log, so bases are often separated (compaction keeps those and folds the operands).
    AppendSeparated,
}

impl Kind {
    fn operator(self) -> Arc<dyn MergeOperator> {
        match self {
            Kind::Add => Arc::new(AddI64),
            Kind::Append | Kind::AppendSeparated => Arc::new(Append::with_separator(",")),
        }
    }

    /// The bytes written for `n` (a value or an operand).
    fn text(self, n: i16) -> Vec<u8> {
        match self {
            Kind::Add => n.to_string().into_bytes(),
            Kind::Append | Kind::AppendSeparated => format!("v{n}").into_bytes(),
        }
    }

    fn merge(self, base: Option<&Vec<u8>>, operand: &[u8]) -> Vec<u8> {
        match self {
            Kind::Add => {
                let b: i64 = base.map_or(0, |b| std::str::from_utf8(b).unwrap().parse().unwrap());
                let o: i64 = std::str::from_utf8(operand).unwrap().parse().unwrap();
                (b + o).to_string().into_bytes()
            }
            Kind::Append | Kind::AppendSeparated => match base {
                None => operand.to_vec(),
                Some(b) => [b.as_slice(), b",", operand].concat(),
            },
        }
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &std::path::Path, kind: Kind) -> (Db, Keyspace) {
    let db = Db::open(dir, tiny(2 << 10, 256)).unwrap();
    let options = match kind {
        Kind::AppendSeparated => KeyspaceOptions::separated(3),
        _ => KeyspaceOptions::default(),
    };
    let ks = db
        .keyspace_with("m", options.merge_operator(kind.operator()))
        .unwrap();
    (db, ks)
}

/// Compares every read of `ks` (at `snapshot`, or now) with `model`.
fn check(ks: &Keyspace, snapshot: Option<&Snapshot>, model: &Model) -> Result<(), TestCaseError> {
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = match snapshot {
        Some(s) => s.range::<Vec<u8>, _>(ks, ..).map(|r| r.unwrap()).collect(),
        None => ks.iter().map(|r| r.unwrap()).collect(),
    };
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    prop_assert_eq!(&fwd, &expected, "forward scan");
    let mut rev: Vec<(Vec<u8>, Vec<u8>)> = match snapshot {
        Some(s) => s
            .range::<Vec<u8>, _>(ks, ..)
            .rev()
            .map(|r| r.unwrap())
            .collect(),
        None => ks.iter().rev().map(|r| r.unwrap()).collect(),
    };
    rev.reverse();
    prop_assert_eq!(&rev, &expected, "reverse scan");
    for k in 0..8u8 {
        let got = match snapshot {
            Some(s) => s.get(ks, key(k)).unwrap(),
            None => ks.get(key(k)).unwrap(),
        };
        prop_assert_eq!(got.as_ref(), model.get(&key(k)), "get {}", k);
    }
    if snapshot.is_none() {
        prop_assert_eq!(ks.len().unwrap(), model.len() as u64, "len");
        for k in 0..8u8 {
            let head = ks.head(key(k)).unwrap();
            prop_assert_eq!(
                head.map(|h| h.value_len),
                model.get(&key(k)).map(|v| v.len() as u64),
                "head {}",
                k
            );
            let mut in_place = None;
            ks.get_with(key(k), |v| in_place = Some(v.to_vec()))
                .unwrap();
            prop_assert_eq!(in_place.as_ref(), model.get(&key(k)), "get_with {}", k);
        }
        // A prefix scan from the middle, both ways.
        let mid: Vec<(Vec<u8>, Vec<u8>)> = ks.range(key(3)..key(6)).map(|r| r.unwrap()).collect();
        let expected_mid: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(key(3)..key(6))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        prop_assert_eq!(&mid, &expected_mid, "range scan");
    }
    Ok(())
}

fn run(kind: Kind, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = mem_tempdir();
    let (mut db, mut ks) = open(dir.path(), kind);
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    for op in ops {
        match op {
            Op::Put(k, n) => {
                ks.insert(key(k), kind.text(n)).unwrap();
                model.insert(key(k), kind.text(n));
            }
            Op::Delete(k) => {
                ks.remove(key(k)).unwrap();
                model.remove(&key(k));
            }
            Op::RangeDelete(a, b) => {
                ks.remove_range(key(a)..key(b)).unwrap();
                model.retain(|k, _| !(key(a) <= *k && *k < key(b)));
            }
            Op::Merge(k, n) => {
                ks.merge(key(k), kind.text(n)).unwrap();
                let next = kind.merge(model.get(&key(k)), &kind.text(n));
                model.insert(key(k), next);
            }
            Op::Batch(a, x, b, y) => {
                let mut batch = db.batch();
                batch.merge(&ks, key(a), kind.text(x));
                batch.merge(&ks, key(b), kind.text(y));
                batch.insert(&ks, key((a + 1) % 8), kind.text(y));
                batch.commit().unwrap();
                let next = kind.merge(model.get(&key(a)), &kind.text(x));
                model.insert(key(a), next);
                let next = kind.merge(model.get(&key(b)), &kind.text(y));
                model.insert(key(b), next);
                model.insert(key((a + 1) % 8), kind.text(y));
            }
            Op::Flush => {
                db.flush().unwrap();
                db.wait_for_compactions().unwrap();
            }
            Op::Compact => {
                db.compact().unwrap();
            }
            Op::Reopen => {
                snaps.clear();
                drop(ks);
                db.close().unwrap();
                (db, ks) = open(dir.path(), kind);
            }
            Op::Snapshot => snaps.push((db.snapshot(), model.clone())),
            Op::DropSnapshot(i) => {
                if i < snaps.len() {
                    snaps.remove(i);
                }
            }
        }
        check(&ks, None, &model)?;
        for (snap, saved) in &snaps {
            check(&ks, Some(snap), saved)?;
        }
    }
    prop_assert_eq!(db.stats().merge_failures, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn add_i64_matches_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(Kind::Add, ops)?;
    }

    #[test]
    fn append_matches_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(Kind::Append, ops)?;
    }

    #[test]
    fn append_onto_separated_values_matches_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(Kind::AppendSeparated, ops)?;
    }
}
