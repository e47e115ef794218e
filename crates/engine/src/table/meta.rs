//! [`TableMeta`]: what the rest of the store knows about one sorted table without opening
//! it. The table writer produces it; the manifest (`version::Edit`) records it; the read
//! path and compaction use its key range and seqno range to skip tables.
//!
//! Invariants:
//! 1. `smallest` and `largest` are encoded internal keys (see `key.rs`) of the first and
//!    last entry of the table, so `compare_encoded(smallest, largest) != Greater`.
//! 2. `min_seqno <= max_seqno`, and every entry's seqno lies in that range.
//! 3. `file_size` is the exact length of the file once the writer finished it.
//! 4. A table holding range tombstones claims their keys too: `smallest` is then the
//!    marker `(user key, SeqNo::MAX, Kind::RangeDelete)` at the smaller of the first
//!    entry's user key and the first tombstone start (so it sorts before every version of
//!    that key), `largest` the larger of the last entry and
//!    `(claim, 0, Kind::RangeDelete)` for the largest `RangeTombstone::claim_hi`, and the
//!    seqno range includes the tombstones'. Point entries never have kind RangeDelete, so
//!    a `smallest` of that kind says "this table has a range-tombstone block" (the read
//!    path uses it to open only those tables when gathering tombstones).

use std::cmp::Ordering;

use crate::files::TableId;
use crate::key::{compare_encoded, split_encoded, InternalKey, Kind, SeqNo};
use crate::rangedel::RangeTombstone;

/// Summary of one finished table file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableMeta {
    /// The table's file id (its file is `id.file_name()`).
    pub(crate) id: TableId,
    /// Bytes of the finished file.
    pub(crate) file_size: u64,
    /// Encoded internal key of the first entry.
    pub(crate) smallest: Vec<u8>,
    /// Encoded internal key of the last entry.
    pub(crate) largest: Vec<u8>,
    /// Smallest seqno of any entry.
    pub(crate) min_seqno: SeqNo,
    /// Largest seqno of any entry.
    pub(crate) max_seqno: SeqNo,
    /// Number of entries (all kinds).
    pub(crate) entries: u64,
    /// Number of tombstone entries (`Kind::Delete`).
    pub(crate) tombstones: u64,
    /// Sum of user-key and value lengths of all entries, before compression.
    pub(crate) raw_bytes: u64,
}

impl TableMeta {
    /// True if the table holds a range-tombstone block (invariant 4).
    pub(crate) fn has_range_tombstones(&self) -> bool {
        split_encoded(&self.smallest)
            .is_some_and(|(_, trailer)| trailer as u8 == Kind::RangeDelete.as_u8())
    }

    /// Widens the key and seqno ranges to cover `tombstones` (invariant 4); a no-op for
    /// none.
    pub(crate) fn extend_for_range_tombstones(&mut self, tombstones: &[RangeTombstone]) {
        if tombstones.is_empty() {
            return;
        }
        let user = |k: &[u8]| split_encoded(k).map_or(k, |(u, _)| u).to_vec();
        let mut lo = user(&self.smallest);
        for t in tombstones {
            if t.claim_lo() < lo.as_slice() {
                lo = t.claim_lo().to_vec();
            }
            let hi = InternalKey::new(t.claim_hi(), SeqNo::ZERO, Kind::RangeDelete);
            if let Ok(hi) = hi.encode() {
                if compare_encoded(&hi, &self.largest) == Ordering::Greater {
                    self.largest = hi;
                }
            }
            self.min_seqno = self.min_seqno.min(t.seqno);
            self.max_seqno = self.max_seqno.max(t.seqno);
        }
        if let Ok(marker) = InternalKey::new(lo, SeqNo::MAX, Kind::RangeDelete).encode() {
            self.smallest = marker;
        }
    }
}
