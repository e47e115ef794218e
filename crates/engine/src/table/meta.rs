//! [`TableMeta`]: what the rest of the store knows about one sorted table without opening
//! it. The table writer produces it; the manifest (`version::Edit`) records it; the read
//! path and compaction use its key range and seqno range to skip tables.
//!
//! Invariants:
//! 1. `smallest` and `largest` are encoded internal keys (see `key.rs`) of the first and
//!    last entry of the table, so `compare_encoded(smallest, largest) != Greater`.
//! 2. `min_seqno <= max_seqno`, and every entry's seqno lies in that range.
//! 3. `file_size` is the exact length of the file once the writer finished it.

use crate::key::SeqNo;

/// Summary of one finished table file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableMeta {
    /// The table's file id (its file is `table::file_name(id)`).
    pub(crate) id: u64,
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
