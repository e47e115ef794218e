//! Followers: a read-only view (`db/read_only.rs`) that [`refresh`] moves to the writer's
//! latest state. docs/DESIGN.md (followers) gives the whole argument.
//!
//! Invariants:
//! 1. A refresh swaps the new view in under the state lock with one super version, then
//!    publishes the new visible seqno: a reader sees the old view or the new one, never a
//!    mix, and never a seqno its super version lacks writes for.
//! 2. With the manifest as the view read it, only the log can have grown: the refresh
//!    reads on from the end of the last record it replayed in each log file, into the
//!    view's newest memtable while it has room (those writes are above every seqno a
//!    reader of an old view can see). A tail that fails leaves the next one a fresh
//!    memtable.
//! 3. Old views stay valid: a view pins the files it opened, a snapshot or an iterator
//!    pins its view; after a refresh, the files no held view reaches are closed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::inner::{Inner, ReadPoint};
use super::read_only::{current_manifest_id, current_manifest_len, read_view, retrying};
use super::recover::{attach_unlisted_blobs, replay, Mode, Resume};
use super::versions;
use crate::error::{Error, Result};
use crate::files::{BlobId, FileType};
use crate::key::SeqNo;
use crate::memtable::Memtable;

/// What a refresh has to read, from a few metadata calls.
enum Plan {
    /// Nothing grew since the view was read.
    Unchanged,
    /// The manifest is as the view read it: only the log grew. Read on from these
    /// offsets (log file id -> offset; a new file from its start), in id order.
    Tail(BTreeMap<u64, u64>, Vec<u64>),
    /// The manifest changed (a flush, a compaction, a keyspace change): read a new view.
    Full,
}

/// Compares the directory with the files the view `point` was read from.
fn plan(inner: &Inner, point: &ReadPoint) -> Result<Plan> {
    let fs = inner.fs.as_ref();
    let dir = &inner.dir;
    if current_manifest_id(fs, dir)? != point.manifest_id
        || current_manifest_len(fs, dir)? != point.manifest_len
    {
        return Ok(Plan::Full);
    }
    let mut wals: Vec<u64> = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|n| FileType::Wal.parse(n))
        .collect();
    wals.sort_unstable();
    let newest = point.wal_ends.iter().map(|(id, _)| *id).max();
    let mut starts = BTreeMap::new();
    let mut ids = Vec::new();
    for id in wals {
        match point.wal_ends.iter().find(|(w, _)| *w == id) {
            Some(&(_, end)) => {
                let read = point
                    .wal_lens
                    .iter()
                    .find(|(w, _)| *w == id)
                    .map_or(end, |(_, len)| *len);
                if fs.file_len(&dir.join(FileType::Wal.name(id)))? != read {
                    starts.insert(id, end);
                    ids.push(id);
                }
            }
            // A log file the view did not read: new if above the ones it read (older ones
            // hold only flushed writes, and the writer deletes them soon).
            None if newest.is_none_or(|n| id > n) => ids.push(id),
            None => {}
        }
    }
    // A file read on is followed by every newer one; the order is the log's.
    Ok(if ids.is_empty() {
        Plan::Unchanged
    } else {
        Plan::Tail(starts, ids)
    })
}

/// Reads what the writer appended to the log since the view `point` (the manifest being
/// unchanged, the version is too), into the view's newest memtable while it has room,
/// and swaps the result in as `refresh` does. Costs what was appended, not the whole log.
fn refresh_tail(
    inner: &Inner,
    point: &ReadPoint,
    starts: BTreeMap<u64, u64>,
    ids: &[u64],
    continue_newest: bool,
) -> Result<()> {
    let fs = &inner.fs;
    let dir = &inner.dir;
    let (version, mut imm) = {
        let st = inner.state.lock();
        (Arc::clone(&st.version), st.imm.clone())
    };
    if !continue_newest {
        // A failed tail may have left part of itself in the newest memtable: the same
        // writes must not go into it twice.
        imm.push(Arc::new(Memtable::new(0, inner.options.memtable_size)));
    }
    let names = fs.list_dir(dir)?;
    let mut files = point.files.clone();
    for &id in ids {
        let name = FileType::Wal.name(id);
        if let std::collections::btree_map::Entry::Vacant(slot) = files.entry(name) {
            let handle = fs.open_read(&dir.join(slot.key()))?;
            slot.insert(Arc::from(handle));
        }
    }
    for name in &names {
        let Some(id) = BlobId::parse(name) else {
            continue;
        };
        if version.blob_files().contains_key(&id) {
            continue;
        }
        inner.reads.blobs.refresh_len(id)?;
        if let std::collections::btree_map::Entry::Vacant(slot) = files.entry(name.clone()) {
            let handle = fs.open_read(&dir.join(name))?;
            slot.insert(Arc::from(handle));
        }
    }
    let resume = Resume {
        starts,
        last: SeqNo(
            inner
                .reads
                .visible_seqno
                .load(std::sync::atomic::Ordering::Acquire),
        ),
        memtables: imm,
    };
    let replayed = replay(
        fs.as_ref(),
        dir,
        ids,
        &version,
        &inner.options,
        &inner.reads.blobs,
        Mode::Resume(resume),
    )?;
    attach_unlisted_blobs(fs.as_ref(), dir, &names, &version, &replayed, false)?;
    for id in replayed.blob_refs.keys() {
        inner.reads.blobs.hold(*id)?;
    }
    let mut next = point.clone();
    next.files = files;
    for &(id, len) in &replayed.wal_lens {
        next.wal_lens.retain(|(w, _)| *w != id);
        next.wal_lens.push((id, len));
    }
    for &(id, end) in &replayed.wal_ends {
        next.wal_ends.retain(|(w, _)| *w != id);
        next.wal_ends.push((id, end));
    }
    next.wal_lens.sort_unstable();
    next.wal_ends.sort_unstable();
    let last = replayed.last_seqno;
    let mut st = inner.state.lock();
    st.imm = replayed.memtables;
    st.read_point = Some(next);
    inner.install(&st);
    inner
        .reads
        .visible_seqno
        .store(last.0, std::sync::atomic::Ordering::Release);
    inner
        .durable_seqno
        .store(last.0, std::sync::atomic::Ordering::Release);
    Ok(())
}

/// Moves a follower's view to the store's current state (see `Db::refresh`): reads a new
/// view beside the current one, opens its tables, then swaps it in with one super
/// version, so readers see the old view or the new one, never a mix. Snapshots and
/// iterators of the old view keep it (they hold its super version; its files stay open
/// until the last of them is gone). Returns false if the store had not changed.
///
/// # Errors
/// `InvalidArgument` for a store that is not a follower; the errors of a read-only open,
/// after the tries a read-only open makes (`read_only` invariant 4). The view is left as it
/// was.
pub(crate) fn refresh(inner: &Inner) -> Result<bool> {
    if !inner.follower {
        return Err(Error::invalid(
            "refresh moves a follower (Db::open_follower); reopen a read-only store to see \
             later writes",
        ));
    }
    if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::invalid("the store is closed"));
    }
    let mut tail_failed = inner.refreshing.lock();
    let point = inner.state.lock().read_point.clone();
    if let Some(point) = &point {
        // A plan that fails (a log file deleted between the listing and its `stat`, the
        // manifest being replaced) means the writer moved on: read a whole new view,
        // which retries and reports what persists.
        match plan(inner, point).unwrap_or(Plan::Full) {
            Plan::Unchanged => return Ok(false),
            // Only the log grew: read what is new. If that fails (the writer moved on
            // meanwhile: a flush, a deleted file), read a whole new view instead.
            Plan::Tail(starts, ids) => {
                if refresh_tail(inner, point, starts, &ids, !*tail_failed).is_ok() {
                    *tail_failed = false;
                    release_unneeded(inner);
                    return Ok(true);
                }
                *tail_failed = true;
            }
            Plan::Full => {}
        }
    }
    // The tables are opened inside the retry, as a read-only open does: one the writer
    // deletes after the view was read (a compaction finishing) means the view is already
    // old, and the next try reads a newer one.
    let view = retrying(inner.fs.as_ref(), &inner.dir, || {
        let view = read_view(&inner.fs, &inner.dir, &inner.options, &inner.reads.blobs)?;
        for id in view.version.live_table_ids() {
            inner.reads.tables.get(id)?;
        }
        Ok(view)
    })?;
    {
        let mut st = inner.state.lock();
        st.version = view.version;
        st.imm = view.memtables;
        st.mem = Arc::new(Memtable::new(0, inner.options.memtable_size));
        st.read_point = Some(view.point);
        // The super version first, then the seqno: a reader never gets a seqno its super
        // version lacks writes for.
        inner.install(&st);
        inner
            .reads
            .visible_seqno
            .store(view.last.0, std::sync::atomic::Ordering::Release);
        inner
            .durable_seqno
            .store(view.last.0, std::sync::atomic::Ordering::Release);
    }
    *tail_failed = false;
    release_unneeded(inner);
    Ok(true)
}

/// Closes the tables and blob files no held super version can reach any more (the old
/// views nobody reads).
fn release_unneeded(inner: &Inner) {
    let supers = inner.reads.supers.held();
    let mut tables = BTreeSet::new();
    for sv in supers.iter() {
        tables.extend(sv.version.live_table_ids());
    }
    inner.reads.tables.retain(|id| tables.contains(&id));
    inner
        .reads
        .blobs
        .retain(|id| !versions::blob_deletable(id, supers.iter().map(AsRef::as_ref)));
}
