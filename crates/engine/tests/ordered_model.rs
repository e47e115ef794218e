//! Model-based property tests of the ordered store: random sequences of writes (with
//! any durability), cross-keyspace batches, point reads, range and prefix scans consumed
//! from either end, snapshots, iterators held open across later steps, keyspace creation
//! and removal, range and prefix removes (range tombstones, alone and in batches), counter
//! increments and decrements (with their refusals), exact key counts (`len`, `len_at`,
//! `is_empty`), flushes, compactions and reopens (after `close`, after dropping the last
//! handle, or with other table settings), applied to a [`Db`] and to a model: a
//! `BTreeMap` per keyspace, plus a saved copy of the model for each live snapshot and the
//! pairs each open iterator has still to yield. Every read is compared with the model as
//! it happens, and every keyspace in full after each flush, compaction, reopen and at the
//! end.
//!
//! Keys come from a four-letter alphabet (`0x00`, `a`, `b`, `0xff`) and are at most three
//! bytes long (plus a few long ones), so overwrites, deletes and scan bounds collide
//! often; the empty key and the empty value are common. The same sequences run under
//! several option sets: tiny memtables and blocks with a restart point per key so flushes
//! and compactions run all the time, each compression, bloom filters on and off, table
//! reads through `pread` and through memory maps (`mmap_reads`), and the durability modes.
//!
//! Each run draws a fresh seed and prints it with any failure; `CAIRN_MODEL_SEED=<n>`
//! replays a run and `PROPTEST_CASES=<n>` sets the number of cases of every option set
//! (nightly runs raise it). Stores live under `/dev/shm` when it exists: durability is
//! not under test here, and a free fsync lets thousands of stores open per run.
//!
//! Entry attributes are modelled too: writes with a tag, metadata and a time to live,
//! HEAD requests and head scans, and a manual [`Clock`] that steps forward; an entry whose
//! expiry has passed is removed from the model (and from every saved snapshot model), as
//! the store treats it as a tombstone at its seqno.
//! A failure prints the shrunk sequence as Rust source, to keep as a `model_regression_N`
//! test next to the fixed `model_case_*` sequences at the end of this file.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairn::Readable;
use cairn::{
    Clock, Compression, Db, Durability, EntryOptions, Error, Head, HeadIter, Iter, Keyspace, Meta,
    Options, Snapshot,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use ordered_common::{mem_tempdir, tiny};

/// The keyspace names operations choose from (by index).
const NAMES: [&str; 3] = ["default", "ks1", "ks2"];

/// A key; its `Debug` form is Rust source (`k(b"a\xff")`) to paste into a regression test.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct K(Vec<u8>);

fn k(bytes: &[u8]) -> K {
    K(bytes.to_vec())
}

impl fmt::Debug for K {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "k(b\"{}\")", self.0.escape_ascii())
    }
}

/// A value of `len` bytes derived from `seed` (odd seeds give incompressible bytes).
#[derive(Clone, Copy, PartialEq, Eq)]
struct V(u8, u16);

fn v(seed: u8, len: u16) -> V {
    V(seed, len)
}

impl fmt::Debug for V {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v({}, {})", self.0, self.1)
    }
}

impl V {
    fn bytes(self) -> Vec<u8> {
        let V(seed, len) = self;
        let mut x = u32::from(seed).wrapping_mul(2_654_435_761) | 1;
        (0..len)
            .map(|i| {
                if seed % 2 == 1 {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x.to_le_bytes()[0]
                } else {
                    seed.wrapping_add((i % 7) as u8)
                }
            })
            .collect()
    }
}

/// One end of a scan range.
#[derive(Debug, Clone)]
enum B {
    In(K),
    Ex(K),
    Un,
}

impl B {
    fn bound(&self) -> Bound<Vec<u8>> {
        match self {
            B::In(k) => Bound::Included(k.0.clone()),
            B::Ex(k) => Bound::Excluded(k.0.clone()),
            B::Un => Bound::Unbounded,
        }
    }
}

/// How a scan is consumed: ascending, descending, or alternating ends, where bit
/// `i % 32` of the pattern picks the front (1) or the back (0) for step `i`.
#[derive(Debug, Clone, Copy)]
enum Walk {
    Fwd,
    Rev,
    Mixed(u32),
}

/// Durabilities a single write may ask for (index 0: the store's default).
const MODES: [Option<Durability>; 6] = [
    None,
    Some(Durability::Sync),
    Some(Durability::Buffered),
    Some(Durability::Async { queue_depth: 4 }),
    Some(Durability::None),
    Some(Durability::Periodic(Duration::from_millis(1))),
];

/// One step of a sequence. Keyspaces are indexes into [`NAMES`]; snapshots are indexes
/// (modulo the number live) into the live snapshots, oldest first.
#[derive(Debug, Clone)]
enum Op {
    Insert(usize, K, V, usize),
    /// Keyspace, key, value, tag, metadata, time to live in units of 10 ms.
    InsertEntry(usize, K, V, u32, Option<V>, Option<u8>),
    Head(usize, K),
    Heads(usize, B, B, Walk),
    HeadAt(usize, usize, K),
    /// Moves the clock forward by this many milliseconds.
    Advance(u16),
    CompactExpired,
    Remove(usize, K),
    RemoveRange(usize, B, B),
    RemovePrefix(usize, K),
    /// One batch: remove the range, then insert the key (which survives if inside).
    BatchRangeInsert(usize, B, B, K, V),
    /// `incr` (or, with `true`, `decr`) by the delta, with a durability from [`MODES`].
    Incr(usize, K, i64, bool, usize),
    /// `len` and `is_empty` of a keyspace.
    Len(usize),
    /// `len_at` a snapshot.
    LenAt(usize, usize),
    Batch(Vec<(usize, K, Option<V>)>),
    Get(usize, K),
    Range(usize, B, B, Walk),
    Prefix(usize, K, bool),
    Ends(usize),
    Snap,
    GetAt(usize, usize, K),
    RangeAt(usize, usize, B, B, Walk),
    PrefixAt(usize, usize, K),
    DropSnap(usize),
    IterOpen(usize, B, B),
    IterPull(usize, Walk, u8),
    Create(usize),
    DropKs(usize),
    Flush,
    FlushWal(bool),
    Compact,
    Reopen(How),
}

/// How a store is reopened.
#[derive(Debug, Clone, Copy)]
enum How {
    /// `close`, then open with the same options.
    Close,
    /// Drop the last handle without `close`, then open with the same options.
    DropDb,
    /// `close`, then open with other block size, restart interval, compression, bloom
    /// filter and memtable size (or back to the original ones), so tables written under
    /// different settings meet in one store and in compactions.
    Alter,
}

use How::*;

use Op::*;

fn key() -> impl Strategy<Value = K> {
    let letter = prop::sample::select(vec![0x00u8, b'a', b'b', 0xff]);
    prop_oneof![
        1 => Just(K(Vec::new())),
        4 => prop::collection::vec(letter.clone(), 1..=1).prop_map(K),
        6 => prop::collection::vec(letter.clone(), 2..=2).prop_map(K),
        3 => prop::collection::vec(letter.clone(), 3..=3).prop_map(K),
        // Long keys (a block or more with the tiny block sizes); few, so they collide too.
        1 => (letter, prop::sample::select(vec![100usize, 700]))
            .prop_map(|(l, n)| K([vec![l], vec![b'k'; n]].concat())),
    ]
}

fn value() -> impl Strategy<Value = V> {
    prop_oneof![
        1 => Just(V(0, 0)),
        6 => (any::<u8>(), 1u16..24).prop_map(|(s, n)| V(s, n)),
        3 => (any::<u8>(), 24u16..300).prop_map(|(s, n)| V(s, n)),
        1 => (any::<u8>(), 300u16..2500).prop_map(|(s, n)| V(s, n)),
    ]
}

fn bound() -> impl Strategy<Value = B> {
    prop_oneof![
        2 => key().prop_map(B::In),
        2 => key().prop_map(B::Ex),
        1 => Just(B::Un),
    ]
}

fn walk() -> impl Strategy<Value = Walk> {
    prop_oneof![
        Just(Walk::Fwd),
        Just(Walk::Rev),
        any::<u32>().prop_map(Walk::Mixed),
    ]
}

fn ks() -> impl Strategy<Value = usize> {
    0..NAMES.len()
}

fn mode() -> impl Strategy<Value = usize> {
    prop_oneof![6 => Just(0usize), 1 => 1..MODES.len()]
}

fn delta() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -3i64..=3,
        1 => prop::sample::select(vec![i64::MAX, i64::MIN, i64::MAX / 2 + 1, -(1 << 40)]),
        1 => any::<i64>(),
    ]
}

/// The counter in `value` as `Keyspace::incr` reads it: canonical decimal i64 text.
fn counter(value: &[u8]) -> Option<i64> {
    let n: i64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    (n.to_string().as_bytes() == value).then_some(n)
}

fn op() -> impl Strategy<Value = Op> {
    let batch_op = (ks(), key(), prop::option::weighted(0.7, value()));
    prop_oneof![
        20 => (ks(), key(), value(), mode()).prop_map(|(a, b, c, d)| Insert(a, b, c, d)),
        8 => (
            ks(),
            key(),
            value(),
            prop_oneof![Just(0u32), any::<u32>()],
            prop::option::of((any::<u8>(), 0u16..40).prop_map(|(s, n)| V(s, n))),
            prop::option::weighted(0.7, prop_oneof![Just(0u8), 1u8..20]),
        )
            .prop_map(|(a, b, c, d, e, f)| InsertEntry(a, b, c, d, e, f)),
        4 => (ks(), key()).prop_map(|(a, b)| Head(a, b)),
        3 => (ks(), bound(), bound(), walk()).prop_map(|(a, b, c, d)| Heads(a, b, c, d)),
        2 => (0..8usize, ks(), key()).prop_map(|(a, b, c)| HeadAt(a, b, c)),
        3 => (1u16..120).prop_map(Advance),
        1 => Just(CompactExpired),
        8 => (ks(), key()).prop_map(|(a, b)| Remove(a, b)),
        3 => (ks(), bound(), bound()).prop_map(|(a, b, c)| RemoveRange(a, b, c)),
        2 => (ks(), key()).prop_map(|(a, b)| RemovePrefix(a, b)),
        1 => (ks(), bound(), bound(), key(), value())
            .prop_map(|(a, b, c, d, e)| BatchRangeInsert(a, b, c, d, e)),
        8 => (ks(), key(), delta(), any::<bool>(), mode())
            .prop_map(|(a, b, c, d, e)| Incr(a, b, c, d, e)),
        2 => ks().prop_map(Len),
        1 => (0..8usize, ks()).prop_map(|(a, b)| LenAt(a, b)),
        6 => prop::collection::vec(batch_op, 0..8).prop_map(Batch),
        8 => (ks(), key()).prop_map(|(a, b)| Get(a, b)),
        6 => (ks(), bound(), bound(), walk()).prop_map(|(a, b, c, d)| Range(a, b, c, d)),
        3 => (ks(), key(), any::<bool>()).prop_map(|(a, b, c)| Prefix(a, b, c)),
        2 => ks().prop_map(Ends),
        3 => Just(Snap),
        4 => (0..8usize, ks(), key()).prop_map(|(a, b, c)| GetAt(a, b, c)),
        3 => (0..8usize, ks(), bound(), bound(), walk())
            .prop_map(|(a, b, c, d, e)| RangeAt(a, b, c, d, e)),
        1 => (0..8usize, ks(), key()).prop_map(|(a, b, c)| PrefixAt(a, b, c)),
        2 => (0..8usize).prop_map(DropSnap),
        2 => (ks(), bound(), bound()).prop_map(|(a, b, c)| IterOpen(a, b, c)),
        4 => (0..4usize, walk(), 1u8..6).prop_map(|(a, b, c)| IterPull(a, b, c)),
        1 => ks().prop_map(Create),
        1 => ks().prop_map(DropKs),
        2 => Just(Flush),
        1 => any::<bool>().prop_map(FlushWal),
        1 => Just(Compact),
        1 => prop_oneof![Just(Close), Just(DropDb), Just(Alter)].prop_map(Reopen),
    ]
}

/// What the model holds for a key: its value and attributes, and the seqno that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ent {
    value: Vec<u8>,
    tag: u32,
    meta: Vec<u8>,
    expires_at: Option<u64>,
    seqno: u64,
}

impl Ent {
    fn plain(value: Vec<u8>, seqno: u64) -> Ent {
        Ent {
            value,
            tag: 0,
            meta: Vec::new(),
            expires_at: None,
            seqno,
        }
    }

    /// The (value-less) head fields the store must report: the value is separated into
    /// the value log when the option set's threshold says so.
    fn head(&self) -> (u64, u32, Vec<u8>, u64, Option<u64>, bool) {
        let separated = BLOB_THRESHOLD
            .with(Cell::get)
            .is_some_and(|t| self.value.len() >= t);
        (
            self.value.len() as u64,
            self.tag,
            self.meta.clone(),
            self.seqno,
            self.expires_at,
            separated,
        )
    }
}

fn head_fields(h: &Head) -> (u64, u32, Vec<u8>, u64, Option<u64>, bool) {
    (
        h.value_len,
        h.tag,
        h.meta.clone(),
        h.seqno,
        h.expires_at,
        h.separated,
    )
}

type Map = BTreeMap<Vec<u8>, Ent>;

thread_local! {
    /// `Options::blob_threshold` of the case running on this thread (every keyspace
    /// separates values of at least this many bytes).
    static BLOB_THRESHOLD: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Where the manual clock of every case starts (Unix milliseconds).
const CLOCK_START: u64 = 1_700_000_000_000;

/// The pairs an iterator has still to yield, ascending.
type Pending = VecDeque<(Vec<u8>, Vec<u8>)>;

/// Work done by every case of this process, reported with each option set's result.
static STEPS: AtomicU64 = AtomicU64::new(0);
static FLUSHES: AtomicU64 = AtomicU64::new(0);
static COMPACTIONS: AtomicU64 = AtomicU64::new(0);

/// The model: each existing keyspace's contents and its incarnation number (a keyspace
/// dropped and created again is a new, empty incarnation).
type Model = BTreeMap<String, (u64, Map)>;

fn fail(msg: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(msg.into())
}

/// Unwraps an engine result or fails the case, naming the step.
macro_rules! ok {
    ($e:expr, $step:expr) => {
        $e.map_err(|e| fail(format!("{:?} failed: {e}", $step)))?
    };
}

fn in_range(key: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(l) => key >= l.as_slice(),
        Bound::Excluded(l) => key > l.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(h) => key <= h.as_slice(),
        Bound::Excluded(h) => key < h.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// True if a remove of `lo..hi` writes anything: the range holds at least one key.
fn range_holds_a_key(lo: &B, hi: &B) -> bool {
    let start = match lo {
        B::In(k) => k.0.clone(),
        B::Ex(k) => [k.0.as_slice(), &[0]].concat(),
        B::Un => Vec::new(),
    };
    match hi {
        B::In(k) => start <= k.0,
        B::Ex(k) => start < k.0,
        B::Un => true,
    }
}

fn pairs<'a>(
    map: &'a Map,
    keep: impl Fn(&[u8]) -> bool + 'a,
) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + 'a {
    map.iter()
        .filter(move |(k, _)| keep(k))
        .map(|(k, e)| (k.clone(), e.value.clone()))
}

/// Takes up to `steps` items (all if `None`) from `it` as `walk` says and compares each
/// with the front or back of `want`, the pairs `it` has still to yield in ascending order.
/// Returns true once both are exhausted.
fn pull(
    it: &mut Iter,
    want: &mut Pending,
    walk: Walk,
    steps: Option<u32>,
    step: &Op,
) -> Result<bool, TestCaseError> {
    let mut i = 0u32;
    while steps.is_none_or(|n| i < n) {
        let front = match walk {
            Walk::Fwd => true,
            Walk::Rev => false,
            Walk::Mixed(bits) => bits >> (i % 32) & 1 == 1,
        };
        let (got, exp) = if front {
            (it.next(), want.pop_front())
        } else {
            (it.next_back(), want.pop_back())
        };
        let got = got
            .transpose()
            .map_err(|e| fail(format!("{step:?}: {e}")))?;
        if got != exp {
            return Err(fail(format!(
                "{step:?}: item {i} ({}) is {:?}, the model has {:?}",
                if front { "next" } else { "next_back" },
                got.map(|p| (K(p.0), p.1.len())),
                exp.map(|p| (K(p.0), p.1.len())),
            )));
        }
        if got.is_none() {
            if it.next().is_some() || it.next_back().is_some() {
                return Err(fail(format!("{step:?}: items after the end")));
            }
            return Ok(true);
        }
        i += 1;
    }
    Ok(false)
}

/// Consumes `it` as `walk` says, comparing every item with `expected` (ascending).
fn check_walk(
    mut it: Iter,
    expected: Vec<(Vec<u8>, Vec<u8>)>,
    walk: Walk,
    step: &Op,
) -> Result<(), TestCaseError> {
    pull(&mut it, &mut expected.into(), walk, None, step).map(|_| ())
}

/// Consumes a head scan as `walk` says, comparing every item with `expected`
/// (ascending).
fn check_heads(
    mut it: HeadIter,
    expected: Vec<(Vec<u8>, Ent)>,
    walk: Walk,
    step: &Op,
) -> Result<(), TestCaseError> {
    let mut want: VecDeque<(Vec<u8>, Ent)> = expected.into();
    let mut i = 0u32;
    loop {
        let front = match walk {
            Walk::Fwd => true,
            Walk::Rev => false,
            Walk::Mixed(bits) => bits >> (i % 32) & 1 == 1,
        };
        let (got, exp) = if front {
            (it.next(), want.pop_front())
        } else {
            (it.next_back(), want.pop_back())
        };
        let got = got
            .transpose()
            .map_err(|e| fail(format!("{step:?}: {e}")))?
            .map(|(k, h)| (K(k), head_fields(&h)));
        let exp = exp.map(|(k, e)| (K(k), e.head()));
        prop_assert_eq!(&got, &exp, "{:?}: head item {}", step, i);
        if got.is_none() {
            return Ok(());
        }
        i += 1;
    }
}

/// A store under test and its model.
struct Harness {
    dir: tempfile::TempDir,
    options: Options,
    db: Option<Db>,
    /// The store is open with [`altered`] options.
    altered: bool,
    model: Model,
    next_incarnation: u64,
    /// Live snapshots, oldest first, with the model as it was when each was taken.
    snaps: Vec<(Snapshot, Model)>,
    /// Open iterators (at most [`MAX_ITERS`], oldest first), each with the pairs it has
    /// still to yield: iterators live across later steps and must keep their view.
    iters: Vec<(Iter, Pending)>,
    /// The seqno of the last acknowledged write.
    seqno: u64,
    /// The store's clock, moved only by `Advance`.
    clock: Clock,
}

/// Most iterators kept open at once.
const MAX_ITERS: usize = 4;

impl Harness {
    fn new(options: &Options) -> Result<Harness, TestCaseError> {
        let dir = mem_tempdir();
        let clock = Clock::manual(CLOCK_START);
        let options = &options
            .clone()
            .clock(clock.clone())
            // Idle background threads look for expired tables often, concurrently with
            // the steps.
            .expiry_check_interval(Duration::from_millis(20));
        BLOB_THRESHOLD.with(|t| t.set(options.blob_threshold));
        let db = ok!(Db::open(dir.path(), options.clone()), "open");
        let mut model = Model::new();
        model.insert(NAMES[0].to_string(), (0, Map::new()));
        Ok(Harness {
            dir,
            options: options.clone(),
            db: Some(db),
            altered: false,
            model,
            next_incarnation: 1,
            snaps: Vec::new(),
            iters: Vec::new(),
            seqno: 0,
            clock,
        })
    }

    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    /// A handle to keyspace `i`, creating it (in the store and the model) if needed.
    fn open_ks(&mut self, i: usize, step: &Op) -> Result<Keyspace, TestCaseError> {
        let name = NAMES[i];
        let handle = ok!(self.db().keyspace(name), step);
        if !self.model.contains_key(name) {
            self.model
                .insert(name.to_string(), (self.next_incarnation, Map::new()));
            self.next_incarnation += 1;
        }
        Ok(handle)
    }

    /// The handle of keyspace `i` if it exists, checking that the store and the model
    /// agree on whether it does.
    fn existing(&self, i: usize, step: &Op) -> Result<Option<(Keyspace, &Map)>, TestCaseError> {
        let name = NAMES[i];
        match (self.db().get_keyspace(name), self.model.get(name)) {
            (Some(h), Some((_, m))) => Ok(Some((h, m))),
            (None, None) => Ok(None),
            (h, m) => Err(fail(format!(
                "{step:?}: store has keyspace {name}: {}, model: {}",
                h.is_some(),
                m.is_some()
            ))),
        }
    }

    /// The live snapshot `i` refers to and what keyspace `ks` held then (empty if the
    /// keyspace is a later incarnation than the one the snapshot saw).
    fn snap(&self, i: usize, ks: usize) -> Option<(&Snapshot, Map)> {
        if self.snaps.is_empty() {
            return None;
        }
        let (snap, saved) = &self.snaps[i % self.snaps.len()];
        let name = NAMES[ks];
        let now = self.model.get(name).map(|e| e.0);
        let then = saved.get(name);
        let map = match then {
            Some((inc, m)) if Some(*inc) == now => m.clone(),
            _ => Map::new(),
        };
        Some((snap, map))
    }

    /// Checks the seqno bookkeeping after a step that wrote `ops` operations.
    fn check_seqnos(&mut self, ops: u64, step: &Op) -> Result<(), TestCaseError> {
        self.seqno += ops;
        let (last, durable) = (self.db().last_seqno(), self.db().durable_seqno());
        if last != self.seqno || durable > last {
            return Err(fail(format!(
                "{step:?}: last_seqno {last} (expected {}), durable_seqno {durable}",
                self.seqno
            )));
        }
        Ok(())
    }

    /// Compares the store's keyspace list and every keyspace, both directions, with the
    /// model.
    fn check_all(&self, step: &Op) -> Result<(), TestCaseError> {
        let names = self.db().keyspace_names();
        let want: Vec<String> = self.model.keys().cloned().collect();
        prop_assert_eq!(&names, &want, "{:?}: keyspace names", step);
        for (name, (_, map)) in &self.model {
            let h = self
                .db()
                .get_keyspace(name)
                .ok_or_else(|| fail(format!("{step:?}: keyspace {name} missing")))?;
            let expected: Vec<_> = pairs(map, |_| true).collect();
            prop_assert_eq!(
                ok!(h.len(), step),
                map.len() as u64,
                "{:?}: len of {}",
                step,
                name
            );
            check_walk(h.iter(), expected.clone(), Walk::Fwd, step)?;
            check_walk(h.iter(), expected, Walk::Rev, step)?;
            let heads: Vec<_> = map.iter().map(|(k, e)| (k.clone(), e.clone())).collect();
            check_heads(h.range_heads::<&[u8], _>(..), heads, Walk::Rev, step)?;
            let mut buf = Vec::new();
            for (k, e) in map {
                let got = ok!(h.get(k), step);
                let found = ok!(h.get_into(k, &mut buf), step);
                if got.as_ref() != Some(&e.value) || !found || buf != e.value {
                    return Err(fail(format!(
                        "{step:?}: get {:?} in {name} after full check: {:?}",
                        K(k.clone()),
                        got.map(|g| g.len())
                    )));
                }
            }
            // One batched read of every key, each followed by a key that is absent.
            let mut keys = Vec::new();
            let mut want = Vec::new();
            for (k, e) in map {
                keys.push(k.clone());
                want.push(Some(e.value.clone()));
                let mut absent = k.clone();
                absent.push(0);
                if !map.contains_key(&absent) {
                    keys.push(absent);
                    want.push(None);
                }
            }
            let got = ok!(h.get_many(&keys), step);
            prop_assert!(got == want, "{:?}: get_many in {}", step, name);
        }
        Ok(())
    }

    fn apply(&mut self, step: &Op) -> Result<(), TestCaseError> {
        STEPS.fetch_add(1, Ordering::Relaxed);
        match step {
            Insert(i, key, val, mode) => {
                let h = self.open_ks(*i, step)?;
                let val = val.bytes();
                ok!(h.insert_with(&key.0, &val, MODES[*mode]), step);
                self.check_seqnos(1, step)?;
                self.model
                    .get_mut(NAMES[*i])
                    .unwrap()
                    .1
                    .insert(key.0.clone(), Ent::plain(val.clone(), self.seqno));
                prop_assert_eq!(ok!(h.get(&key.0), step), Some(val), "{:?}", step);
                if MODES[*mode] == Some(Durability::Sync) {
                    prop_assert_eq!(self.db().durable_seqno(), self.seqno, "{:?}", step);
                }
            }
            InsertEntry(i, key, val, tag, meta, ttl) => {
                let h = self.open_ks(*i, step)?;
                let val = val.bytes();
                let meta = meta.map(V::bytes).unwrap_or_default();
                let mut opts = EntryOptions::new().meta(Meta::new(*tag, meta.clone()));
                if let Some(t) = ttl {
                    opts = opts.ttl(Duration::from_millis(u64::from(*t) * 10));
                }
                let now = self.clock.now_ms();
                ok!(h.insert_entry(&key.0, &val, &opts), step);
                self.check_seqnos(1, step)?;
                let ent = Ent {
                    value: val,
                    tag: *tag,
                    meta,
                    expires_at: ttl.map(|t| now + u64::from(t) * 10),
                    seqno: self.seqno,
                };
                let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                if ent.expires_at.is_some_and(|at| at <= now) {
                    // Expired from the start: a tombstone.
                    map.remove(&key.0);
                    prop_assert_eq!(ok!(h.get(&key.0), step), None, "{:?}", step);
                } else {
                    let want = ent.head();
                    map.insert(key.0.clone(), ent);
                    let got = ok!(h.head(&key.0), step).map(|h| head_fields(&h));
                    prop_assert_eq!(got, Some(want), "{:?}", step);
                }
            }
            Head(i, key) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let got = ok!(h.head(&key.0), step).map(|h| head_fields(&h));
                    prop_assert_eq!(got, map.get(&key.0).map(Ent::head), "{:?}", step);
                }
            }
            Heads(i, lo, hi, w) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let (lo, hi) = (lo.bound(), hi.bound());
                    let expected = map
                        .iter()
                        .filter(|(k, _)| in_range(k, &lo, &hi))
                        .map(|(k, e)| (k.clone(), e.clone()))
                        .collect();
                    check_heads(h.range_heads((lo, hi)), expected, *w, step)?;
                }
            }
            HeadAt(s, i, key) => {
                if let (Some((h, _)), Some((snap, then))) =
                    (self.existing(*i, step)?, self.snap(*s, *i))
                {
                    let got = ok!(snap.head(&h, &key.0), step).map(|h| head_fields(&h));
                    prop_assert_eq!(got, then.get(&key.0).map(Ent::head), "{:?}", step);
                }
            }
            Advance(ms) => {
                self.clock.advance(Duration::from_millis(u64::from(*ms)));
                let now = self.clock.now_ms();
                let live = |e: &Ent| e.expires_at.is_none_or(|at| at > now);
                for (_, map) in self.model.values_mut() {
                    map.retain(|_, e| live(e));
                }
                // Snapshots cannot see expired entries either.
                for (_, saved) in &mut self.snaps {
                    for (_, map) in saved.values_mut() {
                        map.retain(|_, e| live(e));
                    }
                }
            }
            CompactExpired => {
                ok!(self.db().compact_expired(), step);
                self.check_seqnos(0, step)?;
                self.check_all(step)?;
            }
            Remove(i, key) => {
                let h = self.open_ks(*i, step)?;
                ok!(h.remove(&key.0), step);
                self.model.get_mut(NAMES[*i]).unwrap().1.remove(&key.0);
                self.check_seqnos(1, step)?;
                prop_assert_eq!(ok!(h.get(&key.0), step), None, "{:?}", step);
            }
            RemoveRange(i, lo, hi) => {
                let h = self.open_ks(*i, step)?;
                let (lb, hb) = (lo.bound(), hi.bound());
                ok!(h.remove_range((lb.clone(), hb.clone())), step);
                let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                map.retain(|k, _| !in_range(k, &lb, &hb));
                self.check_seqnos(u64::from(range_holds_a_key(lo, hi)), step)?;
                let map = &self.model[NAMES[*i]].1;
                let expected: Vec<_> = pairs(map, |_| true).collect();
                // `len` counts no key the range tombstone covers.
                prop_assert_eq!(ok!(h.len(), step), map.len() as u64, "{:?}", step);
                check_walk(h.iter(), expected, Walk::Rev, step)?;
            }
            RemovePrefix(i, p) => {
                let h = self.open_ks(*i, step)?;
                ok!(h.remove_prefix(&p.0), step);
                let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                map.retain(|k, _| !k.starts_with(&p.0));
                self.check_seqnos(1, step)?;
                prop_assert!(ok!(h.prefix(&p.0).next().transpose(), step).is_none());
                let map = &self.model[NAMES[*i]].1;
                prop_assert_eq!(ok!(h.len(), step), map.len() as u64, "{:?}", step);
            }
            BatchRangeInsert(i, lo, hi, key, val) => {
                let h = self.open_ks(*i, step)?;
                let (lb, hb) = (lo.bound(), hi.bound());
                let mut batch = self.db().batch();
                batch.remove_range(&h, (lb.clone(), hb.clone()));
                batch.insert(&h, &key.0, val.bytes());
                let writes = batch.len() as u64;
                ok!(batch.commit(), step);
                prop_assert_eq!(writes, 1 + u64::from(range_holds_a_key(lo, hi)));
                self.check_seqnos(writes, step)?;
                let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                map.retain(|k, _| !in_range(k, &lb, &hb));
                map.insert(key.0.clone(), Ent::plain(val.bytes(), self.seqno));
                prop_assert_eq!(ok!(h.get(&key.0), step), Some(val.bytes()), "{:?}", step);
            }
            Incr(i, key, delta, decr, mode) => {
                let h = self.open_ks(*i, step)?;
                let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                let before = map.get(&key.0).cloned();
                let result = if *decr {
                    h.decr_with(&key.0, *delta, MODES[*mode])
                } else {
                    h.incr_with(&key.0, *delta, MODES[*mode])
                };
                let change = if *decr {
                    -i128::from(*delta)
                } else {
                    i128::from(*delta)
                };
                let want = match &before {
                    None => Some(0),
                    Some(e) => counter(&e.value),
                }
                .map(|n| i64::try_from(i128::from(n) + change));
                match (want, result) {
                    (Some(Ok(n)), Ok(got)) => {
                        prop_assert_eq!(got, n, "{:?}", step);
                        self.check_seqnos(1, step)?;
                        // The new value keeps the entry's tag, metadata and expiry.
                        let mut ent = Ent::plain(n.to_string().into_bytes(), self.seqno);
                        if let Some(b) = &before {
                            (ent.tag, ent.meta, ent.expires_at) =
                                (b.tag, b.meta.clone(), b.expires_at);
                        }
                        let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                        map.insert(key.0.clone(), ent);
                        if MODES[*mode] == Some(Durability::Sync) {
                            prop_assert_eq!(self.db().durable_seqno(), self.seqno, "{:?}", step);
                        }
                    }
                    (Some(Err(_)), Err(Error::CounterOverflow { .. }))
                    | (None, Err(Error::NotACounter { .. })) => self.check_seqnos(0, step)?,
                    (want, got) => {
                        return Err(fail(format!("{step:?}: expected {want:?}, got {got:?}")))
                    }
                }
                let now = self.model[NAMES[*i]].1.get(&key.0).cloned();
                prop_assert_eq!(
                    ok!(h.get(&key.0), step),
                    now.clone().map(|e| e.value),
                    "{:?}",
                    step
                );
                let head = ok!(h.head(&key.0), step).map(|h| {
                    (
                        h.value_len,
                        h.tag,
                        h.meta,
                        h.seqno,
                        h.expires_at,
                        h.separated,
                    )
                });
                prop_assert_eq!(head, now.map(|e| e.head()), "{:?}", step);
            }
            Len(i) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    prop_assert_eq!(ok!(h.len(), step), map.len() as u64, "{:?}", step);
                    prop_assert_eq!(ok!(h.is_empty(), step), map.is_empty(), "{:?}", step);
                }
            }
            LenAt(s, i) => {
                if let (Some((h, _)), Some((snap, then))) =
                    (self.existing(*i, step)?, self.snap(*s, *i))
                {
                    prop_assert_eq!(ok!(snap.len(&h), step), then.len() as u64, "{:?}", step);
                }
            }
            Batch(ops) => {
                let mut batch = self.db().batch();
                for (n, (i, key, val)) in ops.iter().enumerate() {
                    let h = self.open_ks(*i, step)?;
                    let seqno = self.seqno + 1 + n as u64;
                    let map = &mut self.model.get_mut(NAMES[*i]).unwrap().1;
                    match val {
                        Some(val) => {
                            batch.insert(&h, &key.0, val.bytes());
                            map.insert(key.0.clone(), Ent::plain(val.bytes(), seqno));
                        }
                        None => {
                            batch.remove(&h, &key.0);
                            map.remove(&key.0);
                        }
                    }
                }
                prop_assert_eq!(batch.len(), ops.len());
                ok!(batch.commit(), step);
                self.check_seqnos(ops.len() as u64, step)?;
                for (i, key, _) in ops {
                    let h = ok!(self.db().keyspace(NAMES[*i]), step);
                    let want = self.model[NAMES[*i]].1.get(&key.0).map(|e| e.value.clone());
                    prop_assert_eq!(ok!(h.get(&key.0), step), want, "{:?}", step);
                }
            }
            Get(i, key) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let want = map.get(&key.0).map(|e| e.value.clone());
                    // The read that may not do I/O, before and after the full read (which
                    // may cache the blocks it reads): it agrees whenever it answers.
                    let early = ok!(h.get_with_in_memory(&key.0, <[u8]>::to_vec), step);
                    prop_assert!(
                        early.answer().is_none_or(|v| v == want),
                        "{:?}: in memory",
                        step
                    );
                    prop_assert_eq!(ok!(h.get(&key.0), step), want.clone());
                    let late = ok!(h.get_with_in_memory(&key.0, <[u8]>::to_vec), step);
                    prop_assert!(
                        late.answer().is_none_or(|v| v == want),
                        "{:?}: in memory",
                        step
                    );
                    let present = ok!(h.contains_key_in_memory(&key.0), step);
                    prop_assert!(
                        present
                            .answer()
                            .is_none_or(|p| p == map.contains_key(&key.0)),
                        "{:?}: contains in memory",
                        step
                    );
                    prop_assert_eq!(ok!(h.contains_key(&key.0), step), map.contains_key(&key.0));
                    // The same read into a buffer holding another value.
                    let mut buf = b"stale".to_vec();
                    let found = ok!(h.get_into(&key.0, &mut buf), step);
                    prop_assert_eq!(found.then_some(buf.clone()), want.clone(), "{:?}", step);
                    prop_assert!(found || buf.is_empty(), "{:?}: buffer after a miss", step);
                    let in_place = ok!(h.get_with(&key.0, <[u8]>::to_vec), step);
                    prop_assert_eq!(in_place, want, "{:?}: get_with", step);
                }
            }
            Range(i, lo, hi, w) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let (lo, hi) = (lo.bound(), hi.bound());
                    let expected = pairs(map, |k| in_range(k, &lo, &hi)).collect();
                    check_walk(h.range((lo, hi)), expected, *w, step)?;
                }
            }
            Prefix(i, p, rev) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let expected = pairs(map, |k| k.starts_with(&p.0)).collect();
                    let w = if *rev { Walk::Rev } else { Walk::Fwd };
                    check_walk(h.prefix(&p.0), expected, w, step)?;
                }
            }
            Ends(i) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let first = map.iter().next().map(|(k, e)| (k.clone(), e.value.clone()));
                    let last = map
                        .iter()
                        .next_back()
                        .map(|(k, e)| (k.clone(), e.value.clone()));
                    prop_assert_eq!(ok!(h.first_key_value(), step), first, "{:?}", step);
                    prop_assert_eq!(ok!(h.last_key_value(), step), last, "{:?}", step);
                }
            }
            Snap => {
                let snap = self.db().snapshot();
                prop_assert_eq!(snap.seqno(), self.seqno, "{:?}", step);
                self.snaps.push((snap, self.model.clone()));
            }
            GetAt(s, i, key) => {
                if let (Some((h, _)), Some((snap, then))) =
                    (self.existing(*i, step)?, self.snap(*s, *i))
                {
                    let want = then.get(&key.0).map(|e| e.value.clone());
                    let early = ok!(snap.get_with_in_memory(&h, &key.0, <[u8]>::to_vec), step);
                    prop_assert!(
                        early.answer().is_none_or(|v| v == want),
                        "{:?}: in memory",
                        step
                    );
                    let got = ok!(snap.get(&h, &key.0), step);
                    prop_assert_eq!(got, want.clone(), "{:?}", step);
                    let late = ok!(snap.get_with_in_memory(&h, &key.0, <[u8]>::to_vec), step);
                    prop_assert!(
                        late.answer().is_none_or(|v| v == want),
                        "{:?}: in memory",
                        step
                    );
                    let present = ok!(snap.contains_key_in_memory(&h, &key.0), step);
                    prop_assert!(
                        present
                            .answer()
                            .is_none_or(|p| p == then.contains_key(&key.0)),
                        "{:?}: contains in memory",
                        step
                    );
                    let mut buf = b"stale".to_vec();
                    let found = ok!(snap.get_into(&h, &key.0, &mut buf), step);
                    prop_assert_eq!(found.then_some(buf), want.clone(), "{:?}", step);
                    // A batched read at the snapshot: this key and every key it held then.
                    let keys: Vec<&[u8]> = std::iter::once(key.0.as_slice())
                        .chain(then.keys().map(Vec::as_slice))
                        .collect();
                    let want_all: Vec<Option<Vec<u8>>> = keys
                        .iter()
                        .map(|k| then.get(*k).map(|e| e.value.clone()))
                        .collect();
                    let got_all = ok!(snap.get_many(&h, &keys), step);
                    prop_assert!(got_all == want_all, "{:?}: get_many at the snapshot", step);
                    let in_place = ok!(snap.get_with(&h, &key.0, <[u8]>::to_vec), step);
                    prop_assert_eq!(in_place, want, "{:?}: get_with", step);
                }
            }
            RangeAt(s, i, lo, hi, w) => {
                if let (Some((h, _)), Some((snap, then))) =
                    (self.existing(*i, step)?, self.snap(*s, *i))
                {
                    let (lo, hi) = (lo.bound(), hi.bound());
                    let expected = pairs(&then, |k| in_range(k, &lo, &hi)).collect();
                    check_walk(snap.range(&h, (lo, hi)), expected, *w, step)?;
                }
            }
            PrefixAt(s, i, p) => {
                if let (Some((h, _)), Some((snap, then))) =
                    (self.existing(*i, step)?, self.snap(*s, *i))
                {
                    let expected = pairs(&then, |k| k.starts_with(&p.0)).collect();
                    check_walk(snap.prefix(&h, &p.0), expected, Walk::Fwd, step)?;
                }
            }
            DropSnap(s) => {
                if !self.snaps.is_empty() {
                    let n = self.snaps.len();
                    self.snaps.remove(s % n);
                }
            }
            IterOpen(i, lo, hi) => {
                if let Some((h, map)) = self.existing(*i, step)? {
                    let (lo, hi) = (lo.bound(), hi.bound());
                    let expected = pairs(map, |k| in_range(k, &lo, &hi)).collect();
                    let it = h.range((lo, hi));
                    if self.iters.len() == MAX_ITERS {
                        self.iters.remove(0);
                    }
                    self.iters.push((it, expected));
                }
            }
            IterPull(n, w, steps) => {
                if !self.iters.is_empty() {
                    let idx = n % self.iters.len();
                    let (it, want) = &mut self.iters[idx];
                    if pull(it, want, *w, Some(u32::from(*steps)), step)? {
                        self.iters.remove(idx);
                    }
                }
            }
            Create(i) => {
                self.open_ks(*i, step)?;
                self.check_seqnos(0, step)?;
                // A keyspace created again under a dropped one's name starts empty.
                self.check_all(step)?;
            }
            DropKs(i) => {
                let name = NAMES[*i];
                let before = self.db().get_keyspace(name);
                let result = self.db().drop_keyspace(name);
                if *i == 0 || !self.model.contains_key(name) {
                    prop_assert!(result.is_err(), "{:?}: drop succeeded", step);
                } else {
                    ok!(result, step);
                    self.model.remove(name);
                    let h = before.unwrap();
                    prop_assert!(
                        h.insert(b"x", b"y").is_err(),
                        "{:?}: write to dropped",
                        step
                    );
                    prop_assert!(h.get(b"x").is_err(), "{:?}: read of dropped", step);
                    prop_assert!(
                        h.get_with(b"x", |_| ()).is_err()
                            && h.get_into(b"x", &mut Vec::new()).is_err(),
                        "{:?}: read in place of dropped",
                        step
                    );
                    prop_assert!(
                        matches!(h.iter().next(), Some(Err(_))),
                        "{:?}: scan of dropped",
                        step
                    );
                    prop_assert!(self.db().get_keyspace(name).is_none());
                }
                self.check_seqnos(0, step)?;
            }
            Flush => {
                ok!(self.db().flush(), step);
                self.check_seqnos(0, step)?;
                // Everything is in tables now.
                prop_assert_eq!(self.db().durable_seqno(), self.seqno, "{:?}", step);
                self.check_all(step)?;
            }
            FlushWal(sync) => {
                ok!(self.db().flush_wal(*sync), step);
                self.check_seqnos(0, step)?;
                if *sync {
                    prop_assert_eq!(self.db().durable_seqno(), self.seqno, "{:?}", step);
                }
            }
            Compact => {
                ok!(self.db().wait_for_compactions(), step);
                let _ = self.db().stats();
                self.check_all(step)?;
            }
            Reopen(how) => {
                // Iterators keep the store (and its directory lock) alive.
                self.iters.clear();
                self.snaps.clear();
                let db = self.db.take().unwrap();
                count_background(&db);
                match how {
                    DropDb => drop(db),
                    Close | Alter => ok!(db.close(), step),
                }
                if let Alter = how {
                    self.altered = !self.altered;
                }
                let options = if self.altered {
                    altered(&self.options)
                } else {
                    self.options.clone()
                };
                let db = ok!(Db::open(self.dir.path(), options), step);
                self.db = Some(db);
                prop_assert_eq!(self.db().last_seqno(), self.seqno, "{:?}", step);
                prop_assert_eq!(self.db().durable_seqno(), self.seqno, "{:?}", step);
                self.check_all(step)?;
            }
        }
        Ok(())
    }
}

/// Zstandard at `level` where this build has it (the `zstd` feature), else LZ4.
fn zstd_or_lz4(level: i32) -> Compression {
    if cfg!(feature = "zstd") {
        Compression::Zstd(level)
    } else {
        Compression::Lz4
    }
}

/// Other table and memtable settings than `o`'s.
fn altered(o: &Options) -> Options {
    o.clone()
        .block_size(o.block_size * 4)
        .restart_interval(if o.restart_interval == 1 { 3 } else { 1 })
        .compression(match o.compression {
            Compression::None => Compression::Lz4,
            Compression::Lz4 => Compression::Snappy,
            Compression::Snappy => zstd_or_lz4(3),
            _ => Compression::None,
        })
        .bloom_bits_per_key(if o.bloom_bits_per_key == 0 { 10 } else { 0 })
        .memtable_size(o.memtable_size * 2)
}

fn count_background(db: &Db) {
    let stats = db.stats();
    FLUSHES.fetch_add(stats.flushes, Ordering::Relaxed);
    COMPACTIONS.fetch_add(stats.compactions, Ordering::Relaxed);
}

/// Runs `ops` against a fresh store opened with `options`.
fn run_ops(options: &Options, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new(options)?;
    for step in ops {
        h.apply(step)?;
    }
    h.check_all(&Reopen(Close))?;
    h.snaps.clear();
    h.iters.clear();
    let db = h.db.take().unwrap();
    count_background(&db);
    ok!(db.close(), "close");
    Ok(())
}

/// Runs `cases` random sequences of up to `max_len` steps under `options`.
fn run_model(name: &str, options: Options, cases: u32, max_len: usize) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| {
            let soaked = u64::from(cases).saturating_mul(cairn::testing::soak_factor());
            u32::try_from(soaked).unwrap_or(u32::MAX)
        });
    let seed: u64 = std::env::var("CAIRN_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            now ^ u64::from(std::process::id()).rotate_left(40)
        });
    let mut seed_bytes = [0u8; 32];
    for (i, chunk) in seed_bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes(),
        );
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let start = std::time::Instant::now();
    let strategy = prop::collection::vec(op(), 1..max_len);
    match runner.run(&strategy, |ops| run_ops(&options, &ops)) {
        Ok(()) => eprintln!(
            "{name}: {cases} cases passed in {:.1?} (seed {seed}); totals of this process \
             so far: {} steps, {} flushes, {} compactions",
            start.elapsed(),
            STEPS.load(Ordering::Relaxed),
            FLUSHES.load(Ordering::Relaxed),
            COMPACTIONS.load(Ordering::Relaxed),
        ),
        Err(TestError::Fail(reason, ops)) => panic!(
            "{name}: failed with seed {seed} (rerun with CAIRN_MODEL_SEED={seed}): {reason}\n\
             minimal sequence ({} steps):\n{}",
            ops.len(),
            ops.iter()
                .map(|o| format!("    {o:?},\n"))
                .collect::<String>()
        ),
        Err(e) => panic!("{name}: {e} (seed {seed})"),
    }
}

fn with(options: Options, f: impl FnOnce(&mut Options)) -> Options {
    let mut o = options;
    f(&mut o);
    o
}

#[test]
fn model_tiny_lz4_bloom() {
    let o = with(tiny(1 << 10, 64), |o| {
        o.max_wal_size = 4096;
        o.mmap_reads = true;
        o.row_cache_size = 64 << 10;
    });
    run_model("tiny_lz4_bloom", o, 2000, 120);
}

#[test]
fn model_tiny_uncompressed_no_bloom() {
    let o = with(tiny(2 << 10, 128), |o| {
        o.compression = Compression::None;
        o.bloom_bits_per_key = 0;
        o.background_threads = 1;
        o.mmap_reads = true;
    });
    run_model("tiny_uncompressed_no_bloom", o, 2000, 120);
}

#[test]
fn model_small_snappy() {
    let o = with(tiny(4 << 10, 256), |o| {
        o.compression = Compression::Snappy;
        o.restart_interval = 4;
        o.max_immutable_memtables = 1;
        // A few dozen rows: rows are evicted and offered again all the time.
        o.row_cache_size = 4 << 10;
    });
    run_model("small_snappy", o, 2000, 120);
}

#[cfg(feature = "zstd")]
#[test]
fn model_tiny_zstd_no_bloom() {
    let o = with(tiny(1 << 10, 64), |o| {
        o.compression = Compression::Zstd(3);
        o.bloom_bits_per_key = 0;
    });
    run_model("tiny_zstd_no_bloom", o, 2000, 120);
}

#[test]
fn model_default_sizes() {
    let o = Options::default()
        .durability(Durability::Buffered)
        .l0_compaction_trigger(2);
    run_model("default_sizes", o, 1500, 120);
}

#[test]
fn model_sync() {
    let o = with(tiny(2 << 10, 128), |o| {
        o.durability = Durability::Sync;
        o.restart_interval = 2;
    });
    run_model("sync", o, 500, 120);
}

#[test]
fn model_long_histories() {
    let o = with(tiny(1 << 10, 64), |o| o.compression = Compression::Snappy);
    run_model("long_histories", o, 60, 1500);
}

#[test]
fn model_separated_all() {
    // Every value (even empty ones) lives in the value log; small blob files rotate often.
    let o = with(tiny(1 << 10, 64), |o| {
        o.blob_threshold = Some(0);
        o.blob_file_size = 4096;
    });
    run_model("separated_all", o, 1000, 120);
}

#[test]
fn model_separated_64() {
    // Most values separate, short ones (and most counters) stay inline.
    let o = with(tiny(2 << 10, 128), |o| {
        o.blob_threshold = Some(64);
        o.compression = Compression::None;
        o.row_cache_size = 1 << 20;
    });
    run_model("separated_64", o, 1000, 120);
}

/// The option sets of the tests above, for the fixed sequences below.
fn all_option_sets() -> Vec<Options> {
    vec![
        with(tiny(1 << 10, 64), |o| o.blob_threshold = Some(0)),
        tiny(1 << 10, 64),
        with(tiny(2 << 10, 128), |o| {
            o.compression = Compression::None;
            o.bloom_bits_per_key = 0;
            o.mmap_reads = true;
        }),
        with(tiny(1 << 10, 64), |o| o.compression = zstd_or_lz4(3)),
        with(tiny(1 << 10, 64), |o| o.row_cache_size = 2 << 10),
        Options::default().durability(Durability::Buffered),
    ]
}

/// Runs a fixed sequence under every option set.
fn run_fixed(ops: &[Op]) {
    for options in all_option_sets() {
        if let Err(e) = run_ops(&options, ops) {
            panic!("{e}\noptions: {options:?}");
        }
    }
}

/// Enough data in keyspace `ks` (keys `k(b"a")`, `k(b"b")`, ... with 300-byte values) to
/// fill several memtables.
fn fill(ks: usize, seed: u8) -> Vec<Op> {
    let keys: [&[u8]; 8] = [
        b"",
        b"\x00",
        b"a",
        b"a\xff",
        b"b",
        b"\xff",
        b"\xff\xff",
        b"\xff\xff\x00",
    ];
    keys.iter()
        .map(|key| Insert(ks, k(key), v(seed, 300), 0))
        .collect()
}

#[test]
fn model_case_inverted_empty_and_point_ranges() {
    let mut ops = fill(0, 1);
    ops.extend([
        Flush,
        Range(0, B::In(k(b"b")), B::In(k(b"a")), Walk::Fwd),
        Range(0, B::In(k(b"a")), B::Ex(k(b"a")), Walk::Rev),
        Range(0, B::Ex(k(b"a")), B::Ex(k(b"a")), Walk::Fwd),
        Range(0, B::Ex(k(b"a")), B::In(k(b"a")), Walk::Mixed(0b10)),
        Range(0, B::In(k(b"a")), B::In(k(b"a")), Walk::Rev),
        Range(0, B::In(k(b"")), B::In(k(b"")), Walk::Fwd),
        Range(0, B::Ex(k(b"")), B::Un, Walk::Mixed(0b0110)),
        Range(0, B::Un, B::Ex(k(b"")), Walk::Rev),
        Range(0, B::Ex(k(b"\xff\xff\x00")), B::Un, Walk::Fwd),
        Range(
            0,
            B::Un,
            B::In(k(b"\xff\xff\x00")),
            Walk::Mixed(u32::MAX / 3),
        ),
    ]);
    run_fixed(&ops);
}

#[test]
fn model_case_prefixes_ending_in_ff_and_empty() {
    let mut ops = fill(1, 2);
    ops.extend([
        Prefix(1, k(b"\xff"), false),
        Prefix(1, k(b"\xff\xff"), true),
        Prefix(1, k(b""), true),
        Prefix(1, k(b"a\xff"), false),
        Prefix(1, k(b"\x00"), true),
        Snap,
        Remove(1, k(b"\xff\xff")),
        Flush,
        PrefixAt(0, 1, k(b"\xff")),
        Prefix(1, k(b"\xff"), true),
        Compact,
        PrefixAt(0, 1, k(b"\xff\xff")),
    ]);
    run_fixed(&ops);
}

#[test]
fn model_case_later_op_on_the_same_key_in_a_batch_wins() {
    run_fixed(&[
        Insert(2, k(b"x"), v(1, 10), 0),
        Batch(vec![
            (2, k(b"x"), Some(v(2, 10))),
            (2, k(b"x"), None),
            (0, k(b"y"), None),
            (0, k(b"y"), Some(v(3, 0))),
            (1, k(b"z"), Some(v(4, 5))),
            (1, k(b"z"), Some(v(5, 6))),
        ]),
        Get(2, k(b"x")),
        Get(0, k(b"y")),
        Get(1, k(b"z")),
        Flush,
        Reopen(DropDb),
        Batch(Vec::new()),
        Get(2, k(b"x")),
    ]);
}

#[test]
fn model_case_a_recreated_keyspace_starts_empty_in_memory_tables_and_after_reopen() {
    let mut ops = fill(1, 3);
    ops.extend([Flush, Snap]);
    ops.extend(fill(1, 5)); // some in tables, some in the memtable
    ops.extend([
        IterOpen(1, B::Un, B::Un),
        IterPull(0, Walk::Fwd, 2),
        DropKs(1),
        IterPull(0, Walk::Mixed(0b01), 3),
        Create(1),
        GetAt(0, 1, k(b"a")),
        RangeAt(0, 1, B::Un, B::Un, Walk::Fwd),
        Insert(1, k(b"b"), v(7, 7), 0),
        Flush,
        Compact,
        IterPull(0, Walk::Rev, 20),
        Reopen(Close),
        Range(1, B::Un, B::Un, Walk::Rev),
        DropKs(1),
        Reopen(Alter),
        Create(1),
        Reopen(Close),
        Range(1, B::Un, B::Un, Walk::Fwd),
    ]);
    run_fixed(&ops);
}

#[test]
fn model_case_snapshots_and_iterators_outlive_compactions() {
    let mut ops = fill(0, 9);
    ops.extend([Snap, IterOpen(0, B::In(k(b"a")), B::Un)]);
    for round in 0..6u8 {
        ops.extend(fill(0, 10 + round));
        ops.push(Remove(0, k(b"b")));
        ops.push(Flush);
        ops.push(IterPull(0, Walk::Fwd, 1));
        ops.push(Snap);
    }
    ops.extend([
        Compact,
        RangeAt(0, 0, B::Un, B::Un, Walk::Mixed(0b1010)),
        GetAt(0, 0, k(b"b")),
        DropSnap(0),
        RangeAt(3, 0, B::Un, B::Un, Walk::Rev),
        IterPull(0, Walk::Rev, 20),
        Reopen(Alter),
        Range(0, B::Un, B::Un, Walk::Fwd),
        Reopen(Alter),
    ]);
    run_fixed(&ops);
}

#[test]
fn model_case_range_deletes_with_expiry_counters_and_counts() {
    let mut ops = fill(0, 5);
    ops.extend([
        Incr(0, k(b"c"), 4, false, 0),
        InsertEntry(0, k(b"b"), v(1, 10), 3, None, Some(5)),
        Flush,
        Snap,
        RemoveRange(0, B::In(k(b"a")), B::In(k(b"c"))),
        Len(0),
        LenAt(0, 0),
        Heads(0, B::Un, B::Un, Walk::Mixed(0b0101)),
        Incr(0, k(b"c"), 2, false, 1),
        InsertEntry(0, k(b"b"), v(2, 10), 0, None, Some(3)),
        Len(0),
        Advance(30),
        // "b" expired over a range tombstone over older versions: still gone.
        Get(0, k(b"b")),
        Head(0, k(b"b")),
        HeadAt(0, 0, k(b"b")),
        Len(0),
        Flush,
        CompactExpired,
        RemovePrefix(0, k(b"")),
        Incr(0, k(b"c"), 1, true, 2),
        Len(0),
        LenAt(0, 0),
        Compact,
        Reopen(Close),
        Len(0),
        Range(0, B::Un, B::Un, Walk::Rev),
    ]);
    run_fixed(&ops);
}

#[test]
fn model_case_range_deletes_through_flush_compaction_snapshots_and_reopen() {
    let mut ops = fill(0, 4);
    ops.extend([Flush, Snap, IterOpen(0, B::Un, B::Un)]);
    ops.extend(fill(0, 6));
    ops.extend([
        RemoveRange(0, B::In(k(b"a")), B::Ex(k(b"\xff"))),
        Get(0, k(b"a\xff")),
        Range(0, B::Un, B::Un, Walk::Mixed(0b1011)),
        RemovePrefix(0, k(b"\xff\xff")),
        Insert(0, k(b"b"), v(9, 9), 0),
        Flush,
        Snap,
        GetAt(0, 0, k(b"a")),
        RangeAt(0, 0, B::Un, B::Un, Walk::Rev),
        IterPull(0, Walk::Rev, 4),
        Compact,
        RemoveRange(0, B::Ex(k(b"")), B::Un),
        BatchRangeInsert(0, B::Un, B::In(k(b"")), k(b"a"), v(1, 3)),
        Flush,
        Compact,
        RangeAt(1, 0, B::Un, B::Un, Walk::Fwd),
        RangeAt(0, 0, B::Un, B::Un, Walk::Mixed(0b0110)),
        IterPull(0, Walk::Fwd, 20),
        DropSnap(0),
        DropSnap(0),
        Compact,
        Reopen(Alter),
        RemovePrefix(0, k(b"")),
        Reopen(DropDb),
        Range(0, B::Un, B::Un, Walk::Rev),
    ]);
    for round in 0..4u8 {
        ops.extend(fill(0, 20 + round));
        ops.push(RemoveRange(0, B::In(k(b"\x00")), B::In(k(b"b"))));
        ops.push(Flush);
    }
    ops.extend([Compact, Reopen(Close)]);
    run_fixed(&ops);
}

#[test]
fn model_case_expired_entries_hide_older_versions_everywhere() {
    let mut ops = fill(0, 3);
    ops.extend([
        Flush,
        Snap,
        // Over the flushed versions: entries that expire at 50 ms and at once.
        InsertEntry(0, k(b"a"), v(1, 10), 7, Some(v(2, 5)), Some(5)),
        InsertEntry(0, k(b"b"), v(3, 10), 0, None, Some(0)),
        InsertEntry(0, k(b"aa"), v(4, 10), 9, None, None),
        Snap,
        Head(0, k(b"a")),
        Heads(0, B::Un, B::Un, Walk::Mixed(0b0110)),
        HeadAt(1, 0, k(b"a")),
        IterOpen(0, B::Un, B::Un),
        Flush,
        Advance(49),
        Get(0, k(b"a")),
        Advance(1),
        // Now "a" is gone, in the newer snapshot too, and the older value stays hidden.
        Get(0, k(b"a")),
        GetAt(1, 0, k(b"a")),
        HeadAt(1, 0, k(b"a")),
        Heads(0, B::Un, B::Un, Walk::Rev),
        // The iterator opened before the expiry keeps its view.
        IterPull(0, Walk::Fwd, 20),
        CompactExpired,
        Compact,
        RangeAt(0, 0, B::Un, B::Un, Walk::Fwd),
        Reopen(Close),
        Get(0, k(b"a")),
        CompactExpired,
    ]);
    run_fixed(&ops);
}

#[test]
fn model_case_counters_across_flushes_reopens_and_refusals() {
    run_fixed(&[
        Incr(1, k(b"c"), 5, false, 0),
        Incr(1, k(b"c"), 7, true, 1),
        Snap,
        Flush,
        Incr(1, k(b"c"), i64::MIN, true, 2),
        Incr(1, k(b"c"), i64::MIN, false, 3),
        Incr(1, k(b"c"), -1, false, 4),
        Incr(1, k(b"c"), i64::MIN, false, 5),
        LenAt(0, 1),
        Insert(1, k(b"x"), v(3, 4), 0),
        Incr(1, k(b"x"), 1, false, 0),
        Reopen(DropDb),
        Incr(1, k(b"c"), 1, false, 0),
        Remove(1, k(b"c")),
        Incr(1, k(b"c"), 1, true, 0),
        Len(1),
        Compact,
        Reopen(Alter),
        Len(1),
        Len(2),
    ]);
}
