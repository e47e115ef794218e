//! Crash, fault and corruption tests of the whole store on [`MemFs`] (reliability plan,
//! layers T2, T6 by injection and T7), checked against the durability contract:
//!
//! - [`exhaustive`]: small workloads in every durability mode, a crash after every
//!   file-system call, several damaged images per crash point, each reopened and compared
//!   with an expected-state [`Model`]; then crashes during those recoveries.
//! - [`faults`]: an I/O error (EIO, ENOSPC, a lost fsync) at the n-th call of each kind, for
//!   n = 1, 2, ... until the workload no longer reaches it.
//! - [`corruption`]: flipped bytes and truncations of every file of a finished store.
//! - [`regressions`]: one named test per recovery bug those found.
//!
//! This file holds what they share: the [`Model`] of what the store must contain after a
//! prefix of the workload, the workloads ([`Step`]), the [`Driver`] that runs them while
//! telling the [`Recorder`] how far it got, and reading a store back.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod corruption;
mod exhaustive;
mod faults;
mod recorder;
mod regressions;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use super::{Db, Keyspace, DEFAULT_KEYSPACE};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, MemFs};
use crate::options::{Durability, Options};
use recorder::Recorder;

/// Every keyspace's contents by name.
pub(super) type Contents = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// The store directory of the tests.
fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// The five durability modes, as the plan's contract table lists them.
fn modes() -> [Durability; 5] {
    [
        Durability::Sync,
        Durability::Periodic(Duration::from_millis(1)),
        Durability::Buffered,
        Durability::Async { queue_depth: 4 },
        Durability::None,
    ]
}

/// Small sizes so flushes and compactions happen within tiny workloads; one background
/// thread so they run in a predictable order.
fn options(durability: Durability) -> Options {
    Options {
        durability,
        memtable_size: 4 << 10,
        block_size: 256,
        l0_compaction_trigger: 2,
        level1_size: 16 << 10,
        table_size: 8 << 10,
        background_threads: 1,
        ..Options::default()
    }
}

/// One operation of a workload. Keyspaces are named; a name resolves to the keyspace
/// alive under it when the step runs.
#[derive(Debug, Clone)]
enum Step {
    Put(&'static str, &'static str, &'static str),
    /// A put with its own durability instead of the store's.
    PutWith(&'static str, &'static str, &'static str, Durability),
    Del(&'static str, &'static str),
    /// `remove_range(start..end)`: one range tombstone.
    DelRange(&'static str, &'static str, &'static str),
    /// `incr` of a counter; the model predicts the new value (or the refusal, after
    /// which nothing is written).
    Incr(&'static str, &'static str, i64),
    /// An `incr` with its own durability instead of the store's.
    IncrWith(&'static str, &'static str, i64, Durability),
    /// A merge of `delta` into a counter with the `AddI64` operator (registered for the
    /// keyspace when the step runs; keyspaces named `merged*` get it when read back).
    Merge(&'static str, &'static str, i64),
    /// An atomic batch: `None` removes the key.
    Batch(Vec<(&'static str, &'static str, Option<&'static str>)>),
    /// An atomic batch with counter increments among its writes, committed with the
    /// store's durability; the model resolves each increment (a refused batch writes
    /// nothing and is not a write of the model).
    BatchIncr(Vec<(&'static str, &'static str, TxOp)>),
    /// A transaction across keyspaces (each key once), committed with its own durability:
    /// it reads every key it writes, then writes them.
    Txn(Vec<(&'static str, &'static str, TxOp)>, Durability),
    /// A transaction that reads and writes `(keyspace, key)` and writes the others, then
    /// loses the race to a plain put of that key: its commit must fail with `Conflict`
    /// and write nothing (the plain put is a write of the model).
    TxnConflict(
        &'static str,
        &'static str,
        Vec<(&'static str, &'static str, TxOp)>,
    ),
    CreateKs(&'static str),
    DropKs(&'static str),
    /// `db.flush()`: seal the memtable and wait until it is a table.
    Flush,
    /// `db.wait_for_compactions()`.
    Compact,
    /// `db.flush_wal(sync)`.
    FlushWal(bool),
    /// `db.close()`, then open again.
    Reopen,
}

/// One write of a transaction or of a batch with increments.
#[derive(Debug, Clone, Copy)]
enum TxOp {
    Put(&'static str),
    Del,
    Incr(i64),
}

/// (keyspace instance, key, value; `None` removes).
type PointWrite = (usize, Vec<u8>, Option<Vec<u8>>);

/// One acknowledged (or in-flight) write of the model.
#[derive(Debug, Clone)]
struct Write {
    /// The seqno of its last operation.
    last_seqno: u64,
    /// (keyspace instance, key, value; `None` removes).
    ops: Vec<(usize, Vec<u8>, Option<Vec<u8>>)>,
    /// A range remove instead of `ops`: (keyspace instance, start, end).
    range: Option<(usize, Vec<u8>, Vec<u8>)>,
}

/// The expected state: writes and keyspace changes in the order they were issued.
///
/// Writes (numbered by seqno) and keyspace changes (durable in the manifest when
/// acknowledged, in every mode) are two independent sequences; after a crash the store
/// must hold `state(j, m)`: the first `j` writes applied to the keyspaces alive after the
/// first `m` keyspace changes.
#[derive(Debug, Clone, Default)]
struct Model {
    /// The name of each keyspace instance; instance 0 is the default keyspace.
    names: Vec<String>,
    /// (instance, created?) in order.
    ks_ops: Vec<(usize, bool)>,
    writes: Vec<Write>,
}

impl Model {
    fn new() -> Model {
        Model {
            names: vec![DEFAULT_KEYSPACE.to_string()],
            ..Model::default()
        }
    }

    fn alive(&self, ks_ops: usize) -> BTreeSet<usize> {
        let mut alive = BTreeSet::from([0]);
        for &(inst, created) in &self.ks_ops[..ks_ops] {
            if created {
                alive.insert(inst);
            } else {
                alive.remove(&inst);
            }
        }
        alive
    }

    /// The instance alive under `name` after every keyspace change so far.
    fn instance(&self, name: &str) -> Option<usize> {
        self.alive(self.ks_ops.len())
            .into_iter()
            .find(|i| self.names[*i] == name)
    }

    /// The contents after the first `writes` writes and `ks_ops` keyspace changes.
    fn state(&self, writes: usize, ks_ops: usize) -> Contents {
        let mut maps: BTreeMap<usize, BTreeMap<Vec<u8>, Vec<u8>>> = self
            .alive(ks_ops)
            .into_iter()
            .map(|i| (i, BTreeMap::new()))
            .collect();
        for w in &self.writes[..writes] {
            if let Some((inst, start, end)) = &w.range {
                if let Some(map) = maps.get_mut(inst) {
                    map.retain(|k, _| k < start || k >= end);
                }
            }
            for (inst, key, value) in &w.ops {
                if let Some(map) = maps.get_mut(inst) {
                    match value {
                        Some(v) => map.insert(key.clone(), v.clone()),
                        None => map.remove(key),
                    };
                }
            }
        }
        maps.into_iter()
            .map(|(i, m)| (self.names[i].clone(), m))
            .collect()
    }

    /// The store's last seqno after the first `writes` writes.
    fn seqno_after(&self, writes: usize) -> u64 {
        writes
            .checked_sub(1)
            .map_or(0, |i| self.writes[i].last_seqno)
    }

    /// How many writes lie entirely at or below `seqno`.
    fn writes_through(&self, seqno: u64) -> usize {
        self.writes
            .iter()
            .take_while(|w| w.last_seqno <= seqno)
            .count()
    }

    /// Every key ever written under keyspace `name` (to check point reads of absent keys).
    fn keys_of(&self, name: &str) -> BTreeSet<Vec<u8>> {
        self.writes
            .iter()
            .flat_map(|w| &w.ops)
            .filter(|(inst, _, _)| self.names[*inst] == name)
            .map(|(_, k, _)| k.clone())
            .collect()
    }

    /// The `(writes, ks_ops)` in the given ranges whose state is `got` with last seqno
    /// `seqno`, if any.
    fn find(
        &self,
        got: &Contents,
        seqno: u64,
        writes: (usize, usize),
        ks_ops: (usize, usize),
    ) -> Option<(usize, usize)> {
        (writes.0..=writes.1)
            .filter(|j| self.seqno_after(*j) == seqno)
            .flat_map(|j| (ks_ops.0..=ks_ops.1).map(move |m| (j, m)))
            .find(|(j, m)| self.state(*j, *m) == *got)
    }
}

/// How far a workload got, as the [`Recorder`] stamps it on each crash image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Marks {
    /// Writes begun (the last may still be in flight).
    started: usize,
    /// Writes acknowledged.
    acked: usize,
    ks_started: usize,
    ks_acked: usize,
    /// Writes the contract says survive a process crash: acknowledged `Sync`, `Periodic`
    /// and `Buffered` writes and everything before them, everything before a `flush_wal`,
    /// a flush or a close.
    process_floor: usize,
    /// Writes the contract says survive power loss: acknowledged `Sync` writes and
    /// everything before them, everything before `flush_wal(true)`, a flush or a close.
    power_floor: usize,
}

/// Runs workload steps against a store, keeping the [`Model`] and the [`Marks`] current
/// (and, with a recorder, publishing the marks before and after each call).
struct Driver {
    fs: Arc<dyn FileSystem>,
    options: Options,
    db: Option<Db>,
    handles: BTreeMap<String, Keyspace>,
    model: Model,
    marks: Marks,
    rec: Option<Recorder>,
}

impl Driver {
    fn new(fs: Arc<dyn FileSystem>, options: Options, rec: Option<Recorder>) -> Driver {
        Driver {
            fs,
            options,
            db: None,
            handles: BTreeMap::new(),
            model: Model::new(),
            marks: Marks::default(),
            rec,
        }
    }

    fn publish(&self) {
        if let Some(rec) = &self.rec {
            rec.set_marks(self.marks);
        }
    }

    fn open(&mut self) -> Result<()> {
        let db = Db::open_with_fs(Arc::clone(&self.fs), &dir(), self.options.clone())?;
        if let Some(rec) = &self.rec {
            rec.set_probe(&db);
        }
        self.db = Some(db);
        Ok(())
    }

    fn db(&self) -> Result<&Db> {
        self.db.as_ref().ok_or(Error::Poisoned)
    }

    fn handle(&mut self, name: &str) -> Result<Keyspace> {
        if let Some(ks) = self.handles.get(name) {
            return Ok(ks.clone());
        }
        let ks = self
            .db()?
            .get_keyspace(name)
            .ok_or_else(|| Error::invalid(format!("workload names a missing keyspace {name}")))?;
        self.handles.insert(name.to_string(), ks.clone());
        Ok(ks)
    }

    /// Every acknowledged write is now durable (a flush, `flush_wal(true)`, a close).
    fn all_durable(&mut self) {
        self.marks.power_floor = self.marks.acked;
        self.marks.process_floor = self.marks.acked;
    }

    fn write(
        &mut self,
        ops: &[(&str, &str, Option<&str>)],
        durability: Option<Durability>,
        batch: bool,
    ) -> Result<()> {
        let mut resolved = Vec::new();
        let mut handles = Vec::new();
        for (name, key, value) in ops {
            let inst = self.model.instance(name).unwrap();
            resolved.push((
                inst,
                key.as_bytes().to_vec(),
                value.map(|v| v.as_bytes().to_vec()),
            ));
            handles.push(self.handle(name)?);
        }
        let db = self.db()?.clone();
        let predicted = db.last_seqno() + ops.len() as u64;
        self.model.writes.push(Write {
            last_seqno: predicted,
            ops: resolved,
            range: None,
        });
        self.marks.started += 1;
        self.publish();
        let result = if batch {
            let mut b = db.batch();
            for ((_, key, value), ks) in ops.iter().zip(&handles) {
                match value {
                    Some(v) => b.insert(ks, key, v),
                    None => b.remove(ks, key),
                }
            }
            b.commit_with(durability)
        } else {
            let (_, key, value) = ops[0];
            match value {
                Some(v) => handles[0].insert_with(key, v, durability),
                None => handles[0].remove_with(key, durability),
            }
        };
        result?;
        assert_eq!(db.last_seqno(), predicted, "seqnos are assigned in order");
        self.acknowledged(durability);
        Ok(())
    }

    /// An `incr`: the model's current value decides the expected outcome; a refused one
    /// (not a counter, overflow) must write nothing and is not a write of the model.
    fn incr(
        &mut self,
        name: &str,
        key: &str,
        delta: i64,
        durability: Option<Durability>,
    ) -> Result<()> {
        let inst = self.model.instance(name).unwrap();
        let now = self
            .model
            .state(self.model.writes.len(), self.model.ks_ops.len())
            .get(name)
            .and_then(|m| m.get(key.as_bytes()).cloned());
        let expected = super::counter::add(key.as_bytes(), now.as_deref(), i128::from(delta));
        let ks = self.handle(name)?;
        let db = self.db()?.clone();
        let before = db.last_seqno();
        let Ok(value) = expected else {
            let got = ks.incr_with(key, delta, durability);
            assert!(
                matches!(
                    (&got, &expected),
                    (
                        Err(Error::NotACounter { .. }),
                        Err(Error::NotACounter { .. })
                    ) | (
                        Err(Error::CounterOverflow { .. }),
                        Err(Error::CounterOverflow { .. })
                    )
                ),
                "incr({name}, {key}, {delta}): {got:?}, expected {expected:?}"
            );
            assert_eq!(db.last_seqno(), before, "a refused incr writes nothing");
            return Ok(());
        };
        self.model.writes.push(Write {
            last_seqno: before + 1,
            ops: vec![(
                inst,
                key.as_bytes().to_vec(),
                Some(value.to_string().into_bytes()),
            )],
            range: None,
        });
        self.marks.started += 1;
        self.publish();
        let got = ks.incr_with(key, delta, durability)?;
        assert_eq!(got, value, "incr({name}, {key}, {delta})");
        assert_eq!(db.last_seqno(), before + 1, "seqnos are assigned in order");
        self.acknowledged(durability);
        Ok(())
    }

    /// The values `ops` leave, applied in order over the model's current state: each op
    /// resolved to a put or a remove (an increment to the put of its new value), or the
    /// error of the first increment that fails.
    fn resolve(&self, ops: &[(&str, &str, TxOp)]) -> std::result::Result<Vec<PointWrite>, Error> {
        let now = self
            .model
            .state(self.model.writes.len(), self.model.ks_ops.len());
        let mut seen: BTreeMap<(String, Vec<u8>), Option<Vec<u8>>> = BTreeMap::new();
        let mut out = Vec::new();
        for (name, key, op) in ops {
            let id = (name.to_string(), key.as_bytes().to_vec());
            let current = match seen.get(&id) {
                Some(v) => v.clone(),
                None => now.get(*name).and_then(|m| m.get(key.as_bytes()).cloned()),
            };
            let value = match op {
                TxOp::Put(v) => Some(v.as_bytes().to_vec()),
                TxOp::Del => None,
                TxOp::Incr(d) => Some(
                    super::counter::add(key.as_bytes(), current.as_deref(), i128::from(*d))?
                        .to_string()
                        .into_bytes(),
                ),
            };
            seen.insert(id, value.clone());
            let inst = self.model.instance(name).unwrap();
            out.push((inst, key.as_bytes().to_vec(), value));
        }
        Ok(out)
    }

    /// A batch with increments (see [`Step::BatchIncr`]).
    fn batch_incr(&mut self, ops: &[(&str, &str, TxOp)]) -> Result<()> {
        let expected = self.resolve(ops);
        let mut handles = Vec::new();
        for (name, ..) in ops {
            handles.push(self.handle(name)?);
        }
        let db = self.db()?.clone();
        let before = db.last_seqno();
        let mut b = db.batch();
        for ((_, key, op), ks) in ops.iter().zip(&handles) {
            match op {
                TxOp::Put(v) => b.insert(ks, key, v),
                TxOp::Del => b.remove(ks, key),
                TxOp::Incr(d) => b.incr(ks, key, *d),
            }
        }
        let resolved = match expected {
            Ok(resolved) => resolved,
            Err(want) => {
                let got = b.commit_counters();
                assert!(
                    matches!(
                        (&got, &want),
                        (Err(Error::NotACounter { .. }), Error::NotACounter { .. })
                            | (
                                Err(Error::CounterOverflow { .. }),
                                Error::CounterOverflow { .. }
                            )
                    ),
                    "batch {ops:?}: {got:?}, expected {want:?}"
                );
                assert_eq!(db.last_seqno(), before, "a refused batch writes nothing");
                return Ok(());
            }
        };
        let counters: Vec<i64> = ops
            .iter()
            .zip(&resolved)
            .filter(|((_, _, op), _)| matches!(op, TxOp::Incr(_)))
            .map(|(_, (_, _, v))| {
                String::from_utf8(v.clone().unwrap_or_default())
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        self.model.writes.push(Write {
            last_seqno: before + ops.len() as u64,
            ops: resolved,
            range: None,
        });
        self.marks.started += 1;
        self.publish();
        let done = b.commit_counters()?;
        assert_eq!(done.counters(), counters, "batch {ops:?}");
        assert_eq!(db.last_seqno(), before + ops.len() as u64);
        assert_eq!(done.seqno(), db.last_seqno());
        self.acknowledged(None);
        Ok(())
    }

    /// A merge: the model records the sum the operand makes with the current value (the
    /// workloads merge only into counters), as the write of one op.
    fn merge(&mut self, name: &str, key: &str, delta: i64) -> Result<()> {
        let inst = self.model.instance(name).unwrap();
        let now = self
            .model
            .state(self.model.writes.len(), self.model.ks_ops.len())
            .get(name)
            .and_then(|m| m.get(key.as_bytes()).cloned());
        let value = super::counter::add(key.as_bytes(), now.as_deref(), i128::from(delta))?;
        let ks = merge_handle(self.db()?, name)?;
        let db = self.db()?.clone();
        let before = db.last_seqno();
        self.model.writes.push(Write {
            last_seqno: before + 1,
            ops: vec![(
                inst,
                key.as_bytes().to_vec(),
                Some(value.to_string().into_bytes()),
            )],
            range: None,
        });
        self.marks.started += 1;
        self.publish();
        ks.merge(key, delta.to_string())?;
        assert_eq!(db.last_seqno(), before + 1, "seqnos are assigned in order");
        self.acknowledged(None);
        Ok(())
    }

    /// Fills `tx` with `ops`, reading each key first (so it is in the read set too).
    fn fill(&mut self, tx: &mut super::Transaction, ops: &[(&str, &str, TxOp)]) -> Result<()> {
        for (name, key, op) in ops {
            let ks = self.handle(name)?;
            tx.get(&ks, key)?;
            match op {
                TxOp::Put(v) => tx.insert(&ks, key, v),
                TxOp::Del => tx.remove(&ks, key),
                TxOp::Incr(d) => {
                    tx.incr(&ks, key, *d)?;
                }
            }
        }
        Ok(())
    }

    /// A transaction committed with `durability` (see [`Step::Txn`]).
    fn txn(&mut self, ops: &[(&str, &str, TxOp)], durability: Durability) -> Result<()> {
        let resolved = self
            .resolve(ops)
            .unwrap_or_else(|e| panic!("workload transaction {ops:?} fails: {e}"));
        let db = self.db()?.clone();
        let mut tx = db.transaction();
        self.fill(&mut tx, ops)?;
        let before = db.last_seqno();
        self.model.writes.push(Write {
            last_seqno: before + ops.len() as u64,
            ops: resolved,
            range: None,
        });
        self.marks.started += 1;
        self.publish();
        let seqno = tx.commit_with(Some(durability))?;
        assert_eq!(seqno, before + ops.len() as u64, "transaction {ops:?}");
        assert_eq!(db.last_seqno(), seqno);
        self.acknowledged(Some(durability));
        Ok(())
    }

    /// A transaction that must conflict (see [`Step::TxnConflict`]).
    fn txn_conflict(&mut self, name: &str, key: &str, ops: &[(&str, &str, TxOp)]) -> Result<()> {
        let db = self.db()?.clone();
        let mut tx = db.transaction();
        let ks = self.handle(name)?;
        tx.get(&ks, key)?;
        tx.insert(&ks, key, "loser");
        self.fill(&mut tx, ops)?;
        self.write(&[(name, key, Some("winner"))], None, false)?;
        let before = db.last_seqno();
        let got = tx.commit_with(Some(Durability::Sync));
        assert!(
            matches!(got, Err(Error::Conflict { .. })),
            "a transaction over a key written after its snapshot: {got:?}"
        );
        assert_eq!(
            db.last_seqno(),
            before,
            "a conflicting transaction writes nothing"
        );
        Ok(())
    }

    /// Marks the write in flight acknowledged, with what its durability promises.
    fn acknowledged(&mut self, durability: Option<Durability>) {
        self.marks.acked += 1;
        match durability.unwrap_or(self.options.durability) {
            Durability::Sync => self.all_durable(),
            Durability::Periodic(_) | Durability::Buffered => {
                self.marks.process_floor = self.marks.acked;
            }
            Durability::Async { .. } | Durability::None => {}
        }
        self.publish();
    }

    fn remove_range(&mut self, name: &str, start: &str, end: &str) -> Result<()> {
        let inst = self.model.instance(name).unwrap();
        let handle = self.handle(name)?;
        let db = self.db()?.clone();
        let predicted = db.last_seqno() + 1;
        self.model.writes.push(Write {
            last_seqno: predicted,
            ops: Vec::new(),
            range: Some((inst, start.as_bytes().to_vec(), end.as_bytes().to_vec())),
        });
        self.marks.started += 1;
        self.publish();
        handle.remove_range(start..end)?;
        assert_eq!(db.last_seqno(), predicted, "seqnos are assigned in order");
        self.acknowledged(None);
        Ok(())
    }

    fn keyspace_change(&mut self, name: &str, create: bool) -> Result<()> {
        let inst = if create {
            self.model.names.push(name.to_string());
            self.model.names.len() - 1
        } else {
            self.model.instance(name).unwrap()
        };
        self.model.ks_ops.push((inst, create));
        self.marks.ks_started += 1;
        self.publish();
        self.handles.remove(name);
        if create {
            self.db()?.keyspace(name)?;
        } else {
            self.db()?.drop_keyspace(name)?;
        }
        self.marks.ks_acked += 1;
        self.publish();
        Ok(())
    }

    /// Closes the store (recording how durable that made everything).
    fn close(&mut self) -> Result<()> {
        self.handles.clear();
        let Some(db) = self.db.take() else {
            return Ok(());
        };
        let probe = db.clone();
        db.close()?;
        self.all_durable();
        self.publish();
        if let Some(rec) = &self.rec {
            rec.note_durable(probe.durable_seqno());
        }
        Ok(())
    }

    fn step(&mut self, step: &Step) -> Result<()> {
        match step {
            Step::Put(ks, k, v) => self.write(&[(ks, k, Some(v))], None, false),
            Step::PutWith(ks, k, v, d) => self.write(&[(ks, k, Some(v))], Some(*d), false),
            Step::Del(ks, k) => self.write(&[(ks, k, None)], None, false),
            Step::DelRange(ks, a, b) => self.remove_range(ks, a, b),
            Step::Batch(ops) => self.write(ops, None, true),
            Step::BatchIncr(ops) => self.batch_incr(ops),
            Step::Txn(ops, d) => self.txn(ops, *d),
            Step::TxnConflict(ks, k, ops) => self.txn_conflict(ks, k, ops),
            Step::Incr(ks, k, d) => self.incr(ks, k, *d, None),
            Step::IncrWith(ks, k, d, dur) => self.incr(ks, k, *d, Some(*dur)),
            Step::Merge(ks, k, d) => self.merge(ks, k, *d),
            Step::CreateKs(name) => self.keyspace_change(name, true),
            Step::DropKs(name) => self.keyspace_change(name, false),
            Step::Flush => {
                self.db()?.flush()?;
                self.all_durable();
                self.publish();
                Ok(())
            }
            Step::Compact => self.db()?.wait_for_compactions(),
            Step::FlushWal(sync) => {
                self.db()?.flush_wal(*sync)?;
                self.marks.process_floor = self.marks.acked;
                if *sync {
                    self.marks.power_floor = self.marks.acked;
                }
                self.publish();
                Ok(())
            }
            Step::Reopen => {
                self.close()?;
                self.open()
            }
        }
    }
}

/// Keyspace `name` of `db`, with the `AddI64` merge operator registered if its name
/// starts with `merged` (`Step::Merge`).
fn merge_handle(db: &Db, name: &str) -> Result<Keyspace> {
    let missing = || Error::invalid(format!("keyspace {name} listed but missing"));
    if !name.starts_with("merged") {
        return db.get_keyspace(name).ok_or_else(missing);
    }
    let options =
        crate::options::KeyspaceOptions::default().merge_operator(Arc::new(crate::merge::AddI64));
    match db.get_keyspace(name) {
        Some(_) => db.keyspace_with(name, options),
        None => Err(missing()),
    }
}

/// Reads every keyspace with forward scans, checking that a reverse scan agrees.
fn read_contents(db: &Db) -> Result<Contents> {
    let mut out = Contents::new();
    for name in db.keyspace_names() {
        let ks = merge_handle(db, &name)?;
        let forward: Vec<(Vec<u8>, Vec<u8>)> = ks.iter().collect::<Result<_>>()?;
        let mut backward: Vec<(Vec<u8>, Vec<u8>)> = ks.iter().rev().collect::<Result<_>>()?;
        backward.reverse();
        if forward != backward {
            return Err(Error::invalid(format!(
                "keyspace {name}: reverse scan disagrees with forward scan"
            )));
        }
        out.insert(name, forward.into_iter().collect());
    }
    Ok(out)
}

/// Point reads of every key the model ever wrote must agree with `expected`. An `Err`
/// is the store's error (for the corruption test to classify); a disagreement is a
/// message in `Ok(Err(..))`.
fn check_gets(
    db: &Db,
    model: &Model,
    expected: &Contents,
) -> Result<std::result::Result<(), String>> {
    for (name, map) in expected {
        let Ok(ks) = merge_handle(db, name) else {
            return Ok(Err(format!("keyspace {name} missing for point reads")));
        };
        let mut keys = model.keys_of(name);
        keys.extend(map.keys().cloned());
        keys.insert(b"never-written".to_vec());
        for key in keys {
            let got = ks.get(&key)?;
            if got.as_ref() != map.get(&key) {
                return Ok(Err(format!(
                    "get({name}, {}) = {:?}, expected {:?}",
                    String::from_utf8_lossy(&key),
                    got.map(|v| String::from_utf8_lossy(&v).into_owned()),
                    map.get(&key)
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                )));
            }
        }
    }
    Ok(Ok(()))
}

/// A short, readable form of contents for failure messages.
fn show(c: &Contents) -> String {
    c.iter()
        .map(|(name, map)| {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        String::from_utf8_lossy(k),
                        String::from_utf8_lossy(v)
                    )
                })
                .collect();
            format!("{name}{{{}}}", pairs.join(","))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Panics of the store's own threads (`cairn-*`), which would otherwise die silently.
static ENGINE_PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts panics on the store's threads, then reports them as usual.
fn watch_engine_threads() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("cairn-"))
            {
                ENGINE_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

fn engine_panics() -> usize {
    ENGINE_PANICS.load(Ordering::SeqCst)
}

/// An empty file system: the first open creates the store's directory (and a crash can
/// happen while it does).
fn new_fs() -> MemFs {
    MemFs::new()
}
