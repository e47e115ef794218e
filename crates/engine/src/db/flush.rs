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
//! no later than the first table referencing it. Files the flush makes obsolete (log
//! files below the new low-water mark, blob files GC removed) are deleted by the version
//! set once no reader can reach them (`versions::delete_obsolete_files`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::inner::{Inner, State};
use super::versions;
use crate::cursor::Cursor;
use crate::error::Result;
use crate::iter::merge::MergingCursor;
use crate::options::{Compression, Options};
use crate::table::{self, TableOptions};
use crate::version::Edit;

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
        filter_layout: table::Layout::Local,
    }
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
    let started = std::time::Instant::now();
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
            let (id, mut writer) = inner.create_table(&topts)?;
            ids.push(id);
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
    let tables_len = added.len();
    let table_bytes: u64 = added.iter().map(|(_, _, m)| m.file_size).sum();
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
        // Only flushes remove sealed memtables, and they are serialized: the first
        // `mems.len()` are still the ones flushed. They go with the version change, so
        // the super version installed holds the new tables and not the memtables.
        let flushed_count = mems.len().min(st.imm.len());
        let removed: Vec<_> = st.imm.drain(..flushed_count).collect();
        if let Err(e) = versions::apply(inner, &mut st, edit, "flush") {
            // Not flushed after all: the memtables stay, oldest first.
            st.imm.splice(0..0, removed);
            return Err(e);
        }
        st.gc_due = true;
        if st.imm.is_empty() {
            st.flush_requested = false;
        }
        inner.durable_seqno.fetch_max(flushed.0, Ordering::AcqRel);
        Ok(())
    });
    inner
        .state
        .lock()
        .pending_outputs
        .retain(|id| !ids.contains(id));
    result?;
    tracing::info!(
        memtables = mems.len(),
        tables = tables_len,
        bytes = table_bytes,
        duration_ms = started.elapsed().as_millis() as u64,
        "flush"
    );
    inner.stats.flushes.fetch_add(1, Ordering::Relaxed);
    inner.stall_cv.notify_all();
    inner.bg_cv.notify_all();
    versions::delete_obsolete_files(inner);
    Ok(())
}
