//! Flush: the oldest sealed memtables (up to `memtables_per_flush`, merged) become one
//! level-0 table per keyspace, recorded in the manifest in one edit together with the new
//! WAL low-water mark; and the deletion of files no version and no reader needs any more.
//!
//! Memtables are small so inserts stay fast, and flushed several at a time so level-0
//! tables stay large: compaction's work per byte depends on the tables' size, not the
//! memtables'. A flush waits for `memtables_per_flush` sealed memtables unless one is
//! asked for (`State::flush_requested`: `Db::flush`, a log-size limit, recovery).
//!
//! Order of a flush (each step durable before the next):
//! 1. write each table and fsync it (`table::Writer::finish`), then fsync the directory;
//! 2. append the edit to the manifest (fsynced) — from here the tables are part of the
//!    store and WAL files below `wal_min_id` are obsolete;
//! 3. install the new version for readers, drop the memtable, delete obsolete files.
//!
//! A crash before step 2 leaves orphan tables, deleted at the next open; after it, the
//! WAL files it made obsolete are simply skipped by recovery if they still exist.
//!
//! The flush's edit also adds the blob files the memtable's separated values point into
//! (attached to the memtable when they were finished), so a blob file is in the manifest
//! no later than the first table referencing it. Blob files removed from the version by
//! value-log GC are deleted here once no reader can reach them (see
//! [`blob_deletable`]).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Inner, State, MAX_MANIFEST_SIZE};
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::iter::merge::MergingCursor;
use crate::options::{Compression, Options};
use crate::table::{self, TableOptions};
use crate::version::{self, Edit, Manifest};
use crate::wal;

/// The table settings of `options`.
pub(crate) fn table_options(options: &Options) -> TableOptions {
    let (compression, zstd_level) = match options.compression {
        Compression::None => (table::Compression::None, 3),
        Compression::Lz4 => (table::Compression::Lz4, 3),
        Compression::Snappy => (table::Compression::Snappy, 3),
        Compression::Zstd(level) => (table::Compression::Zstd, level),
    };
    TableOptions {
        block_size: options.block_size,
        restart_interval: options.restart_interval,
        compression,
        zstd_level,
        bloom_bits_per_key: options.bloom_bits_per_key,
    }
}

/// Appends `edit` to the manifest, applies it and makes the result current (readers see it
/// after the caller installs a super version). Starts a fresh manifest when the current
/// one is large.
///
/// # Errors
/// The manifest write's error (the manifest is poisoned then, and so are later writes);
/// an edit that does not apply.
pub(crate) fn log_and_apply(inner: &Inner, st: &mut State, mut edit: Edit) -> Result<()> {
    edit.next_file_id = Some(inner.next_file_id.load(Ordering::SeqCst));
    let next = st.version.apply(&edit, &inner.dir, 0)?;
    let manifest = st.manifest.as_mut().ok_or(Error::ReadOnly)?;
    manifest.append(&edit)?;
    let full = manifest.len() > MAX_MANIFEST_SIZE;
    st.version = Arc::new(next);
    if full {
        let id = inner.new_file_id();
        let bump = Edit {
            next_file_id: Some(inner.next_file_id.load(Ordering::SeqCst)),
            ..Edit::default()
        };
        st.version = Arc::new(st.version.apply(&bump, &inner.dir, 0)?);
        st.manifest = Some(Manifest::create(
            Arc::clone(&inner.fs),
            &inner.dir,
            id,
            &st.version,
        )?);
    }
    Ok(())
}

/// True if the sealed memtables should be flushed now: `memtables_per_flush` of them
/// are waiting (see [`Options::memtables_to_flush`]), or a flush of all was asked for.
pub(crate) fn due(st: &State, options: &Options) -> bool {
    !st.imm.is_empty() && (st.flush_requested || st.imm.len() >= options.memtables_to_flush())
}

/// Flushes the oldest sealed memtables, at most `memtables_per_flush` of them, merged into
/// one level-0 table per keyspace; does nothing if none is sealed. Runs on a background
/// thread (or during recovery); flushes are serialized by the caller (`State::flushing`).
pub(crate) fn flush_oldest(inner: &Inner) -> Result<()> {
    let (mems, next_wal_id, version) = {
        let st = inner.state.lock();
        let count = st.imm.len().min(inner.options.memtables_per_flush.max(1));
        let Some(mems) = st.imm.get(..count).filter(|sealed| !sealed.is_empty()) else {
            return Ok(());
        };
        let mems = mems.to_vec();
        let next_wal_id = st.imm.get(count).map_or(st.mem.wal_id(), |m| m.wal_id());
        (mems, next_wal_id, Arc::clone(&st.version))
    };
    let topts = table_options(&inner.options);
    let mut added = Vec::new();
    let mut ids = Vec::new();
    let outcome = (|| -> Result<()> {
        let mut keyspaces: Vec<_> = mems.iter().flat_map(|m| m.keyspaces()).collect();
        keyspaces.sort();
        keyspaces.dedup();
        for ks in keyspaces {
            if version.keyspace(ks).is_none() {
                continue; // dropped: its writes go with it
            }
            let id = inner.new_file_id();
            inner.state.lock().pending_outputs.push(id);
            ids.push(id);
            let path = inner.dir.join(table::file_name(id));
            let mut writer = table::Writer::create(inner.fs.as_ref(), &path, id, &topts)?;
            for t in mems.iter().flat_map(|m| m.range_tombstones(ks)) {
                writer.add_range_tombstone(t);
            }
            // Seqnos are unique across memtables, so the merge yields every entry once,
            // in internal-key order; versions stay for snapshots, compaction drops them.
            let children = mems
                .iter()
                .map(|m| Box::new(m.cursor(ks)) as Box<dyn Cursor>)
                .collect();
            let mut cursor = MergingCursor::new(children);
            cursor.seek_to_first()?;
            while cursor.valid() {
                writer.add(cursor.key(), cursor.value())?;
                cursor.next()?;
            }
            let meta = writer.finish()?;
            inner
                .stats
                .flush_bytes
                .fetch_add(meta.file_size, Ordering::Relaxed);
            added.push((ks, 0usize, meta));
        }
        if !added.is_empty() {
            inner.fs.sync_dir(&inner.dir)?;
        }
        Ok(())
    })();
    let result = outcome.and_then(|()| {
        let mut st = inner.state.lock();
        let newest = mems.iter().map(|m| m.max_seqno()).max().unwrap_or_default();
        let flushed = newest.max(st.version.flushed_seqno());
        let live: Vec<_> = added
            .drain(..)
            .filter(|(ks, _, _)| st.version.keyspace(*ks).is_some())
            .collect();
        // The blob files these memtables' separated values point into, recorded with the
        // tables that reference them (no table ever names a blob file the manifest lacks).
        let blobs = mems
            .iter()
            .flat_map(|m| m.blob_files())
            .filter(|b| !st.version.blob_files().contains_key(&b.id))
            .collect();
        let edit = Edit {
            added_tables: live,
            added_blob_files: blobs,
            wal_min_id: Some(next_wal_id),
            flushed_seqno: Some(flushed),
            ..Edit::default()
        };
        log_and_apply(inner, &mut st, edit)?;
        st.gc_due = true;
        // Only flushes remove sealed memtables, and they are serialized: the first
        // `mems.len()` are still the ones flushed.
        let flushed_count = mems.len().min(st.imm.len());
        st.imm.drain(..flushed_count);
        if st.imm.is_empty() {
            st.flush_requested = false;
        }
        super::read::install(inner, &st);
        inner.durable_seqno.fetch_max(flushed.0, Ordering::AcqRel);
        Ok(())
    });
    inner
        .state
        .lock()
        .pending_outputs
        .retain(|id| !ids.contains(id));
    result?;
    inner.stats.flushes.fetch_add(1, Ordering::Relaxed);
    inner.stall_cv.notify_all();
    inner.bg_cv.notify_all();
    delete_obsolete_files(inner);
    Ok(())
}

/// True if blob file `id` (removed from the current version) is reachable by none of the
/// live super versions `supers`: none lists it, and none has a memtable whose entries may
/// point into it (a reader holding a super version from before a flush reads the flushed
/// memtable, whose blob files its version does not list yet).
pub(crate) fn blob_deletable<'a>(
    id: u64,
    supers: impl IntoIterator<Item = &'a super::SuperVersion>,
) -> bool {
    supers.into_iter().all(|sv| {
        !sv.version.blob_files().contains_key(&id)
            && std::iter::once(&sv.mem)
                .chain(&sv.imm)
                .all(|m| m.blob_id_range().is_none_or(|(lo, hi)| id < lo || id > hi))
    })
}

/// Deletes table files no version or reader uses, WAL files below the low-water mark and
/// manifests other than the live one. Failures are ignored: a leftover file is deleted
/// by a later call or the next open.
pub(crate) fn delete_obsolete_files(inner: &Inner) {
    if inner.read_only {
        return;
    }
    // List first: a file created after the listing is not considered, and every file in
    // the listing that is still being written is in `pending_outputs` below (an id leaves
    // it only once a version lists the table).
    let Ok(names) = inner.fs.list_dir(&inner.dir) else {
        return;
    };
    let (live, wal_min, manifest_id, dead_blobs) = {
        let mut st = inner.state.lock();
        let Some(manifest_id) = st.manifest.as_ref().map(Manifest::id) else {
            return;
        };
        let mut live: BTreeSet<u64> = st.version.live_table_ids();
        live.extend(st.pending_outputs.iter().copied());
        let mut supers = inner.live_supers.lock();
        supers.retain(|sv| Arc::strong_count(sv) > 1);
        for sv in supers.iter() {
            live.extend(sv.version.live_table_ids());
        }
        let mut dead_blobs = Vec::new();
        st.obsolete_blobs.retain(|&id| {
            let dead = blob_deletable(id, supers.iter().map(|sv| sv.as_ref()));
            if dead {
                dead_blobs.push(id);
            }
            !dead
        });
        (live, st.version.wal_min_id(), manifest_id, dead_blobs)
    };
    for id in dead_blobs {
        inner.blobs.forget(id);
        let _ = inner.fs.remove(&inner.blobs.path(id));
    }
    for name in names {
        let obsolete = if let Some(id) = table::parse_file_name(&name) {
            let dead = !live.contains(&id);
            if dead {
                inner.tables.evict(id, &inner.block_cache);
            }
            dead
        } else if let Some(id) = wal::parse_file_name(&name) {
            id < wal_min
        } else if let Some(id) = version::parse_manifest_file_name(&name) {
            id != manifest_id
        } else {
            false
        };
        if obsolete {
            let _ = inner.fs.remove(&inner.dir.join(&name));
        }
    }
}
