//! The read path: a [`SuperVersion`] (the memtables and table set readers use together),
//! point reads, and [`Iter`], the double-ended scan.
//!
//! A read takes the current super version and the visible seqno under one read lock, so
//! the seqno never covers a write the super version lacks, and no version a reader needs
//! is compacted away (compaction keeps what any seqno at or above its start can see; see
//! `compaction::stream`). Holding a super version keeps its table files on disk.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{tombstones, Inner, State};
use crate::attrs::Head;
use crate::cursor::Cursor;
use crate::entry;
use crate::error::{Error, FileKind, Reason, Result};
use crate::iter::level::{LevelCursor, Opener};
use crate::iter::merge::MergingCursor;
use crate::iter::visible::{Bounds, Extract, Lazy, Visible};
use crate::key::{KeyspaceId, Kind, SeqNo};
use crate::memtable::Memtable;
use crate::table::{self, BlockCache, TableMeta};
use crate::version::Version;

/// The memtables and tables a reader consults, captured together.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<Memtable>,
    /// Newest first.
    pub(crate) imm: Vec<Arc<Memtable>>,
    pub(crate) version: Arc<Version>,
    /// The range tombstones of `imm` and `version`, per keyspace (`db/tombstones.rs`).
    pub(crate) range_dels: tombstones::Cache,
}

impl SuperVersion {
    /// A super version of these sources.
    pub(crate) fn new(
        mem: Arc<Memtable>,
        imm: Vec<Arc<Memtable>>,
        version: Arc<Version>,
    ) -> SuperVersion {
        let range_dels = tombstones::Cache::new(&imm, &version);
        SuperVersion {
            mem,
            imm,
            version,
            range_dels,
        }
    }
}

/// Publishes a new super version built from `st`.
pub(crate) fn install(inner: &Inner, st: &State) {
    let sv = Arc::new(SuperVersion::new(
        Arc::clone(&st.mem),
        st.imm.iter().rev().cloned().collect(),
        Arc::clone(&st.version),
    ));
    inner.live_supers.lock().push(Arc::clone(&sv));
    *inner.super_version.write() = sv;
}

/// The current super version and the seqno to read at (`snapshot`, or the visible one).
pub(crate) fn acquire(inner: &Inner, snapshot: Option<SeqNo>) -> (Arc<SuperVersion>, SeqNo) {
    let guard = inner.super_version.read();
    let seqno = snapshot.unwrap_or(SeqNo(inner.visible_seqno.load(Ordering::Acquire)));
    (Arc::clone(&guard), seqno)
}

/// Open table readers by table id, at most `capacity` of them (each holds a file
/// descriptor); the least recently used is closed when a new one is needed. A reader in
/// use by a scan stays open until the scan drops it.
///
/// It also remembers each table's earliest expiry (from its properties) once the table has
/// been opened, so the cold-data check (`compaction::pick_expired`) needs no I/O for it.
pub(crate) struct TableCache {
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
    pub(crate) fn new(capacity: usize) -> TableCache {
        TableCache {
            open: Mutex::new(TableSlots {
                readers: HashMap::new(),
                clock: 0,
            }),
            capacity: capacity.max(1),
            expiry: Mutex::new(HashMap::new()),
        }
    }

    /// The reader of table `id`, opening it on first use.
    pub(crate) fn get(&self, inner: &Inner, id: u64) -> Result<Arc<table::Reader>> {
        {
            let mut slots = self.open.lock();
            slots.clock += 1;
            let now = slots.clock;
            if let Some((r, used)) = slots.readers.get_mut(&id) {
                *used = now;
                return Ok(Arc::clone(r));
            }
        }
        let path = inner.dir.join(table::file_name(id));
        let reader = Arc::new(table::Reader::open(
            inner.fs.as_ref(),
            &path,
            id,
            Arc::clone(&inner.block_cache),
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

    /// Opens every table of the current version whose earliest expiry is not known yet,
    /// so [`TableCache::cached_expiry`] knows them all. Holds a super version meanwhile,
    /// so no table it lists is deleted under it.
    ///
    /// # Errors
    /// As [`TableCache::get`].
    pub(crate) fn learn_expiry(&self, inner: &Inner) -> Result<()> {
        let (sv, _) = acquire(inner, None);
        for (_, ks) in sv.version.keyspaces() {
            for files in &ks.levels {
                for t in files {
                    if self.cached_expiry(t.id).is_none() {
                        self.get(inner, t.id)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Forgets table `id` (its file is being deleted).
    pub(crate) fn evict(&self, id: u64, cache: &BlockCache) {
        self.expiry.lock().remove(&id);
        self.open.lock().readers.remove(&id);
        cache.forget_table(id);
    }
}

/// What a point read finds for `key` in `keyspace` at `snapshot` (or now): the item
/// built from its newest visible version, or `None` if that version is a tombstone or an
/// expired entry (or there is none). Values are interpreted only through `entry::live`.
pub(crate) fn lookup<T: Extract>(
    inner: &Inner,
    keyspace: KeyspaceId,
    key: &[u8],
    snapshot: Option<SeqNo>,
) -> Result<Option<T::Out>> {
    // The super version stays pinned until the value is read: it keeps listing the blob
    // file the handle names, so GC cannot delete that file between the find and the read
    // (a relocation may move the value meanwhile; the old copy stays readable).
    let (sv, seqno) = acquire(inner, snapshot);
    let found = find_at::<T>(inner, &sv, keyspace, key, seqno)?;
    let out = found.map(|item| item.resolve(&inner.blobs)).transpose();
    drop(sv);
    out
}

/// The item [`lookup`] would build, unresolved (a separated value stays a handle), in a
/// super version the caller holds, at `seqno`. The caller keeps `sv` until it has read
/// any handle it got.
pub(crate) fn find_at<T: Extract>(
    inner: &Inner,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
) -> Result<Option<T>> {
    let Some((found, item)) = newest_live::<T>(inner, sv, keyspace, key, seqno)? else {
        return Ok(None);
    };
    // Range tombstones are checked apart from the point lookup (a table's filter speaks
    // only for its own point entries). A live newest version they cover is hidden, and
    // so is every older one (a separated value among them is never read).
    let range_dels = tombstones::for_read(inner, sv, keyspace)?;
    Ok((!range_dels.deletes(key, found, seqno)).then_some(item))
}

/// The newest version of `key` with seqno `<= seqno` among the point entries of `sv`,
/// with its seqno, if it is live (not a tombstone, not expired).
fn newest_live<T: Extract>(
    inner: &Inner,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
) -> Result<Option<(SeqNo, T)>> {
    let now = inner.options.clock.now_ms();
    let decide = |s: SeqNo, kind: Kind, stored: &[u8]| -> Result<Option<(SeqNo, T)>, Reason> {
        Ok(entry::live(kind, stored, now)?.map(|view| (s, T::extract(s, &view))))
    };
    let found = std::iter::once(&sv.mem)
        .chain(sv.imm.iter())
        .find_map(|m| m.get_with(keyspace, key, seqno, decide));
    if let Some(found) = found {
        return found.map_err(|r| Error::corruption(FileKind::Wal, Path::new("<memtable>"), 0, r));
    }
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return Ok(None);
    };
    for meta in tables.tables_for_key(key) {
        let reader = inner.tables.get(inner, meta.id)?;
        if let Some(found) = reader.get_with(key, seqno, decide)? {
            return found.map_err(|r| Error::corruption(FileKind::Table, reader.path(), 0, r));
        }
    }
    Ok(None)
}

/// The newest value of `key` in `keyspace` visible at `snapshot` (or now).
pub(crate) fn get(
    inner: &Inner,
    keyspace: KeyspaceId,
    key: &[u8],
    snapshot: Option<SeqNo>,
) -> Result<Option<Vec<u8>>> {
    lookup::<Lazy>(inner, keyspace, key, snapshot)
}

/// Blocks a scan offers to the block cache per table, from the start of the scan: short
/// range reads (a seek and a few entries) are cached like point reads (on their second
/// miss once the cache is full, see `table::cache`); the rest of a long scan does not
/// evict the working set.
const SCAN_FILL_BLOCKS: u32 = 2;

/// A merged cursor over every source of `keyspace` in `sv`. With `keys_only`, the
/// memtable cursors do not copy values (the merged cursor's values are then meaningless
/// for entries from memtables); table cursors never copy them.
fn merged(
    owner: &Arc<Inner>,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    keys_only: bool,
) -> Result<MergingCursor> {
    let inner: &Inner = owner;
    let mut children: Vec<Box<dyn Cursor>> = Vec::new();
    for m in std::iter::once(&sv.mem).chain(&sv.imm) {
        let cursor = if keys_only {
            m.key_cursor(keyspace)
        } else {
            m.cursor(keyspace)
        };
        children.push(Box::new(cursor));
    }
    if let Some(tables) = sv.version.keyspace(keyspace) {
        for (level, files) in tables.levels.iter().enumerate() {
            if level == 0 {
                for meta in files {
                    let reader = inner.tables.get(inner, meta.id)?;
                    children.push(Box::new(reader.iter_fill_first(SCAN_FILL_BLOCKS)));
                }
            } else if !files.is_empty() {
                let owner = Arc::clone(owner);
                let open: Opener = Box::new(move |meta: &TableMeta| {
                    let reader = owner.tables.get(&owner, meta.id)?;
                    Ok(Box::new(reader.iter_fill_first(SCAN_FILL_BLOCKS)) as Box<dyn Cursor>)
                });
                children.push(Box::new(LevelCursor::new(files.clone(), open)));
            }
        }
    }
    Ok(MergingCursor::new(children))
}

/// The number of live keys of `keyspace` at `snapshot` (or now), from one consistent
/// super version, walking keys only (see [`Visible::count_forward`]).
///
/// # Errors
/// `InvalidArgument` if the keyspace was dropped; `Corruption`, `Io` from its tables.
pub(crate) fn count(
    inner: &Arc<Inner>,
    keyspace: KeyspaceId,
    snapshot: Option<SeqNo>,
) -> Result<u64> {
    let (sv, seqno) = acquire(inner, snapshot);
    if sv.version.keyspace(keyspace).is_none() {
        return Err(crate::Error::invalid("the keyspace has been dropped"));
    }
    let cursor = merged(inner, &sv, keyspace, true)?;
    let all = Bounds {
        lo: Bound::Unbounded,
        hi: Bound::Unbounded,
    };
    let range_dels = tombstones::for_read(inner, &sv, keyspace)?;
    Visible::<Head>::new(Box::new(cursor), seqno, inner.options.clock.now_ms(), all)
        .with_range_tombstones(range_dels)
        .count_forward()
}

/// Bytes of `keyspace` in the current super version: its table files, plus the bytes its
/// writes in the memtables take in the log (see `Memtable::logged_bytes`). 0 for a dropped
/// keyspace.
pub(crate) fn keyspace_disk_size(inner: &Inner, keyspace: KeyspaceId) -> u64 {
    let (sv, _) = acquire(inner, None);
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return 0;
    };
    let table_bytes: u64 = tables.levels.iter().flatten().map(|t| t.file_size).sum();
    let log_bytes: u64 = std::iter::once(&sv.mem)
        .chain(&sv.imm)
        .map(|m| m.logged_bytes(keyspace))
        .sum();
    table_bytes + log_bytes
}

/// One scan (both directions) of a keyspace at one snapshot and one expiry instant,
/// yielding `(key, T)`; [`Iter`] and [`HeadIter`] wrap it. A snapshot refused by the
/// caller (`Err`, e.g. one of another store) or a dropped keyspace is the scan's first
/// and only item.
struct Scan<T> {
    inner: Arc<Inner>,
    sv: Arc<SuperVersion>,
    keyspace: KeyspaceId,
    seqno: SeqNo,
    now_ms: u64,
    bounds: Bounds,
    front: Option<Visible<T>>,
    back: Option<Visible<T>>,
    /// The last key each side yielded (buffers reused; valid once that side started), so
    /// the two sides never cross.
    front_last: Vec<u8>,
    back_last: Vec<u8>,
    done: bool,
    /// Reported by the first call (the keyspace was dropped before the scan began).
    error: Option<crate::Error>,
}

impl<T: Extract> Scan<T> {
    fn new(
        inner: &Arc<Inner>,
        keyspace: KeyspaceId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Result<Option<SeqNo>>,
    ) -> Scan<T> {
        let (snapshot, refused) = match snapshot {
            Ok(at) => (at, None),
            Err(e) => (None, Some(e)),
        };
        let (sv, seqno) = acquire(inner, snapshot);
        let error = refused.or_else(|| {
            sv.version
                .keyspace(keyspace)
                .is_none()
                .then(|| crate::Error::invalid("the keyspace has been dropped"))
        });
        Scan {
            inner: Arc::clone(inner),
            sv,
            keyspace,
            seqno,
            now_ms: inner.options.clock.now_ms(),
            bounds: Bounds { lo, hi },
            front: None,
            back: None,
            front_last: Vec::new(),
            back_last: Vec::new(),
            done: false,
            error,
        }
    }

    fn side(&mut self, front: bool) -> Result<&mut Visible<T>> {
        let slot = if front {
            &mut self.front
        } else {
            &mut self.back
        };
        if slot.is_none() {
            let cursor = merged(&self.inner, &self.sv, self.keyspace, false)?;
            let range_dels = tombstones::for_read(&self.inner, &self.sv, self.keyspace)?;
            *slot = Some(
                Visible::new(
                    Box::new(cursor),
                    self.seqno,
                    self.now_ms,
                    self.bounds.clone(),
                )
                .with_range_tombstones(range_dels),
            );
        }
        match slot {
            Some(v) => Ok(v),
            None => Err(crate::Error::invalid("scan side not initialised")),
        }
    }

    /// The next item of one side, its value resolved (a separated value is read only
    /// here, for an item that is returned).
    fn step(&mut self, front: bool) -> Option<Result<(Vec<u8>, T::Out)>> {
        self.step_lazy(front)
            .map(|r| r.and_then(|(k, item)| Ok((k, item.resolve(&self.inner.blobs)?))))
    }

    fn step_lazy(&mut self, front: bool) -> Option<Result<(Vec<u8>, T)>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.error.take() {
            self.done = true;
            return Some(Err(e));
        }
        let next = self.side(front).and_then(|v| {
            if front {
                v.next_forward()
            } else {
                v.next_backward()
            }
        });
        match next {
            Ok(Some((k, v))) => {
                let crossed = if front {
                    self.back.is_some() && k >= self.back_last
                } else {
                    self.front.is_some() && k <= self.front_last
                };
                if crossed {
                    self.done = true;
                    return None;
                }
                let last = if front {
                    &mut self.front_last
                } else {
                    &mut self.back_last
                };
                last.clear();
                last.extend_from_slice(&k);
                Some(Ok((k, v)))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Defines a public, double-ended scan iterator over a [`Scan`] that extracts `$extract`:
/// its `Debug`, its constructor, and `next`/`next_back`, which turn each scanned item into
/// the public item with `$map`.
macro_rules! scan_iter {
    ($(#[$doc:meta])* $name:ident, $extract:ty, $item:ty, $map:expr) => {
        $(#[$doc])*
        pub struct $name {
            scan: Scan<$extract>,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("keyspace", &self.scan.keyspace)
                    .field("seqno", &self.scan.seqno)
                    .field("done", &self.scan.done)
                    .finish()
            }
        }

        impl $name {
            pub(crate) fn new(
                inner: &Arc<Inner>,
                keyspace: KeyspaceId,
                lo: Bound<Vec<u8>>,
                hi: Bound<Vec<u8>>,
                snapshot: Result<Option<SeqNo>>,
            ) -> $name {
                $name {
                    scan: Scan::new(inner, keyspace, lo, hi, snapshot),
                }
            }
        }

        impl Iterator for $name {
            type Item = Result<$item>;

            fn next(&mut self) -> Option<Self::Item> {
                self.scan.step(true).map(|r| r.map($map))
            }
        }

        impl DoubleEndedIterator for $name {
            fn next_back(&mut self) -> Option<Self::Item> {
                self.scan.step(false).map(|r| r.map($map))
            }
        }
    };
}

scan_iter!(
    /// A double-ended iterator over the pairs of a keyspace in a key range, at one snapshot.
    ///
    /// Yields `Result<(key, value)>`; after an `Err` it yields nothing more. The front and
    /// the back may be consumed alternately; they never cross or repeat a key. Entries that
    /// expired before the scan began are skipped (and hide older versions of their key).
    Iter,
    Lazy,
    (Vec<u8>, Vec<u8>),
    std::convert::identity
);

scan_iter!(
    /// A double-ended iterator over the [`Head`]s of a keyspace in a key range, at one
    /// snapshot: like [`Iter`], but it never copies values (only keys and metadata).
    HeadIter,
    Head,
    (Vec<u8>, Head),
    std::convert::identity
);

scan_iter!(
    /// A double-ended iterator over whole entries of a keyspace in a key range, at one
    /// snapshot: each item is the key, the value and its [`Head`] (tag, metadata, expiry,
    /// seqno). Used where an entry must be copied with its attributes (dump, export).
    EntryIter,
    (Lazy, Head),
    (Vec<u8>, Vec<u8>, Head),
    |(k, (v, h))| (k, v, h)
);
