//! [`TableCache`]: open table readers by table id, bounded, shared by every reader, flush
//! and compaction of one store.
//!
//! Invariants:
//! 1. At most `capacity` readers are kept (each holds a file descriptor); the least
//!    recently used is closed when a new one is needed. A reader in use (by a scan, a
//!    compaction) stays open until its user drops it, whatever the cache does.
//! 2. A table's earliest expiry, learned when it is first opened, is remembered until the
//!    table is evicted for deletion, so the cold-data check (`compaction::pick_expired`)
//!    needs no I/O for a table opened once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::Result;
use crate::files::FileType;
use crate::fs::FileSystem;
use crate::table::{self, BlockCache};
use crate::version::Version;

/// Open table readers of one store directory; see the module documentation.
pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    blocks: Arc<BlockCache>,
    open: Mutex<TableSlots>,
    capacity: usize,
    /// Table id -> earliest expiry of any entry (`None`: no entry expires).
    expiry: Mutex<HashMap<u64, Option<u64>>>,
}

struct TableSlots {
    readers: HashMap<u64, (Arc<table::Reader>, u64)>,
    clock: u64,
}

impl TableCache {
    /// A cache of at most `capacity` (at least 1) open tables of `dir`, whose blocks go
    /// through `blocks`.
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        blocks: Arc<BlockCache>,
        capacity: usize,
    ) -> TableCache {
        TableCache {
            fs,
            dir: dir.to_path_buf(),
            blocks,
            open: Mutex::new(TableSlots {
                readers: HashMap::new(),
                clock: 0,
            }),
            capacity: capacity.max(1),
            expiry: Mutex::new(HashMap::new()),
        }
    }

    /// The reader of table `id`, opening it on first use.
    ///
    /// # Errors
    /// Opening the file: `Io`, `Corruption`.
    pub(crate) fn get(&self, id: u64) -> Result<Arc<table::Reader>> {
        {
            let mut slots = self.open.lock();
            slots.clock += 1;
            let now = slots.clock;
            if let Some((r, used)) = slots.readers.get_mut(&id) {
                *used = now;
                return Ok(Arc::clone(r));
            }
        }
        let path = self.dir.join(FileType::Table.name(id));
        let reader = Arc::new(table::Reader::open(
            self.fs.as_ref(),
            &path,
            id,
            Arc::clone(&self.blocks),
        )?);
        self.expiry.lock().insert(id, reader.earliest_expiry());
        let mut slots = self.open.lock();
        while slots.readers.len() >= self.capacity {
            let oldest = slots
                .readers
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| *id);
            match oldest {
                Some(old) => {
                    slots.readers.remove(&old);
                }
                None => break,
            }
        }
        let now = slots.clock;
        let entry = slots.readers.entry(id).or_insert((reader, now));
        Ok(Arc::clone(&entry.0))
    }

    /// The earliest expiry of table `id` if it is known (the table was opened since the
    /// store was): `Some(None)` if no entry of it expires.
    pub(crate) fn cached_expiry(&self, id: u64) -> Option<Option<u64>> {
        self.expiry.lock().get(&id).copied()
    }

    /// Opens every table of `version` whose earliest expiry is not known yet, so
    /// [`TableCache::cached_expiry`] knows them all. The caller holds a super version of
    /// `version`, so no table it lists is deleted meanwhile.
    ///
    /// # Errors
    /// As [`TableCache::get`].
    pub(crate) fn learn_expiry(&self, version: &Version) -> Result<()> {
        for (_, ks) in version.keyspaces() {
            for t in ks.levels.iter().flatten() {
                if self.cached_expiry(t.id).is_none() {
                    self.get(t.id)?;
                }
            }
        }
        Ok(())
    }

    /// Closes every open table whose id `keep` refuses, and forgets its cached blocks (a
    /// follower's tables that no view it still holds lists). A reader in use stays open
    /// until its user drops it.
    pub(crate) fn retain(&self, keep: impl Fn(u64) -> bool) {
        let gone: Vec<u64> = {
            let mut slots = self.open.lock();
            let gone = slots
                .readers
                .keys()
                .copied()
                .filter(|id| !keep(*id))
                .collect::<Vec<_>>();
            for id in &gone {
                slots.readers.remove(id);
            }
            gone
        };
        let mut expiry = self.expiry.lock();
        for id in gone {
            expiry.remove(&id);
            self.blocks.retain(|(table, _)| table != id);
        }
    }

    /// The ids of the open tables.
    #[cfg(test)]
    pub(crate) fn open_ids(&self) -> std::collections::BTreeSet<u64> {
        self.open.lock().readers.keys().copied().collect()
    }

    /// Forgets table `id` and its cached blocks (its file is being deleted).
    pub(crate) fn evict(&self, id: u64) {
        self.expiry.lock().remove(&id);
        self.open.lock().readers.remove(&id);
        self.blocks.retain(|(table, _)| table != id);
    }
}
