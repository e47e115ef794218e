//! The read path: a [`SuperVersion`] (the memtables and table set readers use together),
//! point reads, and [`Iter`], the double-ended scan.
//!
//! A read takes the current super version and the visible seqno under one read lock, so
//! the seqno never covers a write the super version lacks, and no version a reader needs
//! is compacted away (compaction keeps what any seqno at or above its start can see; see
//! `compaction::stream`). Holding a super version keeps its table files on disk.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{tombstones, Inner, State};
use crate::cursor::Cursor;
use crate::error::Result;
use crate::iter::level::{LevelCursor, Opener};
use crate::iter::merge::MergingCursor;
use crate::iter::visible::{Bounds, Pair, Visible};
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
pub(crate) struct TableCache {
    open: Mutex<TableSlots>,
    capacity: usize,
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

    /// Forgets table `id` (its file is being deleted).
    pub(crate) fn evict(&self, id: u64, cache: &BlockCache) {
        self.open.lock().readers.remove(&id);
        cache.forget_table(id);
    }
}

/// The newest value of `key` in `keyspace` visible at `snapshot` (or now).
pub(crate) fn get(
    inner: &Inner,
    keyspace: KeyspaceId,
    key: &[u8],
    snapshot: Option<SeqNo>,
) -> Result<Option<Vec<u8>>> {
    let (sv, seqno) = acquire(inner, snapshot);
    let newest = newest_version(inner, &sv, keyspace, key, seqno)?;
    let Some((found, Kind::Put, value)) = newest else {
        return Ok(None);
    };
    // Range tombstones are checked apart from the point lookup (a table's filter speaks
    // only for its own point entries).
    let range_dels = tombstones::for_read(inner, &sv, keyspace)?;
    Ok((!range_dels.deletes(key, found, seqno)).then_some(value))
}

/// The newest version of `key` with seqno `<= seqno` among the point entries of `sv`.
fn newest_version(
    inner: &Inner,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
) -> Result<Option<(SeqNo, Kind, Vec<u8>)>> {
    let found = std::iter::once(&sv.mem)
        .chain(sv.imm.iter())
        .find_map(|m| m.get(keyspace, key, seqno));
    if found.is_some() {
        return Ok(found);
    }
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return Ok(None);
    };
    for meta in tables.tables_for_key(key) {
        let reader = inner.tables.get(inner, meta.id)?;
        if let Some(found) = reader.get(key, seqno)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Blocks a scan adds to the block cache per table, from the start of the scan: short
/// range reads (a seek and a few entries) stay cached like point reads; the rest of a long
/// scan does not evict the working set.
const SCAN_FILL_BLOCKS: u32 = 2;

/// A merged cursor over every source of `keyspace` in `sv`.
fn merged(owner: &Arc<Inner>, sv: &SuperVersion, keyspace: KeyspaceId) -> Result<MergingCursor> {
    let inner: &Inner = owner;
    let mut children: Vec<Box<dyn Cursor>> = Vec::new();
    children.push(Box::new(sv.mem.cursor(keyspace)));
    for m in &sv.imm {
        children.push(Box::new(m.cursor(keyspace)));
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

/// A double-ended iterator over the pairs of a keyspace in a key range, at one snapshot.
///
/// Yields `Result<(key, value)>`; after an `Err` it yields nothing more. The front and the
/// back may be consumed alternately; they never cross or repeat a key.
pub struct Iter {
    inner: Arc<Inner>,
    sv: Arc<SuperVersion>,
    keyspace: KeyspaceId,
    seqno: SeqNo,
    bounds: Bounds,
    front: Option<Visible>,
    back: Option<Visible>,
    /// The last key each side yielded (buffers reused; valid once that side started), so
    /// the two sides never cross.
    front_last: Vec<u8>,
    back_last: Vec<u8>,
    done: bool,
    /// Reported by the first call (the keyspace was dropped before the scan began).
    error: Option<crate::Error>,
}

impl std::fmt::Debug for Iter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter")
            .field("keyspace", &self.keyspace)
            .field("seqno", &self.seqno)
            .field("done", &self.done)
            .finish()
    }
}

impl Iter {
    pub(crate) fn new(
        inner: &Arc<Inner>,
        keyspace: KeyspaceId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Option<SeqNo>,
    ) -> Iter {
        let (sv, seqno) = acquire(inner, snapshot);
        let error = sv
            .version
            .keyspace(keyspace)
            .is_none()
            .then(|| crate::Error::invalid("the keyspace has been dropped"));
        Iter {
            inner: Arc::clone(inner),
            sv,
            keyspace,
            seqno,
            bounds: Bounds { lo, hi },
            front: None,
            back: None,
            front_last: Vec::new(),
            back_last: Vec::new(),
            done: false,
            error,
        }
    }

    fn side(&mut self, front: bool) -> Result<&mut Visible> {
        let slot = if front {
            &mut self.front
        } else {
            &mut self.back
        };
        if slot.is_none() {
            let cursor = merged(&self.inner, &self.sv, self.keyspace)?;
            let range_dels = tombstones::for_read(&self.inner, &self.sv, self.keyspace)?;
            *slot = Some(
                Visible::new(Box::new(cursor), self.seqno, self.bounds.clone())
                    .with_range_tombstones(range_dels),
            );
        }
        match slot {
            Some(v) => Ok(v),
            None => Err(crate::Error::invalid("scan side not initialised")),
        }
    }

    fn step(&mut self, front: bool) -> Option<Result<Pair>> {
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

impl Iterator for Iter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}
