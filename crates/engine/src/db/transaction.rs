//! [`Transaction`]: read, decide and write atomically across keyspaces, with optimistic
//! conflict detection; [`Db::update`] runs one and retries it on conflict.
//!
//! A transaction reads at a snapshot taken when it begins, with its own pending writes
//! laid over it (read-your-own-writes, scans included). Its writes stay in memory until
//! `commit`, which sends them as one batch through the group commit with a
//! [`Validation`]: the leader refuses the batch with [`Error::Conflict`] if another write
//! changed, after the snapshot, a key the transaction writes (snapshot isolation), or
//! under [`Isolation::Serializable`] also a key or range it read (`db/conflict.rs`).
//!
//! Invariants:
//! 1. A transaction's writes reach the store only through its commit, as one batch:
//!    readers and recovery see all of them or none (the batch's own guarantee), and a
//!    conflict writes nothing.
//! 2. A read returns the transaction's newest pending write of the key if there is one
//!    (a pending remove, or a pending range remove covering the key, reads as absent),
//!    else the snapshot's value.
//! 3. A pending merge (`Transaction::merge`) on a key the transaction already wrote (or
//!    removed) is applied at once, so the pending write stays a put; on any other key its
//!    operands are kept and written as merge operands at commit, and reads of the key
//!    merge them onto the snapshot's value. Either way the key is a write for conflict
//!    detection.
//! 4. The batch puts range removes first, then the pending writes in key order: a write
//!    made after a range remove covering its key gets the higher seqno and stays, and a
//!    write made before one was dropped from the pending set when the range remove was
//!    added, so the batch applies exactly what the transaction read back.
//!
//! Range removes take part in conflict detection only through the keys the transaction
//! reads under serializable isolation: two transactions that remove overlapping ranges
//! do not conflict with each other for that alone.
//!
//! Thread-safety: a transaction is `Send` and `Sync`: its reads take `&self` and may run
//! from several threads, its writes take `&mut self`; any number of transactions run at
//! once, on any threads.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

use super::conflict::{CheckedKey, CheckedRange, Validation};
use super::counter::{self, Carried};
use super::keyspace::{bounds, prefix_bounds};
use super::{write, Db, Keyspace, Readable, Snapshot};
use crate::attrs::{EntryOptions, Head};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::{KeyspaceId, SeqNo};
use crate::options::Durability;
use crate::rangedel;

/// What a transaction's commit checks besides the keys it writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    /// Snapshot isolation: reads see the snapshot taken at the start; the commit fails if
    /// another write changed a key the transaction writes after that snapshot. Two
    /// transactions that each read what the other writes may both commit (write skew).
    #[default]
    Snapshot,
    /// Serializable: as `Snapshot`, and the commit also fails if another write changed a
    /// key the transaction read, or added, changed or removed a key in a range it
    /// scanned, after its snapshot. Committed transactions then behave as if run one at a
    /// time, in commit order.
    Serializable,
}

/// How a transaction runs: its isolation, the durability of its commit, and how many
/// times [`Db::update_with`] runs it before giving up on conflicts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransactionOptions {
    /// Isolation level (default: snapshot isolation).
    pub isolation: Isolation,
    /// Durability of the commit (`None`: the store's default).
    pub durability: Option<Durability>,
    /// Runs of the closure [`Db::update_with`] makes at most (default 32).
    pub max_attempts: u32,
}

impl Default for TransactionOptions {
    fn default() -> TransactionOptions {
        TransactionOptions {
            isolation: Isolation::Snapshot,
            durability: None,
            max_attempts: 32,
        }
    }
}

impl TransactionOptions {
    /// Snapshot isolation, the store's durability, 32 attempts.
    pub fn new() -> TransactionOptions {
        TransactionOptions::default()
    }

    /// Sets the isolation level.
    pub fn isolation(mut self, isolation: Isolation) -> TransactionOptions {
        self.isolation = isolation;
        self
    }

    /// Sets the durability of the commit.
    pub fn durability(mut self, durability: Durability) -> TransactionOptions {
        self.durability = Some(durability);
        self
    }

    /// Sets how many times `update_with` runs the closure at most (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> TransactionOptions {
        self.max_attempts = attempts.max(1);
        self
    }
}

/// A pending write of one key.
#[derive(Debug, Clone)]
enum Pending {
    /// The value, with its attributes (`Carried::default()`: none).
    Put(Vec<u8>, Carried),
    Remove,
    /// Merge operands, oldest first, for a key the transaction did not write before.
    Merge(Vec<Vec<u8>>),
}

/// The transaction's own value of a key it wrote (with its attributes); `None`: removed.
type Own = Option<(Vec<u8>, Carried)>;

/// What a serializable transaction read.
#[derive(Debug, Default)]
struct ReadSet {
    keys: Vec<(KeyspaceId, Arc<str>, Vec<u8>)>,
    ranges: Vec<CheckedRange>,
}

/// A transaction (see the module documentation). Dropping it without `commit` rolls it
/// back: nothing it wrote reaches the store.
pub struct Transaction {
    db: Db,
    snapshot: Snapshot,
    options: TransactionOptions,
    /// Pending writes, by keyspace and key.
    writes: BTreeMap<(KeyspaceId, Vec<u8>), Pending>,
    /// Pending range removes `[start, end)` (empty `end`: unbounded), in order.
    range_removes: Vec<(KeyspaceId, Vec<u8>, Vec<u8>)>,
    /// Names of the keyspaces written, for conflict errors.
    names: BTreeMap<KeyspaceId, Arc<str>>,
    /// What a serializable transaction read (behind a lock so reads take `&self` and the
    /// transaction is `Sync`; uncontended in use).
    reads: parking_lot::Mutex<ReadSet>,
    /// The first refused write; `commit` reports it and writes nothing.
    error: Option<Error>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("snapshot", &self.snapshot.seqno())
            .field("isolation", &self.options.isolation)
            .field("writes", &self.writes.len())
            .field("range_removes", &self.range_removes.len())
            .finish()
    }
}

impl Db {
    /// Begins a transaction with snapshot isolation and the store's durability.
    pub fn transaction(&self) -> Transaction {
        self.transaction_with(&TransactionOptions::default())
    }

    /// Begins a transaction with `options`.
    pub fn transaction_with(&self, options: &TransactionOptions) -> Transaction {
        Transaction {
            db: self.clone(),
            snapshot: self.snapshot(),
            options: options.clone(),
            writes: BTreeMap::new(),
            range_removes: Vec::new(),
            names: BTreeMap::new(),
            reads: parking_lot::Mutex::new(ReadSet::default()),
            error: None,
        }
    }

    /// Runs `f` in a transaction and commits it, running it again (after a short,
    /// growing, randomised pause) while the commit fails with a conflict, at most 32
    /// times. An error from `f` rolls the transaction back and is returned as it is.
    ///
    /// ```
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// # let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let accounts = db.keyspace("accounts")?;
    /// accounts.insert("alice", "100")?;
    /// accounts.insert("bob", "0")?;
    /// db.update(|tx| {
    ///     tx.incr(&accounts, "alice", -30)?;
    ///     tx.incr(&accounts, "bob", 30)
    /// })?;
    /// assert_eq!(accounts.get("bob")?, Some(b"30".to_vec()));
    /// # db.close()
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Conflict` if every attempt conflicted; the error of `f`; as
    /// [`Transaction::commit`].
    pub fn update<T>(&self, f: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        self.update_with(&TransactionOptions::default(), f)
    }

    /// As [`Db::update`], with `options` (isolation, durability, attempts).
    ///
    /// # Errors
    /// As [`Db::update`].
    pub fn update_with<T>(
        &self,
        options: &TransactionOptions,
        mut f: impl FnMut(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut tx = self.transaction_with(options);
            let outcome = f(&mut tx).and_then(|out| tx.commit().map(|_| out));
            match outcome {
                Err(e) if e.is_conflict() && attempt < options.max_attempts => {
                    backoff(attempt);
                }
                other => return other,
            }
        }
    }
}

/// Waits before attempt `attempt + 1`: a random pause up to 50 µs × 2^attempt, at most
/// about 10 ms, so transactions that conflicted do not meet again in lockstep.
fn backoff(attempt: u32) {
    let cap_us = (50u64 << attempt.min(8)).min(10_000);
    // A cheap per-thread random number: the pause needs spread, not quality.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut x = u64::from(seed) ^ (std::thread::current().id().as_u64_hash());
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::thread::sleep(Duration::from_micros(x % cap_us.max(1) + 1));
}

/// A hash of a thread id, for [`backoff`]'s spread.
trait ThreadIdHash {
    fn as_u64_hash(&self) -> u64;
}

impl ThreadIdHash for std::thread::ThreadId {
    fn as_u64_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

/// A [`Keyspace::compare_and_swap`] that found another value than expected; nothing was
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareAndSwapError {
    /// The value found (`None`: absent).
    pub current: Option<Vec<u8>>,
}

impl std::fmt::Display for CompareAndSwapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.current {
            Some(v) => write!(
                f,
                "compare-and-swap found another value ({} bytes)",
                v.len()
            ),
            None => f.write_str("compare-and-swap found the key absent"),
        }
    }
}

impl std::error::Error for CompareAndSwapError {}

/// Attempts a single-key operation makes before reporting a conflict: each retry means
/// another write changed the key in between.
const SINGLE_KEY_ATTEMPTS: u32 = 1000;

impl Keyspace {
    /// Sets `key` to `new` (`None`: removes it) if its value is `expected` (`None`:
    /// absent), atomically with respect to every other write. `Ok(Err(..))` holds the
    /// value found when it differs; nothing is written then.
    ///
    /// ```
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// # let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let locks = db.keyspace("locks")?;
    /// assert!(locks.compare_and_swap("job:7", None, Some(b"worker-1"))?.is_ok());
    /// let taken = locks.compare_and_swap("job:7", None, Some(b"worker-2"))?;
    /// assert_eq!(taken.unwrap_err().current, Some(b"worker-1".to_vec()));
    /// # db.close()
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Conflict` if the key kept changing under 1,000 attempts; as [`Keyspace::insert`].
    pub fn compare_and_swap(
        &self,
        key: impl AsRef<[u8]>,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        let key = key.as_ref();
        let options = TransactionOptions::new().max_attempts(SINGLE_KEY_ATTEMPTS);
        self.db.update_with(&options, |tx| {
            let current = tx.get(self, key)?;
            if current.as_deref() != expected {
                return Ok(Err(CompareAndSwapError { current }));
            }
            match new {
                Some(v) => tx.insert(self, key, v),
                None => tx.remove(self, key),
            }
            Ok(Ok(()))
        })
    }

    /// Replaces the value of `key` (`None`: absent) with what `f` returns for it (`None`:
    /// remove), atomically with respect to every other write, and returns the value `f`
    /// was given. `f` may run more than once (once per attempt); it sees the value as it
    /// is at that attempt.
    ///
    /// # Errors
    /// `Conflict` if the key kept changing under 1,000 attempts; as [`Keyspace::insert`].
    pub fn fetch_update(
        &self,
        key: impl AsRef<[u8]>,
        mut f: impl FnMut(Option<&[u8]>) -> Option<Vec<u8>>,
    ) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        let options = TransactionOptions::new().max_attempts(SINGLE_KEY_ATTEMPTS);
        self.db.update_with(&options, |tx| {
            let current = tx.get(self, key)?;
            match f(current.as_deref()) {
                Some(v) => tx.insert(self, key, v),
                None => tx.remove(self, key),
            }
            Ok(current)
        })
    }
}

impl Transaction {
    /// The seqno the transaction reads at.
    pub fn read_seqno(&self) -> u64 {
        self.snapshot.seqno()
    }

    /// The transaction's isolation level.
    pub fn isolation(&self) -> Isolation {
        self.options.isolation
    }

    /// `InvalidArgument` for a keyspace of another store.
    fn check_store(&self, keyspace: &Keyspace) -> Result<()> {
        if Arc::ptr_eq(&keyspace.db.inner, &self.db.inner) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "keyspace {:?} of the store in {} was given to a transaction of the store \
                 in {}",
                keyspace.name(),
                keyspace.db.inner.dir.display(),
                self.db.inner.dir.display()
            )))
        }
    }

    fn serializable(&self) -> bool {
        self.options.isolation == Isolation::Serializable
    }

    /// True if a pending range remove covers `key`.
    fn range_removed(&self, keyspace: KeyspaceId, key: &[u8]) -> bool {
        self.range_removes.iter().any(|(ks, start, end)| {
            *ks == keyspace && start.as_slice() <= key && rangedel::below_end(key, end)
        })
    }

    /// The transaction's own view of `key`, if it wrote it: `Some(None)` for a removal;
    /// pending merge operands are merged onto the snapshot's value (invariant 3).
    ///
    /// # Errors
    /// As [`Transaction::get`]; `MergeFailed`.
    fn own(&self, keyspace: &Keyspace, key: &[u8]) -> Result<Option<Own>> {
        if let Some(Pending::Merge(operands)) = self.writes.get(&(keyspace.id, key.to_vec())) {
            self.note_read(keyspace, key);
            let (base, carried) = match self.snapshot.head(keyspace, key)? {
                Some(head) => (self.snapshot.get(keyspace, key)?, Carried::from_head(&head)),
                None => (None, Carried::default()),
            };
            let value = self.merged(keyspace.id, key, base.as_deref(), operands)?;
            return Ok(Some(Some((value, carried))));
        }
        Ok(self
            .pending(keyspace.id, key)
            .map(|own| own.map(|(v, attrs)| (v.to_vec(), attrs.clone()))))
    }

    /// `operands` (oldest first) merged onto `base` with the keyspace's operator.
    fn merged(
        &self,
        keyspace: KeyspaceId,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[Vec<u8>],
    ) -> Result<Vec<u8>> {
        let operator = self.db.inner.reads.merge_operator(keyspace)?;
        let mut chain = crate::merge::Chain::new();
        for op in operands.iter().rev() {
            chain.push(op);
        }
        let base = base.map_or(crate::merge::Base::None, crate::merge::Base::Value);
        chain.merge(operator.as_ref(), key, base)
    }

    /// The transaction's own view of `key`, if it wrote it: `Some(None)` for a removal.
    /// Requires: `key` has no pending merge (see [`Transaction::own`]).
    fn pending(&self, keyspace: KeyspaceId, key: &[u8]) -> Option<Option<(&[u8], &Carried)>> {
        match self.writes.get(&(keyspace, key.to_vec())) {
            Some(Pending::Put(v, attrs)) => {
                let expired = attrs
                    .expires_at
                    .is_some_and(|at| at <= self.db.inner.options.clock.now_ms());
                Some((!expired).then_some((v.as_slice(), attrs)))
            }
            Some(Pending::Remove) => Some(None),
            // Resolved by `own` before this is asked.
            Some(Pending::Merge(_)) => None,
            None => self.range_removed(keyspace, key).then_some(None),
        }
    }

    fn note_read(&self, keyspace: &Keyspace, key: &[u8]) {
        if self.serializable() {
            self.reads
                .lock()
                .keys
                .push((keyspace.id, Arc::clone(&keyspace.name), key.to_vec()));
        }
    }

    fn note_range(&self, keyspace: &Keyspace, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) {
        if self.serializable() {
            self.reads.lock().ranges.push(CheckedRange {
                keyspace: keyspace.id,
                name: Arc::clone(&keyspace.name),
                lo: lo.clone(),
                hi: hi.clone(),
            });
        }
    }

    /// The value of `key` in `keyspace`: the transaction's own pending write if any,
    /// else the value at its snapshot.
    ///
    /// # Errors
    /// `InvalidArgument` for a keyspace of another store or a dropped one; `Corruption`,
    /// `Io` from the files read.
    pub fn get(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        self.check_store(keyspace)?;
        if let Some(own) = self.own(keyspace, key)? {
            return Ok(own.map(|(v, _)| v));
        }
        self.note_read(keyspace, key);
        self.snapshot.get(keyspace, key)
    }

    /// The values of `keys` in `keyspace`, in order, each as [`Transaction::get`] sees it:
    /// the transaction's own pending writes, and the rest read at its snapshot together
    /// ([`Keyspace::get_many`]: their memory misses overlap). Each key read at the
    /// snapshot counts as read for a serializable commit's check.
    ///
    /// # Errors
    /// As [`Transaction::get`], for the first key whose read fails.
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keyspace: &Keyspace,
        keys: &[K],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_store(keyspace)?;
        let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(keys.len());
        let mut rest: Vec<(usize, &[u8])> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let key = key.as_ref();
            match self.own(keyspace, key)? {
                Some(own) => out.push(own.map(|(v, _)| v)),
                None => {
                    self.note_read(keyspace, key);
                    out.push(None);
                    rest.push((i, key));
                }
            }
        }
        if rest.is_empty() {
            return Ok(out);
        }
        let unread: Vec<&[u8]> = rest.iter().map(|&(_, k)| k).collect();
        let values = self.snapshot.get_many(keyspace, &unread)?;
        for ((i, _), value) in rest.into_iter().zip(values) {
            if let Some(slot) = out.get_mut(i) {
                *slot = value;
            }
        }
        Ok(out)
    }

    /// The entry of `key` without its value, as [`Transaction::get`] sees it. An entry
    /// the transaction wrote has seqno 0 (it has none until the commit).
    ///
    /// # Errors
    /// As [`Transaction::get`].
    pub fn head(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Head>> {
        let key = key.as_ref();
        self.check_store(keyspace)?;
        if let Some(own) = self.own(keyspace, key)? {
            return Ok(own.map(|(v, attrs)| Head {
                value_len: v.len() as u64,
                tag: attrs.tag,
                meta: attrs.meta.clone(),
                seqno: 0,
                expires_at: attrs.expires_at,
                separated: false,
            }));
        }
        self.note_read(keyspace, key);
        self.snapshot.head(keyspace, key)
    }

    /// True if `key` is present, as [`Transaction::get`] sees it.
    ///
    /// # Errors
    /// As [`Transaction::get`].
    pub fn contains_key(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.head(keyspace, key)?.is_some())
    }

    /// The pairs with keys in `range`, ascending (`.rev()` for descending): the snapshot's,
    /// with the transaction's pending writes laid over them as they are now.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: &Keyspace,
        range: R,
    ) -> TransactionIter {
        self.scan(keyspace, bounds(range))
    }

    /// The pairs whose key starts with `prefix`, ascending; as [`Transaction::range`].
    pub fn prefix(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> TransactionIter {
        self.scan(keyspace, prefix_bounds(prefix.as_ref()))
    }

    fn scan(
        &self,
        keyspace: &Keyspace,
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
    ) -> TransactionIter {
        if let Err(e) = self.check_store(keyspace) {
            return TransactionIter::failed(e);
        }
        self.note_range(keyspace, &lo, &hi);
        let ks = keyspace.id;
        let in_range = |k: &[u8]| {
            (match &lo {
                Bound::Included(l) => k >= l.as_slice(),
                Bound::Excluded(l) => k > l.as_slice(),
                Bound::Unbounded => true,
            }) && match &hi {
                Bound::Included(h) => k <= h.as_slice(),
                Bound::Excluded(h) => k < h.as_slice(),
                Bound::Unbounded => true,
            }
        };
        let now = self.db.inner.options.clock.now_ms();
        // The pending writes in the range, in key order: `Some` a live value, `None` a
        // removal (which hides the snapshot's version).
        let mut own: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        let pending = self
            .writes
            .range((ks, Vec::new())..)
            .take_while(|((k, _), _)| *k == ks)
            .filter(|((_, key), _)| in_range(key));
        for ((_, key), p) in pending {
            let value = match p {
                Pending::Put(v, attrs) if attrs.expires_at.is_none_or(|at| at > now) => {
                    Some(v.clone())
                }
                Pending::Merge(_) => match self.own(keyspace, key) {
                    Ok(merged) => merged.flatten().map(|(v, _)| v),
                    Err(e) => return TransactionIter::failed(e),
                },
                _ => None,
            };
            own.push((key.clone(), value));
        }
        let removes: Vec<(Vec<u8>, Vec<u8>)> = self
            .range_removes
            .iter()
            .filter(|(k, _, _)| *k == ks)
            .map(|(_, s, e)| (s.clone(), e.clone()))
            .collect();
        TransactionIter {
            scan: Some(self.snapshot.range(keyspace, (lo, hi))),
            own,
            front: 0,
            back_end: 0,
            removes,
            peek_front: None,
            peek_back: None,
            failed: None,
        }
        .with_back_end()
    }

    /// Records the keyspace's name for conflict errors; false (and the error kept for
    /// `commit`) for a keyspace of another store.
    fn accepts(&mut self, keyspace: &Keyspace) -> bool {
        if self.error.is_some() {
            return false;
        }
        if let Err(e) = self.check_store(keyspace) {
            self.error = Some(e);
            return false;
        }
        self.names
            .entry(keyspace.id)
            .or_insert_with(|| Arc::clone(&keyspace.name));
        true
    }

    fn refuse_if(&mut self, check: Result<()>) -> bool {
        match check {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    /// Sets `key` to `value` in `keyspace` when the transaction commits.
    pub fn insert(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.insert_entry(keyspace, key, value, &EntryOptions::new());
    }

    /// Sets `key` to `value` with the attributes of `options` (see
    /// [`Keyspace::insert_entry`]; a ttl counts from this call, `options.durability` is
    /// ignored: the commit's applies). Invalid options are reported by the commit.
    pub fn insert_entry(
        &mut self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &EntryOptions,
    ) {
        if !self.accepts(keyspace) {
            return;
        }
        let (key, value) = (key.as_ref(), value.as_ref());
        let checked = crate::key::check_key_len(key)
            .and_then(|()| crate::key::check_value_len(value))
            .and_then(|()| {
                let attrs = options.attrs(self.db.inner.options.clock.now_ms())?;
                Ok(Carried {
                    tag: attrs.tag,
                    meta: attrs.meta.to_vec(),
                    expires_at: attrs.expires_at,
                })
            });
        match checked {
            Ok(attrs) => {
                self.writes.insert(
                    (keyspace.id, key.to_vec()),
                    Pending::Put(value.to_vec(), attrs),
                );
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Removes `key` from `keyspace` when the transaction commits.
    pub fn remove(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>) {
        if !self.accepts(keyspace) {
            return;
        }
        let key = key.as_ref();
        if self.refuse_if(crate::key::check_key_len(key)) {
            self.writes
                .insert((keyspace.id, key.to_vec()), Pending::Remove);
        }
    }

    /// Removes every key in `range` from `keyspace` when the transaction commits; reads
    /// of the transaction see them removed at once. An empty range does nothing.
    pub fn remove_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        keyspace: &Keyspace,
        range: R,
    ) {
        if !self.accepts(keyspace) {
            return;
        }
        match rangedel::normalize(&range) {
            Ok(Some((start, end))) => self.add_range_remove(keyspace.id, start, end),
            Ok(None) => {}
            Err(e) => self.error = Some(e),
        }
    }

    /// Removes every key starting with `prefix` from `keyspace` when the transaction
    /// commits; as [`Transaction::remove_range`].
    pub fn remove_prefix(&mut self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) {
        if !self.accepts(keyspace) {
            return;
        }
        match rangedel::prefix_range(prefix.as_ref()) {
            Ok((start, end)) => self.add_range_remove(keyspace.id, start, end),
            Err(e) => self.error = Some(e),
        }
    }

    /// Records a range remove and drops the pending writes it covers (invariant 4).
    fn add_range_remove(&mut self, keyspace: KeyspaceId, start: Vec<u8>, end: Vec<u8>) {
        self.writes.retain(|(ks, key), _| {
            !(*ks == keyspace
                && start.as_slice() <= key.as_slice()
                && rangedel::below_end(key, &end))
        });
        self.range_removes.push((keyspace, start, end));
    }

    /// Merges `operand` into `key` in `keyspace` with the keyspace's merge operator when
    /// the transaction commits (see [`Keyspace::merge`]): nothing is read unless the
    /// transaction reads the key. The transaction's reads see the merge at once. The key
    /// joins the transaction's writes, so a concurrent change to it makes the commit
    /// conflict. A keyspace without a merge operator, or an operand it refuses, is
    /// reported by the commit (nothing is written), as is a failing merge onto a value
    /// the transaction wrote itself.
    pub fn merge(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        if !self.accepts(keyspace) {
            return;
        }
        let (key, operand) = (key.as_ref(), operand.as_ref());
        let checked = crate::key::check_key_len(key)
            .and_then(|()| crate::key::check_value_len(operand))
            .and_then(|()| keyspace.check_merge(key, operand));
        if !self.refuse_if(checked) {
            return;
        }
        let slot = (keyspace.id, key.to_vec());
        // Invariant 3: onto the transaction's own write, the merge applies at once.
        let next = match self.writes.get(&slot) {
            Some(Pending::Merge(operands)) => {
                let mut operands = operands.clone();
                operands.push(operand.to_vec());
                Ok(Pending::Merge(operands))
            }
            Some(Pending::Put(value, attrs)) => self
                .merged(keyspace.id, key, Some(value), &[operand.to_vec()])
                .map(|v| Pending::Put(v, attrs.clone())),
            Some(Pending::Remove) => self
                .merged(keyspace.id, key, None, &[operand.to_vec()])
                .map(|v| Pending::Put(v, Carried::default())),
            None if self.range_removed(keyspace.id, key) => self
                .merged(keyspace.id, key, None, &[operand.to_vec()])
                .map(|v| Pending::Put(v, Carried::default())),
            None => Ok(Pending::Merge(vec![operand.to_vec()])),
        };
        match next {
            Ok(p) => {
                self.writes.insert(slot, p);
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Adds `delta` to the counter at `key` (absent counts as 0) as the transaction sees
    /// it, keeping the entry's attributes; returns the new value. The key joins the
    /// transaction's writes, so a concurrent change to it makes the commit conflict.
    ///
    /// # Errors
    /// `NotACounter`, `CounterOverflow` (nothing recorded), or as [`Transaction::get`].
    pub fn incr(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, delta: i64) -> Result<i64> {
        let key = key.as_ref();
        self.check_store(keyspace)?;
        let (current, attrs) = match self.own(keyspace, key)? {
            Some(Some((v, attrs))) => (Some(v), attrs),
            Some(None) => (None, Carried::default()),
            None => {
                self.note_read(keyspace, key);
                match self.snapshot.head(keyspace, key)? {
                    Some(head) => (self.snapshot.get(keyspace, key)?, Carried::from_head(&head)),
                    None => (None, Carried::default()),
                }
            }
        };
        let n = counter::add(key, current.as_deref(), i128::from(delta))?;
        if self.accepts(keyspace) {
            self.writes.insert(
                (keyspace.id, key.to_vec()),
                Pending::Put(counter::encode(n), attrs),
            );
        }
        Ok(n)
    }

    /// Number of pending writes (range removes count one each).
    pub fn len(&self) -> usize {
        self.writes.len() + self.range_removes.len()
    }

    /// True if the transaction has written nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies every write atomically, if nothing the transaction depends on was written
    /// by another commit after its snapshot; with the durability of its options. Returns
    /// the commit's seqno: the seqno of its last write, or for a transaction that wrote
    /// nothing the store's last seqno when its reads were checked. Transactions behave as
    /// if applied in the order of these seqnos.
    ///
    /// # Errors
    /// `Conflict` naming the key (nothing is written; run the transaction again); the
    /// first refused write (`InvalidArgument`); a dropped keyspace; as
    /// [`Keyspace::insert`].
    pub fn commit(self) -> Result<u64> {
        let durability = self.options.durability;
        self.commit_with(durability)
    }

    /// As [`Transaction::commit`], with `durability` (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    pub fn commit_with(self, durability: Option<Durability>) -> Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let inner = &self.db.inner;
        let mut batch = WriteBatch::new();
        for (ks, start, end) in &self.range_removes {
            batch.remove_range(*ks, start, end)?;
        }
        for ((ks, key), pending) in &self.writes {
            match pending {
                Pending::Put(value, attrs) if *attrs == Carried::default() => {
                    batch.put(*ks, key, value)?;
                }
                Pending::Put(value, attrs) => batch.put_attrs(*ks, key, &attrs.attrs(), value)?,
                Pending::Remove => batch.remove(*ks, key)?,
                Pending::Merge(operands) => {
                    for operand in operands {
                        batch.merge(*ks, key, operand)?;
                    }
                }
            }
        }
        {
            let version = inner.reads.supers.version();
            for op in batch.ops() {
                if version.keyspace(op.keyspace()).is_none() {
                    return Err(Error::invalid(format!(
                        "transaction writes to keyspace id {} which has been dropped",
                        op.keyspace()
                    )));
                }
            }
        }
        let unnamed: Arc<str> = Arc::from("");
        let name = |ks: &KeyspaceId| {
            self.names
                .get(ks)
                .cloned()
                .unwrap_or_else(|| Arc::clone(&unnamed))
        };
        let mut keys: Vec<CheckedKey> = self
            .writes
            .keys()
            .map(|(ks, key)| CheckedKey {
                keyspace: *ks,
                name: name(ks),
                key: key.clone(),
                read: false,
            })
            .collect();
        let reads = self.reads.into_inner();
        keys.extend(reads.keys.into_iter().map(|(ks, name, key)| CheckedKey {
            keyspace: ks,
            name,
            key,
            read: true,
        }));
        let validation = Validation {
            read_at: SeqNo(self.snapshot.seqno()),
            keys,
            ranges: reads.ranges,
        };
        write::write_checked(inner, batch, inner.durability(durability), validation).map(|s| s.0)
    }

    /// Discards every pending write (as dropping the transaction does).
    pub fn rollback(self) {}
}

/// A scan of a transaction ([`Transaction::range`], [`Transaction::prefix`]): the
/// snapshot's pairs merged with the transaction's pending writes. Double-ended; after an
/// `Err` it yields nothing more.
pub struct TransactionIter {
    /// The snapshot's scan; `None` once it failed.
    scan: Option<super::Iter>,
    /// Pending writes in the range, in key order (`None`: removed).
    own: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Next unconsumed index of `own` from the front.
    front: usize,
    /// One past the last unconsumed index of `own` from the back.
    back_end: usize,
    /// Pending range removes of the keyspace.
    removes: Vec<(Vec<u8>, Vec<u8>)>,
    /// A snapshot pair taken from the front of the scan, not yet yielded.
    peek_front: Option<(Vec<u8>, Vec<u8>)>,
    /// A snapshot pair taken from the back of the scan, not yet yielded.
    peek_back: Option<(Vec<u8>, Vec<u8>)>,
    failed: Option<Error>,
}

impl std::fmt::Debug for TransactionIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionIter")
            .field("pending", &(self.back_end - self.front))
            .finish()
    }
}

impl TransactionIter {
    fn failed(e: Error) -> TransactionIter {
        TransactionIter {
            scan: None,
            own: Vec::new(),
            front: 0,
            back_end: 0,
            removes: Vec::new(),
            peek_front: None,
            peek_back: None,
            failed: Some(e),
        }
    }

    fn with_back_end(mut self) -> TransactionIter {
        self.back_end = self.own.len();
        self
    }

    /// True if the snapshot's version of `key` is hidden by a pending write or range
    /// remove.
    fn hidden(&self, key: &[u8]) -> bool {
        self.own
            .binary_search_by(|(k, _)| k.as_slice().cmp(key))
            .is_ok()
            || self
                .removes
                .iter()
                .any(|(s, e)| s.as_slice() <= key && rangedel::below_end(key, e))
    }

    /// The next visible snapshot pair from the front (`back`: from the back), taking it
    /// from the other end's peek once the scan is exhausted.
    fn snapshot_next(&mut self, back: bool) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let slot = if back {
                &self.peek_back
            } else {
                &self.peek_front
            };
            if slot.is_some() {
                return Ok(if back {
                    self.peek_back.take()
                } else {
                    self.peek_front.take()
                });
            }
            let item = match self.scan.as_mut() {
                Some(scan) if back => scan.next_back(),
                Some(scan) => scan.next(),
                None => None,
            };
            match item {
                Some(Ok(pair)) => {
                    if !self.hidden(&pair.0) {
                        return Ok(Some(pair));
                    }
                }
                Some(Err(e)) => {
                    self.scan = None;
                    return Err(e);
                }
                None => {
                    // The scan is spent from both ends: what the other end holds is next.
                    return Ok(if back {
                        self.peek_front.take()
                    } else {
                        self.peek_back.take()
                    });
                }
            }
        }
    }

    fn step(&mut self, back: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if let Some(e) = self.failed.take() {
            self.scan = None;
            self.front = self.back_end;
            return Some(Err(e));
        }
        loop {
            let snap = match self.snapshot_next(back) {
                Ok(s) => s,
                Err(e) => {
                    self.front = self.back_end;
                    self.peek_front = None;
                    self.peek_back = None;
                    return Some(Err(e));
                }
            };
            let own_index = if self.front < self.back_end {
                Some(if back { self.back_end - 1 } else { self.front })
            } else {
                None
            };
            let own_key = own_index
                .and_then(|i| self.own.get(i))
                .map(|(k, _)| k.clone());
            // Which comes first in this direction: the snapshot's pair or the pending one.
            let take_own = match (&snap, &own_key) {
                (None, None) => return None,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some((sk, _)), Some(ok)) => {
                    if back {
                        ok > sk
                    } else {
                        ok < sk
                    }
                }
            };
            if !take_own {
                return snap.map(Ok);
            }
            // Put the snapshot pair back where it came from.
            if let Some(pair) = snap {
                if back {
                    self.peek_back = Some(pair);
                } else {
                    self.peek_front = Some(pair);
                }
            }
            let i = own_index.unwrap_or(0);
            if back {
                self.back_end -= 1;
            } else {
                self.front += 1;
            }
            if let Some((k, Some(v))) = self.own.get(i) {
                return Some(Ok((k.clone(), v.clone())));
            }
            // A pending removal: nothing to yield here; go on.
        }
    }
}

impl Iterator for TransactionIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

impl DoubleEndedIterator for TransactionIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}
