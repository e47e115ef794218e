//! [`ReadPath`]: the parts of an open store that every read goes through, apart from the
//! write machinery: the published super versions, the visible seqno, the open tables, the
//! row cache, the value log's reader, and the clock that expiry is judged by.
//!
//! Point reads, counts and scans (`read.rs`, `scan.rs`) take a `ReadPath`, not the whole
//! shared state: what they can reach is what a read needs, and a scan keeps only this
//! alive. Writers reach the same parts through `Inner::reads` to publish what they did.
//!
//! Invariants:
//! 1. [`ReadPath::acquire`] takes the current super version and the visible seqno
//!    together (`super_version.rs`, invariant 1): the seqno never covers a write the super
//!    version lacks.
//! 2. `visible_seqno` only grows, and only after every write at or below it is in the
//!    memtables of the current super version.
//! 3. The directory lock of a store opened for writing is released only when the last
//!    holder of its `ReadPath` lets go: after `close`, an iterator still open may open
//!    tables lazily, and no other process may open the store for writing (and compact or
//!    delete those tables) until it is done.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::super_version::{ReadAt, SuperVersion, SuperVersionGuard, SuperVersions};
use super::table_cache::TableCache;
use crate::clock::Clock;
use crate::error::Result;
use crate::fs::FileLock;
use crate::iter::operands::Resolver;
use crate::key::{KeyspaceId, SeqNo};

/// What a read needs; see the module documentation.
pub(crate) struct ReadPath {
    /// The current super version, and every one readers still hold.
    pub(crate) supers: SuperVersions,
    /// The largest seqno readers may see (invariant 2).
    pub(crate) visible_seqno: AtomicU64,
    /// The open tables.
    pub(crate) tables: Arc<TableCache>,
    /// Point lookups' answers from tables (`Options::row_cache_size`; `None`: off).
    pub(crate) rows: Option<super::row_cache::RowCache>,
    /// Reads separated values from blob files.
    pub(crate) blobs: Arc<crate::vlog::Reader>,
    /// The time expiry is judged by (the store's `Options::clock`).
    pub(crate) clock: Clock,
    /// The merge operator registered for each keyspace (`merge.rs`).
    pub(crate) merge: crate::merge::Registry,
    /// The directory lock (`None` for a read-only open, which takes none), held here so
    /// that it lasts as long as anything can read through this path (invariant 3).
    pub(crate) _lock: parking_lot::Mutex<Option<Box<dyn FileLock>>>,
}

impl ReadPath {
    /// The current super version and the seqno to read at (`at`'s, or the visible one);
    /// invariant 1.
    pub(crate) fn acquire(&self, at: Option<&ReadAt>) -> (Arc<SuperVersion>, SeqNo) {
        self.supers.acquire(&self.visible_seqno, at)
    }

    /// As [`ReadPath::acquire`], for a point read that lets go of the super version when
    /// it returns: no shared reference count is written.
    pub(crate) fn acquire_current(&self, at: Option<&ReadAt>) -> (SuperVersionGuard, SeqNo) {
        self.supers.acquire_current(&self.visible_seqno, at)
    }

    /// The merge operator of `keyspace`, for a read that met a merge operand.
    ///
    /// # Errors
    /// `InvalidArgument` naming the keyspace if none is registered (`merge.rs` invariant 2).
    pub(crate) fn merge_operator(
        &self,
        keyspace: KeyspaceId,
    ) -> Result<Arc<dyn crate::merge::MergeOperator>> {
        self.merge.get(keyspace).ok_or_else(|| {
            let version = self.supers.version();
            let name = version
                .keyspace(keyspace)
                .map_or_else(|| keyspace.to_string(), |k| k.name.clone());
            crate::merge::missing(&name)
        })
    }

    /// What a read of `keyspace` needs to merge operands it meets.
    pub(crate) fn resolver(&self, keyspace: KeyspaceId) -> Resolver {
        let operator = self.merge_operator(keyspace).map_err(|_| {
            self.supers
                .version()
                .keyspace(keyspace)
                .map_or_else(|| keyspace.to_string(), |k| k.name.clone())
        });
        Resolver::new(operator, Arc::clone(&self.blobs))
    }

    /// The current time in Unix milliseconds, for expiry.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}
