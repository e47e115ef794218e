//! The [`SuperVersion`]: the memtables and the table set readers use together, and
//! [`SuperVersions`], which publishes the current one and remembers every one handed out.
//!
//! Invariants:
//! 1. A reader takes the current super version and the visible seqno under one read lock
//!    ([`SuperVersions::acquire`]); a writer publishes a new super version under the write
//!    lock only after its memtables hold every write up to the visible seqno, so the seqno
//!    never covers a write the super version lacks. A point read takes them without the
//!    lock ([`SuperVersions::acquire_current`]): the super version, then the seqno, then
//!    the super version again, keeping the pair only if both loads found the same one
//!    (a super version is never published twice), so it was current when the seqno was
//!    read.
//! 2. Every super version handed out is tracked until its last holder drops it. Obsolete
//!    file deletion (`db/versions.rs`) keeps every table and blob file a tracked super
//!    version can reach: holding one keeps its files on disk. A point read's guard on the
//!    current super version counts as a reference once another is published (`arc_swap`
//!    turns outstanding guards of the value it replaces into references before `store`
//!    returns), so it too keeps its files.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};
use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

use super::pinned::Pins;
use super::table_cache::TableCache;
use super::tombstones;
use crate::error::Result;
use crate::key::{KeyspaceId, SeqNo};
use crate::memtable::Memtable;
use crate::rangedel::{Fragments, RangeTombstone, ReadTombstones};
use crate::reach::{InMemory, Reach};
use crate::version::Version;

/// The memtables and tables a reader consults, captured together.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<Memtable>,
    /// Newest first.
    pub(crate) imm: Vec<Arc<Memtable>>,
    pub(crate) version: Arc<Version>,
    /// The range tombstones of `imm` and `version`, per keyspace, built on first use.
    range_dels: tombstones::Cache,
    /// The readers of `version`'s tables, opened on first use (`db/pinned.rs`).
    pub(crate) pins: Pins,
}

impl SuperVersion {
    /// A super version of these sources; `imm_oldest_first` as the state keeps them.
    pub(crate) fn new(
        mem: &Arc<Memtable>,
        imm_oldest_first: &[Arc<Memtable>],
        version: &Arc<Version>,
    ) -> SuperVersion {
        let imm: Vec<Arc<Memtable>> = imm_oldest_first.iter().rev().cloned().collect();
        let range_dels = tombstones::Cache::new(&imm, version);
        SuperVersion {
            mem: Arc::clone(mem),
            imm,
            version: Arc::clone(version),
            range_dels,
            pins: Pins::new(version),
        }
    }

    /// Every memtable, newest first.
    pub(crate) fn memtables(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.mem).chain(&self.imm)
    }

    /// Every range tombstone a reader of `keyspace` must apply (it filters by its own
    /// seqno): those of the sealed memtables and tables, fragmented once per super
    /// version, and the active memtable's, fragmented per call (they grow meanwhile).
    ///
    /// # Errors
    /// Opening a table that holds tombstones: `Corruption`, `Io`.
    pub(crate) fn range_tombstones(
        &self,
        tables: &TableCache,
        keyspace: KeyspaceId,
    ) -> Result<ReadTombstones> {
        self.range_tombstones_within(tables, keyspace, Reach::Disk)?
            .answered()
    }

    /// As [`SuperVersion::range_tombstones`], looking only as far as `reach` allows: with
    /// [`Reach::Memory`], a table holding tombstones that is not open gives
    /// [`InMemory::NeedsIo`] (nothing is opened) unless this super version has already
    /// gathered the keyspace's tombstones.
    ///
    /// # Errors
    /// As [`SuperVersion::range_tombstones`].
    pub(crate) fn range_tombstones_within(
        &self,
        tables: &TableCache,
        keyspace: KeyspaceId,
        reach: Reach,
    ) -> Result<InMemory<ReadTombstones>> {
        let in_memtable = self.mem.has_range_tombstones();
        let in_immutable = self.range_dels.any();
        if !in_memtable && !in_immutable {
            // The common case, on every point read that finds a version: nothing to build.
            return Ok(InMemory::Answer(ReadTombstones::default()));
        }
        let mut sets = Vec::new();
        if in_immutable {
            let built = self.range_dels.get_or_build(keyspace, || {
                let mut all: Vec<RangeTombstone> = Vec::new();
                for m in &self.imm {
                    all.extend(m.range_tombstones(keyspace));
                }
                if let Some(ks) = self.version.keyspace(keyspace) {
                    for meta in ks.levels.iter().flatten() {
                        if meta.has_range_tombstones() {
                            let reader = match reach {
                                Reach::Disk => tables.get(meta.id)?,
                                Reach::Memory => match tables.get_open(meta.id) {
                                    Some(reader) => reader,
                                    None => return Ok(InMemory::NeedsIo),
                                },
                            };
                            all.extend_from_slice(reader.range_tombstones());
                        }
                    }
                }
                Ok(InMemory::Answer(all))
            })?;
            let InMemory::Answer(built) = built else {
                return Ok(InMemory::NeedsIo);
            };
            sets.push(built);
        }
        if in_memtable {
            let mem = self.mem.range_tombstones(keyspace);
            sets.push(Arc::new(Fragments::build(&mem)));
        }
        Ok(InMemory::Answer(ReadTombstones::new(sets)))
    }
}

/// Where a read looks: at `seqno`, through `view` if given (a follower's snapshot, see
/// `db/snapshot.rs`), else through the current super version.
#[derive(Clone)]
pub(crate) struct ReadAt {
    pub(crate) seqno: SeqNo,
    pub(crate) view: Option<Arc<SuperVersion>>,
}

/// The current super version, and every super version still held by someone.
pub(crate) struct SuperVersions {
    current: RwLock<Arc<SuperVersion>>,
    /// The same super version as `current`, stored under its write lock, for point reads
    /// that load it without writing a shared cache line (invariant 1).
    fast: ArcSwap<SuperVersion>,
    live: Mutex<Vec<Arc<SuperVersion>>>,
}

/// A point read's hold on a super version: usually a guard that writes no shared
/// reference count; derefs to `Arc<SuperVersion>`.
pub(crate) type SuperVersionGuard = Guard<Arc<SuperVersion>>;

/// Attempts at a lock-free pair before [`SuperVersions::acquire_current`] takes the lock.
const FAST_ATTEMPTS: usize = 3;

impl SuperVersions {
    /// Starts with `first` as the current super version.
    pub(crate) fn new(first: SuperVersion) -> SuperVersions {
        let first = Arc::new(first);
        SuperVersions {
            current: RwLock::new(Arc::clone(&first)),
            fast: ArcSwap::new(Arc::clone(&first)),
            live: Mutex::new(vec![first]),
        }
    }

    /// Publishes `sv` as the current super version (the caller holds the state lock, so
    /// super versions are published in the order the state changed).
    pub(crate) fn install(&self, sv: SuperVersion) {
        let sv = self.track(sv);
        let mut current = self.current.write();
        self.fast.store(Arc::clone(&sv));
        *current = sv;
    }

    /// Tracks `sv` without publishing it (a checkpoint's pin of one moment).
    pub(crate) fn track(&self, sv: SuperVersion) -> Arc<SuperVersion> {
        let sv = Arc::new(sv);
        self.live.lock().push(Arc::clone(&sv));
        sv
    }

    /// The super version and the seqno to read at: `at`'s, or the current super version
    /// and the visible seqno read under the same lock (invariant 1).
    pub(crate) fn acquire(
        &self,
        visible: &AtomicU64,
        at: Option<&ReadAt>,
    ) -> (Arc<SuperVersion>, SeqNo) {
        if let Some(ReadAt {
            seqno,
            view: Some(view),
        }) = at
        {
            return (Arc::clone(view), *seqno);
        }
        let guard = self.current.read();
        let seqno = at.map_or_else(|| SeqNo(visible.load(Ordering::Acquire)), |a| a.seqno);
        (Arc::clone(&guard), seqno)
    }

    /// As [`SuperVersions::acquire`], for a short read: the super version as a guard that,
    /// while no other is published, writes no shared cache line (invariant 1).
    pub(crate) fn acquire_current(
        &self,
        visible: &AtomicU64,
        at: Option<&ReadAt>,
    ) -> (SuperVersionGuard, SeqNo) {
        match at {
            Some(ReadAt {
                seqno,
                view: Some(view),
            }) => return (Guard::from_inner(Arc::clone(view)), *seqno),
            // A snapshot's seqno stays readable in every later super version.
            Some(ReadAt { seqno, view: None }) => return (self.fast.load(), *seqno),
            None => {}
        }
        for _ in 0..FAST_ATTEMPTS {
            let sv = self.fast.load();
            let seqno = SeqNo(visible.load(Ordering::Acquire));
            if Arc::ptr_eq(&sv, &self.fast.load()) {
                return (sv, seqno);
            }
        }
        let (sv, seqno) = self.acquire(visible, None);
        (Guard::from_inner(sv), seqno)
    }

    /// The current super version, read-locked: while the guard lives no new one is
    /// published (a snapshot's seqno is read under it).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Arc<SuperVersion>> {
        self.current.read()
    }

    /// The version of the current super version.
    pub(crate) fn version(&self) -> Arc<Version> {
        Arc::clone(&self.current.read().version)
    }

    /// Every super version still held outside this registry, after forgetting the
    /// others.
    pub(crate) fn held(&self) -> MutexGuard<'_, Vec<Arc<SuperVersion>>> {
        let mut live = self.live.lock();
        live.retain(|sv| Arc::strong_count(sv) > 1);
        live
    }
}
