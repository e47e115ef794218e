//! Space accounting of the value log and its garbage collection (`vlog/gc.rs` is the
//! policy; this module runs it).
//!
//! Live bytes of a blob file are the value bytes the tables of the current version
//! reference (their `blob_refs` property); the rest of its value bytes are garbage
//! (overwritten, removed or expired values that compaction dropped). A GC run:
//! 1. computes every listed blob file's usage from one version;
//! 2. leaves alone the files a live memtable may reference (after recovery, a blob file
//!    can be listed while a memtable not yet flushed still points into it);
//! 3. removes files with no live byte from the version (one manifest edit) and deletes
//!    them once no reader can reach them (`versions::blob_deletable`): every reader holds a
//!    super version from the moment it finds a handle until it has read or opened the
//!    value (an iterator for its whole life, a point read and `get_reader` until the
//!    read), and that super version lists the file or holds the memtable pointing into
//!    it, so a file no table of the current version references is needed only by the
//!    live super versions that do;
//! 4. rewrites files over the garbage threshold (`Options::blob_gc_garbage_percent`) by
//!    compacting the tables that reference them in place, moving their live values into
//!    a new blob file (`compaction::relocate`); the old file then has no live byte and
//!    goes at the next run.
//!
//! Space bound: once GC has caught up, every listed file holds less than
//! `1 / (1 - t)` times its live bytes (`t` = the threshold), so the value log takes at most
//! `live / (1 - t)` bytes of values plus the files written since the last flush. "Live"
//! counts every version a table still holds (snapshots, shadowed versions not compacted
//! yet).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::inner::Inner;
use super::versions;
use crate::error::{Error, Result};
use crate::files::{BlobId, FileType};
use crate::version::{Edit, Version};
use crate::vlog::gc;

/// Space of one blob file of the value log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlobFileSpace {
    /// The file's id (its name is the id as 20 digits, then `.blob`).
    pub id: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Bytes of all values written to it.
    pub value_bytes: u64,
    /// Bytes of its values tables still reference.
    pub live_bytes: u64,
    /// `value_bytes - live_bytes`: reclaimable by garbage collection.
    pub garbage_bytes: u64,
}

/// Where a store's bytes are, from [`crate::Db::space_stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpaceStats {
    /// Every blob file the manifest lists, by id.
    pub blob_files: Vec<BlobFileSpace>,
    /// Sum of `file_bytes` of `blob_files`.
    pub blob_bytes: u64,
    /// Sum of `live_bytes`.
    pub live_blob_bytes: u64,
    /// Sum of `garbage_bytes`.
    pub garbage_blob_bytes: u64,
    /// Blob files written since the last flush (not yet in the manifest), and their bytes.
    pub unflushed_blob_files: usize,
    /// Bytes of those files.
    pub unflushed_blob_bytes: u64,
    /// Bytes of table files.
    pub table_bytes: u64,
    /// Bytes of WAL files.
    pub wal_bytes: u64,
}

/// What one GC run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GcOutcome {
    /// Blob files removed from the version (deleted once unreachable).
    pub(crate) removed: Vec<BlobId>,
    /// Blob files whose live values were moved to new files.
    pub(crate) rewritten: Vec<BlobId>,
}

/// Live bytes and handles per blob file of `version`, from its tables' `blob_refs`.
fn live_refs(inner: &Inner, version: &Version) -> Result<BTreeMap<u64, (u64, u64)>> {
    let mut live = BTreeMap::new();
    for (_, ks) in version.keyspaces() {
        for t in ks.levels.iter().flatten() {
            let reader = inner.reads.tables.get(t.id)?;
            for (id, r) in reader.blob_refs().iter() {
                let slot: &mut (u64, u64) = live.entry(id).or_default();
                slot.0 = slot.0.saturating_add(r.bytes);
                slot.1 = slot.1.saturating_add(r.handles);
            }
        }
    }
    Ok(live)
}

/// The usage of every blob file `version` lists, and the ids of those some table still
/// holds a handle into (a file of empty values has no live byte but is still needed).
fn usage(inner: &Inner, version: &Version) -> Result<(Vec<gc::FileUsage>, BTreeSet<BlobId>)> {
    let live = live_refs(inner, version)?;
    let referenced = live
        .iter()
        .filter(|(_, (_, handles))| *handles > 0)
        .map(|(id, _)| BlobId(*id))
        .collect();
    let bytes = live.into_iter().map(|(id, (b, _))| (id, b));
    Ok((gc::usage(version.blob_files(), bytes), referenced))
}

/// See [`crate::Db::space_stats`].
pub(crate) fn space_stats(inner: &Inner) -> Result<SpaceStats> {
    let (sv, _) = inner.acquire(None);
    let version = &sv.version;
    let mut stats = SpaceStats::default();
    for u in usage(inner, version)?.0 {
        let file_bytes = version.blob_files().get(&u.id).map_or(0, |m| m.file_size);
        stats.blob_bytes += file_bytes;
        stats.live_blob_bytes += u.live_bytes;
        stats.garbage_blob_bytes += u.garbage_bytes();
        stats.blob_files.push(BlobFileSpace {
            id: u.id.0,
            file_bytes,
            value_bytes: u.total_bytes,
            live_bytes: u.live_bytes,
            garbage_bytes: u.garbage_bytes(),
        });
    }
    stats.table_bytes = version
        .keyspaces()
        .flat_map(|(_, ks)| ks.levels.iter().flatten())
        .map(|t| t.file_size)
        .sum();
    for name in inner.fs.list_dir(&inner.dir)? {
        let path = inner.dir.join(&name);
        let len = || match inner.fs.file_len(&path) {
            Ok(len) => Ok(len),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        };
        if FileType::Wal.parse(&name).is_some() {
            stats.wal_bytes += len()?;
        } else if let Some(id) = BlobId::parse(&name) {
            if !version.blob_files().contains_key(&id) {
                stats.unflushed_blob_files += 1;
                stats.unflushed_blob_bytes += len()?;
            }
        }
    }
    Ok(stats)
}

/// True if a memtable of the current state may reference blob file `id`.
fn held_by_memtable(inner: &Inner, id: BlobId) -> bool {
    let st = inner.state.lock();
    std::iter::once(&st.mem).chain(&st.imm).any(|m| {
        m.blob_id_range()
            .is_some_and(|(lo, hi)| lo <= id.0 && id.0 <= hi)
    })
}

/// One GC run; see the module documentation.
pub(crate) fn collect_garbage(inner: &Inner) -> Result<GcOutcome> {
    inner.check_writable()?;
    let policy = gc::Policy {
        min_garbage_percent: inner.options.blob_gc_garbage_percent,
        ..gc::Policy::default()
    };
    let mut outcome = GcOutcome::default();
    // Step 1-3: retried if the version changes while the usage is computed (tables only
    // move references around, so a file with none keeps having none; the retry is for a
    // version that no longer lists it).
    for _ in 0..4 {
        // A pinned super version keeps the tables read below from being deleted.
        let (sv, _) = inner.acquire(None);
        let version = Arc::clone(&sv.version);
        let (files, referenced) = usage(inner, &version)?;
        drop(sv);
        let plan = gc::plan(&files, &policy);
        let delete: Vec<BlobId> = plan
            .delete
            .into_iter()
            .filter(|id| !referenced.contains(id) && !held_by_memtable(inner, *id))
            .collect();
        let mut st = inner.state.lock();
        if !Arc::ptr_eq(&st.version, &version) {
            continue;
        }
        if !delete.is_empty() {
            let edit = Edit {
                removed_blob_files: delete.clone(),
                ..Edit::default()
            };
            versions::apply(inner, &mut st, edit, "manifest write")?;
            st.obsolete_blobs.extend(delete.iter().copied());
        }
        drop(st);
        outcome.removed = delete;
        outcome.rewritten = plan
            .rewrite
            .into_iter()
            .filter(|id| !held_by_memtable(inner, *id))
            .collect();
        break;
    }
    if !outcome.removed.is_empty() {
        versions::delete_obsolete_files(inner);
    }
    Ok(outcome)
}
