//! [`TableCache`]: open table readers by table id, bounded, shared by every reader, flush
//! and compaction of one store.
//!
//! Invariants:
//! 1. At most `capacity` readers are kept (each holds a file descriptor); the least
//!    recently used is closed when a new one is needed, in O(1) (`crate::cache::OpenFiles`,
//!    which the blob-file reader uses too). A reader in use (by a scan, a compaction, or
//!    pinned by a super version for point reads, `db/pinned.rs`) stays open until its
//!    user drops it, whatever the cache does; so the open table files are the cache's
//!    plus those held elsewhere (`db/pinned.rs` invariant 2 bounds the pinned ones).
//! 2. A table's earliest expiry, learned when it is first opened, is remembered until the
//!    table is evicted for deletion, so the cold-data check (`compaction::pick_expired`)
//!    needs no I/O for a table opened once.
//! 3. Every reader the cache opens counts its decoded index and filter bytes in one total
//!    for as long as it lives, wherever it is held ([`TableCache::index_filter_bytes`]).
//!    With a limit (the index and filter share of `Options::memory_budget`), the cache
//!    closes its least recently used readers after each open until the total is within
//!    the limit, the new reader last (its caller still gets it, uncached): what the cache
//!    keeps never takes the total past the limit. Readers held elsewhere (in use by a
//!    read, scan or compaction, or pinned) count but cannot be closed; super versions pin
//!    only while the total is within the limit (`db/pinned.rs` invariant 4).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::OpenFiles;
use crate::error::Result;
use crate::files::TableId;
use crate::fs::FileSystem;
use crate::table::{self, BlockCache};
use crate::version::Version;

/// Open table readers of one store directory; see the module documentation.
pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    blocks: Arc<BlockCache>,
    /// At least 1.
    capacity: usize,
    open: Mutex<OpenFiles<TableId, Arc<table::Reader>>>,
    /// Table id -> earliest expiry of any entry (`None`: no entry expires).
    expiry: Mutex<HashMap<TableId, Option<u64>>>,
    /// Index and filter bytes of the live readers the cache opened (invariant 3).
    held: Arc<AtomicUsize>,
    /// The most `held` may be for the cache to keep another reader (invariant 3).
    index_filter_limit: Option<usize>,
    /// How readers read their blocks (`Options::mmap_reads`).
    access: table::Access,
}

/// Readers taken out of the cache, dropped (closed unless in use) after its lock.
type Closed = Vec<(TableId, Arc<table::Reader>)>;

impl TableCache {
    /// A cache of at most `capacity` (at least 1) open tables of `dir`, whose blocks go
    /// through `blocks`, keeping readers only while their index and filter bytes stay
    /// within `index_filter_limit`, if given (invariant 3), and reading blocks as `access`
    /// says.
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        blocks: Arc<BlockCache>,
        capacity: usize,
        index_filter_limit: Option<usize>,
        access: table::Access,
    ) -> TableCache {
        TableCache {
            fs,
            dir: dir.to_path_buf(),
            blocks,
            capacity: capacity.max(1),
            open: Mutex::new(OpenFiles::new(capacity)),
            expiry: Mutex::new(HashMap::new()),
            held: Arc::new(AtomicUsize::new(0)),
            index_filter_limit,
            access,
        }
    }

    /// Decoded index and filter bytes of every live reader the cache opened: those it
    /// keeps and those held elsewhere (invariant 3).
    pub(crate) fn index_filter_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The bound on [`TableCache::index_filter_bytes`] the cache keeps to, if any.
    pub(crate) fn index_filter_limit(&self) -> Option<usize> {
        self.index_filter_limit
    }

    /// True if a super version may pin another reader: the index and filter bytes are
    /// within the limit, if there is one.
    pub(crate) fn may_pin(&self) -> bool {
        self.index_filter_limit
            .is_none_or(|limit| self.index_filter_bytes() <= limit)
    }

    /// Takes readers out of `open`, least recently used first, until the index and filter
    /// bytes are within the limit once they are dropped (invariant 3). A reader someone
    /// else holds frees nothing when taken out, so it does not count towards that.
    fn shed(&self, open: &mut OpenFiles<TableId, Arc<table::Reader>>) -> Closed {
        let mut closed = Vec::new();
        let Some(limit) = self.index_filter_limit else {
            return closed;
        };
        let mut held = self.index_filter_bytes();
        while held > limit {
            let Some((id, reader)) = open.pop_lru() else {
                break;
            };
            if Arc::strong_count(&reader) == 1 {
                held = held.saturating_sub(reader.index_filter_len());
            }
            closed.push((id, reader));
        }
        closed
    }

    /// The most readers the cache keeps open (at least 1).
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The reader of table `id`, opening it on first use.
    ///
    /// # Errors
    /// Opening the file: `Io`, `Corruption`.
    pub(crate) fn get(&self, id: TableId) -> Result<Arc<table::Reader>> {
        if let Some(r) = self.open.lock().get(&id) {
            return Ok(Arc::clone(r));
        }
        let path = self.dir.join(id.file_name());
        let mut reader = table::Reader::open_with(
            self.fs.as_ref(),
            &path,
            id,
            Arc::clone(&self.blocks),
            self.access,
        )?;
        reader.charge_to(&self.held);
        let reader = Arc::new(reader);
        self.expiry.lock().insert(id, reader.earliest_expiry());
        let mut open = self.open.lock();
        if let Some(r) = open.get(&id) {
            // Another thread opened it meanwhile: use the reader the cache holds.
            return Ok(Arc::clone(r));
        }
        let closed = open.insert(id, Arc::clone(&reader));
        let shed = self.shed(&mut open);
        drop(open);
        // The least recently used readers, closed outside the lock unless still in use.
        drop(closed);
        drop(shed);
        Ok(reader)
    }

    /// The reader of table `id` if it is open, without opening it (`crate::reach`).
    pub(crate) fn get_open(&self, id: TableId) -> Option<Arc<table::Reader>> {
        self.open.lock().get(&id).map(|r| Arc::clone(r))
    }

    /// The earliest expiry of table `id` if it is known (the table was opened since the
    /// store was): `Some(None)` if no entry of it expires.
    pub(crate) fn cached_expiry(&self, id: TableId) -> Option<Option<u64>> {
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
    pub(crate) fn retain(&self, keep: impl Fn(TableId) -> bool) {
        let gone = self.open.lock().retain(&keep);
        let mut expiry = self.expiry.lock();
        for (id, _) in gone {
            expiry.remove(&id);
            self.blocks.retain(|(table, _)| table != id.0);
        }
    }

    /// The ids of the open tables.
    #[cfg(test)]
    pub(crate) fn open_ids(&self) -> std::collections::BTreeSet<TableId> {
        self.open.lock().keys().collect()
    }

    /// Forgets table `id` and its cached blocks (its file is being deleted).
    pub(crate) fn evict(&self, id: TableId) {
        self.expiry.lock().remove(&id);
        let closed = self.open.lock().remove(&id);
        drop(closed);
        self.blocks.retain(|(table, _)| table != id.0);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::fs::MemFs;
    use crate::key::{InternalKey, Kind, SeqNo};
    use crate::table::{TableOptions, Writer};

    /// A store directory with tables 1..=`count`, table `id` holding key `k<id>`.
    fn tables(count: u64) -> (Arc<MemFs>, PathBuf) {
        let fs = Arc::new(MemFs::new());
        let dir = PathBuf::from("/db");
        fs.create_dir(&dir).unwrap();
        for id in 1..=count {
            let id = TableId(id);
            let path = dir.join(id.file_name());
            let mut w = Writer::create(fs.as_ref(), &path, id, &TableOptions::default()).unwrap();
            let key = InternalKey::new(format!("k{id}").as_bytes(), SeqNo(1), Kind::Put)
                .encode()
                .unwrap();
            w.add(&key, format!("v{id}").as_bytes()).unwrap();
            w.finish().unwrap();
        }
        (fs, dir)
    }

    fn value(reader: &table::Reader, id: u64) -> Vec<u8> {
        let (_, _, v) = reader
            .get(format!("k{id}").as_bytes(), SeqNo(1))
            .unwrap()
            .unwrap();
        v
    }

    fn ids<const N: usize>(ids: [u64; N]) -> std::collections::BTreeSet<TableId> {
        ids.into_iter().map(TableId).collect()
    }

    /// However tables are asked for, at most `capacity` stay open, the least recently used
    /// is the one closed, and a reader the cache closed keeps working for its holder.
    #[test]
    fn open_tables_stay_within_capacity_and_readers_in_use_keep_working() {
        for access in [table::Access::Pread, table::Access::Map] {
            capacity_and_readers_in_use(access);
        }
    }

    fn capacity_and_readers_in_use(access: table::Access) {
        let (fs, dir) = tables(10);
        let blocks = Arc::new(BlockCache::new(1 << 20));
        let cache = TableCache::new(fs, &dir, blocks, 3, None, access);
        let held = cache.get(TableId(1)).unwrap();
        for id in [2, 3, 1, 4] {
            cache.get(TableId(id)).unwrap();
            assert!(cache.open_ids().len() <= 3);
        }
        // 1 was used after 2 and 3: 2 went first.
        assert_eq!(cache.open_ids(), ids([1, 3, 4]));
        for round in 0..3 {
            for id in 1..=10 {
                assert_eq!(
                    value(&cache.get(TableId(id)).unwrap(), id),
                    format!("v{id}").into_bytes()
                );
                assert!(cache.open_ids().len() <= 3, "round {round}");
            }
        }
        assert_eq!(cache.open_ids(), ids([8, 9, 10]));
        // Table 1 was closed by the cache long ago; its holder still reads it.
        assert_eq!(value(&held, 1), b"v1");
        assert_eq!(Arc::strong_count(&held), 1);
        // Every table's expiry was learned once and is remembered after it was closed.
        assert!((1..=10).all(|id| cache.cached_expiry(TableId(id)) == Some(None)));
        cache.evict(TableId(9));
        cache.retain(|id| id != TableId(10));
        assert_eq!(cache.open_ids(), ids([8]));
        assert_eq!(cache.cached_expiry(TableId(9)), None);
    }

    /// Threads asking for tables at once never push the cache past its capacity.
    #[test]
    fn concurrent_gets_stay_within_capacity() {
        let (fs, dir) = tables(12);
        let cache = Arc::new(TableCache::new(
            fs,
            &dir,
            Arc::new(BlockCache::new(1 << 20)),
            4,
            None,
            table::Access::Map,
        ));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    for i in 0..300u64 {
                        let id = 1 + (i * (t + 1) + t) % 12;
                        let reader = cache.get(TableId(id)).unwrap();
                        assert!(cache.open_ids().len() <= 4);
                        assert_eq!(value(&reader, id), format!("v{id}").into_bytes());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(cache.open_ids().len() <= 4);
    }
}
