//! [`Pins`]: the open readers of the tables one super version lists, each filled the
//! first time a point read of that super version probes the table, then reached without a
//! lock or a reference-count change.
//!
//! Users: point reads (`read.rs`, `conflict.rs`) and the level-0 cursors of a scan
//! (`read::merged`); a scan's deeper levels open tables through the cache as the scan
//! reaches them.
//!
//! Without pins, every table probe of a point read asks the [`TableCache`], which takes
//! its one mutex and clones an `Arc`: with several reading threads, that mutex is the one
//! cache line they all write. A super version's table set never changes, so its readers
//! can be held beside it: one slot per table (`OnceLock`), at the table's place in its
//! level ([`TablePos`]), filled from the cache on first use.
//!
//! Invariants:
//! 1. A slot holds the reader of exactly the table at its position in the super version's
//!    version (the slots are laid out from that version when the super version is built,
//!    and a version never changes).
//! 2. Open files stay bounded: a super version pins readers only if its version lists at
//!    most the cache's capacity (`Options::max_open_tables`) of tables; a larger one reads
//!    every table through the cache, as before. A pinned reader is a reader in use (table
//!    cache invariant 1): it stays open while the super version lives, and the cache may
//!    close its own reference meanwhile. So the open table files are at most the cache's
//!    capacity plus, per live super version that pins, its table count (itself at most the
//!    capacity); only the current super version is live outside reads, scans and
//!    checkpoints in progress.
//! 3. Pins never keep a deleted file's reader: files are deleted only once no live super
//!    version lists them (`super_version.rs` invariant 2), and the pins die with theirs.
//! 4. Index and filter memory stays bounded: under a memory budget, a slot is filled only
//!    while the index and filter bytes of the live readers are within the budget's share
//!    (`TableCache::may_pin`, checked with the new reader counted); past it, the reader
//!    is used unpinned and dropped after the lookup. Two threads filling slots at once may
//!    each pass the check, so the pinned bytes pass the share by at most one table per
//!    reading thread, until the next super version.
//!
//! Thread-safety: `Send + Sync`; two threads filling one slot at once both ask the cache,
//! and the slot keeps the first reader stored (the cache returns the same one unless it
//! was evicted meanwhile; either is a reader of the same file).

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use super::table_cache::TableCache;
use crate::error::Result;
use crate::key::KeyspaceId;
use crate::reach::{InMemory, Reach};
use crate::table::{Reader, TableMeta};
use crate::version::{TablePos, Version, NUM_LEVELS};

/// One slot per table of one level.
type LevelSlots = Box<[OnceLock<Arc<Reader>>]>;

/// The readers a super version pins; see the module documentation.
pub(crate) struct Pins {
    /// Per keyspace (ascending id): per level, one slot per table in level order.
    keyspaces: Vec<(KeyspaceId, [LevelSlots; NUM_LEVELS])>,
    /// Tables the version lists, over every keyspace (invariant 2).
    table_count: usize,
}

/// A table's reader as a lookup holds it: borrowed from the super version's pins, or a
/// clone from the table cache.
pub(crate) enum TableReader<'a> {
    /// Pinned by the super version.
    Pinned(&'a Arc<Reader>),
    /// From the table cache (the super version does not pin).
    Cached(Arc<Reader>),
}

impl TableReader<'_> {
    /// The reader as an `Arc`, for a cursor that outlives the borrow.
    pub(crate) fn into_arc(self) -> Arc<Reader> {
        match self {
            TableReader::Pinned(r) => Arc::clone(r),
            TableReader::Cached(r) => r,
        }
    }
}

impl Deref for TableReader<'_> {
    type Target = Reader;

    fn deref(&self) -> &Reader {
        match self {
            TableReader::Pinned(r) => r,
            TableReader::Cached(r) => r,
        }
    }
}

impl Pins {
    /// Empty slots for every table of `version`.
    pub(crate) fn new(version: &Version) -> Pins {
        let mut table_count = 0;
        let keyspaces = version
            .keyspaces()
            .map(|(id, ks)| {
                let slots = std::array::from_fn(|level| {
                    let n = ks.level(level).len();
                    table_count += n;
                    (0..n).map(|_| OnceLock::new()).collect::<LevelSlots>()
                });
                (id, slots)
            })
            .collect();
        Pins {
            keyspaces,
            table_count,
        }
    }

    /// The reader of `meta`, the table at `pos` in `keyspace` of this super version's
    /// version: pinned, filled from `tables` on first use, if this super version pins
    /// (invariant 2), else from `tables`.
    ///
    /// Requires: `meta` is the table at `pos` in `keyspace` (invariant 1).
    ///
    /// # Errors
    /// Opening the table: `Io`, `Corruption`.
    pub(crate) fn reader<'a>(
        &'a self,
        tables: &TableCache,
        keyspace: KeyspaceId,
        pos: TablePos,
        meta: &TableMeta,
    ) -> Result<TableReader<'a>> {
        let slot = if self.table_count <= tables.capacity() {
            self.slot(keyspace, pos)
        } else {
            None
        };
        let Some(slot) = slot else {
            return Ok(TableReader::Cached(tables.get(meta.id)?));
        };
        if let Some(r) = slot.get() {
            debug_assert_eq!(r.meta().id, meta.id);
            return Ok(TableReader::Pinned(r));
        }
        let opened = tables.get(meta.id)?;
        if !tables.may_pin() {
            return Ok(TableReader::Cached(opened));
        }
        // Another thread may have filled the slot meanwhile: keep the reader stored first.
        let pinned = slot.get_or_init(|| opened);
        Ok(TableReader::Pinned(pinned))
    }

    /// As [`Pins::reader`], looking only as far as `reach` allows: with [`Reach::Memory`],
    /// a table the cache does not hold open gives [`InMemory::NeedsIo`] (nothing is
    /// opened); one it holds open is pinned as [`Pins::reader`] would.
    ///
    /// Requires: as [`Pins::reader`].
    ///
    /// # Errors
    /// As [`Pins::reader`].
    pub(crate) fn reader_within<'a>(
        &'a self,
        tables: &TableCache,
        keyspace: KeyspaceId,
        pos: TablePos,
        meta: &TableMeta,
        reach: Reach,
    ) -> Result<InMemory<TableReader<'a>>> {
        if reach == Reach::Disk {
            return self
                .reader(tables, keyspace, pos, meta)
                .map(InMemory::Answer);
        }
        let slot = if self.table_count <= tables.capacity() {
            self.slot(keyspace, pos)
        } else {
            None
        };
        if let Some(r) = slot.and_then(|slot| slot.get()) {
            debug_assert_eq!(r.meta().id, meta.id);
            return Ok(InMemory::Answer(TableReader::Pinned(r)));
        }
        let Some(opened) = tables.get_open(meta.id) else {
            return Ok(InMemory::NeedsIo);
        };
        Ok(InMemory::Answer(match slot {
            Some(slot) => TableReader::Pinned(slot.get_or_init(|| opened)),
            None => TableReader::Cached(opened),
        }))
    }

    fn slot(&self, keyspace: KeyspaceId, pos: TablePos) -> Option<&OnceLock<Arc<Reader>>> {
        let (_, levels) = self.keyspaces.iter().find(|(id, _)| *id == keyspace)?;
        levels.get(pos.level)?.get(pos.index)
    }

    /// Every pinned reader, with the keyspace and position of its slot.
    #[cfg(test)]
    pub(crate) fn pinned(&self) -> Vec<(KeyspaceId, TablePos, Arc<Reader>)> {
        let mut out = Vec::new();
        for (ks, levels) in &self.keyspaces {
            for (level, slots) in levels.iter().enumerate() {
                for (index, slot) in slots.iter().enumerate() {
                    if let Some(r) = slot.get() {
                        out.push((*ks, TablePos { level, index }, Arc::clone(r)));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "pinned_tests.rs"]
mod tests;
