//! The version set: how the store's version changes and which files it stops needing.
//! Every change to the version (a flush, a compaction, a keyspace created, configured or
//! dropped, blob files removed by GC) goes through [`apply`], and every file the store
//! deletes while open is deleted by [`delete_obsolete_files`].
//!
//! Order of a change (each step durable before the next):
//! 1. the edit is appended to the manifest and fsynced ([`log_and_apply`]); a manifest
//!    grown past [`MAX_MANIFEST_SIZE`] is replaced by a fresh one holding the whole
//!    version (`version/FORMAT.md`);
//! 2. the new version becomes the state's, and a super version of it is installed for
//!    readers, under the same state lock;
//! 3. files the change made obsolete are deleted once no super version a reader holds
//!    can reach them.
//!
//! Invariants:
//! 1. A failed manifest write is the store's background error: the manifest's tail is
//!    unknown, so no later edit may follow it (writes stop; reads go on).
//! 2. Table files are deleted only if no current or held super version lists them and no
//!    running flush or compaction is writing them (`State::pending_outputs`); blob files
//!    only once removed from the version and unreachable ([`blob_deletable`]); log files
//!    only below the version's `wal_min_id`; manifests only other than the live one.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::inner::{Inner, State};
use super::super_version::SuperVersion;
use crate::error::{Error, Result};
use crate::files::FileType;
use crate::files::{BlobId, TableId};
use crate::key::KeyspaceId;
use crate::version::{Edit, Manifest};

/// Manifest bytes after which a fresh manifest is started.
const MAX_MANIFEST_SIZE: u64 = 64 << 20;

/// Applies `edit` (steps 1 and 2 of the module documentation) for the job `during`
/// (`"flush"`, `"compaction"`, `"manifest write"`): logs it, makes the result the state's
/// version and installs a super version of it.
///
/// # Errors
/// The manifest write's error, which is also recorded as the store's background error
/// (invariant 1), failed `during` that job; an edit that does not apply.
pub(crate) fn apply(inner: &Inner, st: &mut State, edit: Edit, during: &'static str) -> Result<()> {
    if let Err(e) = log_and_apply(inner, st, edit) {
        st.record_failure(during, &e);
        return Err(e);
    }
    inner.install(st);
    Ok(())
}

/// A fresh keyspace id and the edit fields that record its creation as `name`.
///
/// # Errors
/// `InvalidArgument` once keyspace ids are exhausted.
pub(crate) fn allocate_keyspace(st: &State, name: &str, edit: &mut Edit) -> Result<KeyspaceId> {
    let id = st.version.next_keyspace_id();
    let next = id
        .checked_add(1)
        .ok_or_else(|| Error::invalid("keyspace ids are exhausted"))?;
    edit.created_keyspaces
        .push((KeyspaceId(id), name.to_string()));
    edit.next_keyspace_id = Some(next);
    Ok(KeyspaceId(id))
}

/// Appends `edit` to the manifest, applies it and makes the result the state's version.
/// Starts a fresh manifest when the current one is large.
///
/// # Errors
/// The manifest write's error (the manifest is poisoned then); an edit that does not
/// apply.
fn log_and_apply(inner: &Inner, st: &mut State, mut edit: Edit) -> Result<()> {
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

/// True if blob file `id` (removed from the current version) is reachable by none of the
/// live super versions `supers`: none lists it, and none has a memtable whose entries may
/// point into it (a reader holding a super version from before a flush reads the flushed
/// memtable, whose blob files its version does not list yet).
pub(crate) fn blob_deletable<'a>(
    id: BlobId,
    supers: impl IntoIterator<Item = &'a SuperVersion>,
) -> bool {
    supers.into_iter().all(|sv| {
        !sv.version.blob_files().contains_key(&id)
            && sv.memtables().all(|m| {
                m.blob_id_range()
                    .is_none_or(|(lo, hi)| id.0 < lo || id.0 > hi)
            })
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
        let mut live: BTreeSet<TableId> = st.version.live_table_ids();
        live.extend(st.pending_outputs.iter().copied());
        let supers = inner.reads.supers.held();
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
        inner.reads.blobs.forget(id);
        let _ = inner.fs.remove(&inner.reads.blobs.path(id));
    }
    for name in names {
        let obsolete = if let Some(id) = TableId::parse(&name) {
            let dead = !live.contains(&id);
            if dead {
                inner.reads.tables.evict(id);
            }
            dead
        } else if let Some(id) = FileType::Wal.parse(&name) {
            id < wal_min
        } else if let Some(id) = FileType::Manifest.parse(&name) {
            id != manifest_id
        } else {
            false
        };
        if obsolete {
            let _ = inner.fs.remove(&inner.dir.join(&name));
        }
    }
}
