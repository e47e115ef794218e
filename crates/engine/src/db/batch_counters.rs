//! Counter increments inside a [`Batch`]: [`Batch::incr`], [`Batch::decr`], and
//! [`Batch::commit_counters`], which returns their new values as a [`Committed`].
//!
//! An increment is queued with the batch, in its place among the batch's writes, and the
//! write leader turns it into a Put of the counter's new value when the batch's turn
//! comes (`counter::Overlay::resolve_batch`), so it reads exactly the state its seqno
//! follows: the store after every earlier write, then the batch's own earlier writes
//! (a put of the key, an earlier increment of it). The log, recovery and compaction see
//! only Puts: the batch's encoding is unchanged (`BATCH_FORMAT.md`).
//!
//! Invariant: a batch whose increment fails (not a counter, overflow, a failed read) is
//! refused whole: it gets no seqno and writes nothing, and later writes of the same group
//! never see it.

use super::keyspace::{Batch, Keyspace};
use crate::error::Result;
use crate::options::Durability;

/// What a committed [`Batch`] reports: its seqno and the new values of its increments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    seqno: u64,
    counters: Vec<i64>,
}

impl Committed {
    /// The seqno of the batch's last write (the store's last seqno for an empty batch).
    pub fn seqno(&self) -> u64 {
        self.seqno
    }

    /// The new value of each [`Batch::incr`] and [`Batch::decr`], in the order they were
    /// added.
    pub fn counters(&self) -> &[i64] {
        &self.counters
    }

    /// The new value of the `index`-th increment (counting from 0 in the order they were
    /// added), or `None` past the last.
    pub fn counter(&self, index: usize) -> Option<i64> {
        self.counters.get(index).copied()
    }
}

impl Batch {
    /// Adds "add `delta` to the counter at `key` in `keyspace`" (see [`Keyspace::incr`]
    /// for what a counter is). The increment reads the counter as the batch has left it
    /// by then: after a put of the key earlier in the batch it adds to that value, and
    /// several increments of one key add up. The new value keeps the entry's attributes.
    /// [`Batch::commit_counters`] returns the new values.
    ///
    /// ```
    /// # use cairn::{Db, Options};
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path().join("store"), Options::default())?;
    /// let (orders, stats) = (db.keyspace("orders")?, db.keyspace("stats")?);
    /// let mut batch = db.batch();
    /// batch.insert(&orders, "o-17", "3 apples");
    /// batch.incr(&stats, "orders", 1);
    /// batch.incr(&stats, "apples", 3);
    /// let done = batch.commit_counters()?;
    /// assert_eq!(done.counters(), &[1, 3]);
    /// assert_eq!(stats.get("apples")?, Some(b"3".to_vec()));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// An increment that fails when the batch is committed (`NotACounter`,
    /// `CounterOverflow`) refuses the whole batch: nothing of it is written.
    pub fn incr(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, delta: i64) {
        self.add_increment(keyspace, key.as_ref(), i128::from(delta));
    }

    /// Adds "subtract `delta` from the counter at `key` in `keyspace`": as
    /// [`Batch::incr`] with `-delta` (`decr(k, i64::MIN)` adds 2^63, as
    /// [`Keyspace::decr`] does).
    pub fn decr(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, delta: i64) {
        self.add_increment(keyspace, key.as_ref(), -i128::from(delta));
    }

    fn add_increment(&mut self, keyspace: &Keyspace, key: &[u8], delta: i128) {
        if !self.accepts(keyspace) {
            return;
        }
        if let Err(e) = crate::key::check_key_len(key) {
            self.error = Some(e);
            return;
        }
        self.increments
            .push(self.batch.len(), keyspace.id, key, delta);
    }

    /// As [`Batch::commit`], returning the batch's seqno and the new values of its
    /// increments.
    ///
    /// # Errors
    /// As [`Batch::commit`].
    pub fn commit_counters(self) -> Result<Committed> {
        self.commit_counters_with(None)
    }

    /// As [`Batch::commit_with`], returning the batch's seqno and the new values of its
    /// increments.
    ///
    /// # Errors
    /// As [`Batch::commit`].
    pub fn commit_counters_with(self, durability: Option<Durability>) -> Result<Committed> {
        let (seqno, counters) = self.apply(durability)?;
        Ok(Committed { seqno, counters })
    }
}
