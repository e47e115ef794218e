//! Conflict detection for transactions (`db/transaction.rs`): what a commit checks, and
//! the check, which the group-commit leader runs when it reaches the commit.
//!
//! A transaction reads at its snapshot's seqno `S`. It may commit only if nothing it
//! depends on was written after `S`: every key it writes (snapshot isolation: no lost
//! update), and under serializable isolation also every key and range it read. "Written
//! after `S`" means a version with a seqno above `S` (a put, a tombstone, a counter
//! update), or a range tombstone above `S` covering the key or overlapping the range.
//!
//! Invariants:
//! 1. The check runs in the leader, after every earlier group is in the memtable and
//!    before this commit gets its seqnos (`write/lead.rs`): it sees every write ordered
//!    before the commit, including the members of its own group queued ahead of it (the
//!    `earlier` batches), and nothing can be ordered between the check and the commit.
//! 2. Plain writes and batches take no part and pay nothing: a transaction detects them
//!    from the data itself, so a conflict with any writer is found.
//! 3. The newest version of a key is in the newest source that holds it (memtables newest
//!    first, then level 0 newest first, then the deeper levels): once a table whose
//!    largest seqno is at or below `S` is reached, no older source can hold a version
//!    above `S`, and the search stops.

use std::ops::Bound;
use std::sync::Arc;

use super::read::merged;
use super::read_path::ReadPath;
use super::super_version::SuperVersion;
use crate::batch::{Op, WriteBatch};
use crate::error::{Error, Result};
use crate::key::{after_key, seek_key, split_encoded, KeyspaceId, SeqNo};
use crate::rangedel;

/// One key a commit depends on.
#[derive(Debug, Clone)]
pub(crate) struct CheckedKey {
    pub(crate) keyspace: KeyspaceId,
    /// The keyspace's name, for the error.
    pub(crate) name: Arc<str>,
    pub(crate) key: Vec<u8>,
    /// The transaction read the key (else it writes it).
    pub(crate) read: bool,
}

/// One key range a serializable commit read.
#[derive(Debug, Clone)]
pub(crate) struct CheckedRange {
    pub(crate) keyspace: KeyspaceId,
    pub(crate) name: Arc<str>,
    pub(crate) lo: Bound<Vec<u8>>,
    pub(crate) hi: Bound<Vec<u8>>,
}

impl CheckedRange {
    fn contains(&self, key: &[u8]) -> bool {
        let above_lo = match &self.lo {
            Bound::Included(lo) => key >= lo.as_slice(),
            Bound::Excluded(lo) => key > lo.as_slice(),
            Bound::Unbounded => true,
        };
        above_lo && self.below_hi(key)
    }

    fn below_hi(&self, key: &[u8]) -> bool {
        match &self.hi {
            Bound::Included(hi) => key <= hi.as_slice(),
            Bound::Excluded(hi) => key < hi.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// True if the range tombstone `[start, end)` (`end` empty: unbounded) covers a key
    /// of the range: the smallest key above both lower bounds is inside both.
    fn overlaps(&self, start: &[u8], end: &[u8]) -> bool {
        let range_min: std::borrow::Cow<'_, [u8]> = match &self.lo {
            Bound::Included(lo) => lo.as_slice().into(),
            Bound::Excluded(lo) => rangedel::successor(lo).into(),
            Bound::Unbounded => (&[][..]).into(),
        };
        let first = if start >= &*range_min {
            start
        } else {
            &*range_min
        };
        rangedel::below_end(first, end) && self.below_hi(first)
    }
}

/// What a commit checks: the keys and ranges it depends on, at its snapshot's seqno.
#[derive(Debug, Clone)]
pub(crate) struct Validation {
    /// The seqno the transaction read at.
    pub(crate) read_at: SeqNo,
    pub(crate) keys: Vec<CheckedKey>,
    pub(crate) ranges: Vec<CheckedRange>,
}

fn conflict(name: &str, key: &[u8], read: bool) -> Error {
    Error::Conflict {
        keyspace: name.to_string(),
        key: key.to_vec(),
        read,
    }
}

/// Checks `v` against the batches queued ahead of it in its group (`earlier`) and the
/// store's current state (module invariant 1).
///
/// # Errors
/// `Conflict` naming the first key found written after the snapshot; `Corruption`, `Io`
/// from the files read.
pub(crate) fn check(reads: &ReadPath, earlier: &[&WriteBatch], v: &Validation) -> Result<()> {
    for batch in earlier {
        check_batch(batch, v)?;
    }
    let (sv, _) = reads.acquire(None);
    for k in &v.keys {
        if written_after(reads, &sv, k.keyspace, &k.key, v.read_at)? {
            return Err(conflict(&k.name, &k.key, k.read));
        }
    }
    for r in &v.ranges {
        if let Some(key) = range_written_after(reads, &sv, r, v.read_at)? {
            return Err(conflict(&r.name, &key, true));
        }
    }
    Ok(())
}

/// A conflict with a batch ordered after the snapshot (every batch queued ahead in the
/// group is).
fn check_batch(batch: &WriteBatch, v: &Validation) -> Result<()> {
    for op in batch.ops() {
        let ks = op.keyspace();
        if let Op::RangeDelete { start, end, .. } = op {
            for k in v.keys.iter().filter(|k| k.keyspace == ks) {
                if start <= k.key.as_slice() && rangedel::below_end(&k.key, end) {
                    return Err(conflict(&k.name, &k.key, k.read));
                }
            }
            for r in v.ranges.iter().filter(|r| r.keyspace == ks) {
                if r.overlaps(start, end) {
                    return Err(conflict(&r.name, start, true));
                }
            }
            continue;
        }
        let key = op.key();
        if let Some(k) = v.keys.iter().find(|k| k.keyspace == ks && k.key == key) {
            return Err(conflict(&k.name, key, k.read));
        }
        if let Some(r) = v
            .ranges
            .iter()
            .find(|r| r.keyspace == ks && r.contains(key))
        {
            return Err(conflict(&r.name, key, true));
        }
    }
    Ok(())
}

/// True if `key` has a version above `after`, or a range tombstone above `after` covers it.
fn written_after(
    reads: &ReadPath,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    after: SeqNo,
) -> Result<bool> {
    let dels = sv.range_tombstones(&reads.tables, keyspace)?;
    if dels.deletes(key, after, SeqNo::MAX) {
        return Ok(true);
    }
    let newest = sv
        .memtables()
        .find_map(|m| m.get_with(keyspace, key, SeqNo::MAX, |s, _, _| s));
    if let Some(s) = newest {
        return Ok(s > after);
    }
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return Ok(false);
    };
    for (pos, meta) in tables.tables_for_key(key) {
        if meta.max_seqno <= after {
            return Ok(false); // invariant 3
        }
        let reader = sv.pins.reader(&reads.tables, keyspace, pos, meta)?;
        if let Some(s) = reader.get_with(key, SeqNo::MAX, |s, _, _| s)? {
            return Ok(s > after);
        }
    }
    Ok(false)
}

/// The first key of `range` with a version above `after` (or its start, for a range
/// tombstone above `after` overlapping it), walking every version in the range.
fn range_written_after(
    reads: &ReadPath,
    sv: &SuperVersion,
    range: &CheckedRange,
    after: SeqNo,
) -> Result<Option<Vec<u8>>> {
    let dels = sv.range_tombstones(&reads.tables, range.keyspace)?;
    for t in dels.tombstones() {
        if t.seqno > after && range.overlaps(&t.start, &t.end) {
            return Ok(Some(t.start));
        }
    }
    let mut cursor = merged(reads, sv, range.keyspace, true)?;
    match &range.lo {
        Bound::Included(k) => cursor.seek(&seek_key(k, SeqNo::MAX))?,
        Bound::Excluded(k) => cursor.seek(&after_key(k))?,
        Bound::Unbounded => cursor.seek_to_first()?,
    }
    while cursor.valid() {
        let Some((user, trailer)) = split_encoded(cursor.key()) else {
            break;
        };
        if !range.below_hi(user) {
            break;
        }
        if trailer >> 8 > after.0 {
            return Ok(Some(user.to_vec()));
        }
        cursor.next()?;
    }
    Ok(None)
}
