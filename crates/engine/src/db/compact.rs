//! Executing a compaction [`Choice`] against the store: merge the inputs, keep what
//! [`stream`](crate::compaction::stream) keeps, write output tables of about `table_size`
//! bytes, then commit one edit that swaps the inputs for the outputs. What to compact is
//! `compaction`'s to decide; this module only reads the inputs through the store's table
//! cache and writes through its version set.
//!
//! Crash safety is the flush's: outputs are fsynced and the directory synced before the
//! edit is appended to the manifest; a crash before that leaves orphan tables that the
//! next open deletes, and the inputs stay live.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::inner::Inner;
use super::{flush, versions};
use crate::compaction::stream::{carried_range_tombstones, KeyVersions};
use crate::compaction::Choice;
use crate::cursor::Cursor;
use crate::entry::{self, Body};
use crate::error::Result;
use crate::files::{BlobId, TableId};
use crate::iter::level::{LevelCursor, Opener, Tables};
use crate::iter::merge::MergingCursor;
use crate::key::{split_encoded, Kind, MAX_KEY_LEN};
use crate::rangedel::{successor, Fragments, RangeTombstone};
use crate::table::{self, TableMeta};
use crate::version::Edit;
use crate::vlog::{self, BlobFileMeta};

/// Runs `choice` to completion and installs the result.
///
/// # Errors
/// I/O errors writing outputs or the manifest; corruption found in an input.
pub(crate) fn run(inner: &Inner, choice: &Choice) -> Result<()> {
    let ks = choice.keyspace;
    let out_level = choice.output_level();
    let mut removed: Vec<(_, usize, TableId)> = Vec::new();
    for t in &choice.inputs {
        removed.push((ks, choice.level, t.id));
    }
    for t in &choice.overlaps {
        removed.push((ks, out_level, t.id));
    }
    let started = std::time::Instant::now();
    let input_bytes: u64 = choice
        .inputs
        .iter()
        .chain(&choice.overlaps)
        .map(|t| t.file_size)
        .sum();
    if choice.trivial_move {
        tracing::debug!(
            keyspace = ks.0,
            from_level = choice.level,
            to_level = out_level,
            tables = choice.inputs.len(),
            bytes = input_bytes,
            "compaction moved tables down a level"
        );
        let added = choice
            .inputs
            .iter()
            .map(|t| (ks, out_level, TableMeta::clone(t)))
            .collect();
        return commit(inner, removed, added, Vec::new());
    }

    let mut ids = Vec::new();
    let mut relocation = Relocation::new(inner, choice);
    let outcome = write_outputs(inner, choice, &mut ids, &mut relocation);
    let (outputs, output_bytes) = outcome.as_ref().map_or((0, 0), |added| {
        let bytes: u64 = added.iter().map(|(_, _, m)| m.file_size).sum();
        (added.len(), bytes)
    });
    let result = outcome
        .and_then(|added| Ok((added, relocation.finish()?)))
        .and_then(|(added, blobs)| commit(inner, removed, added, blobs));
    inner
        .state
        .lock()
        .pending_outputs
        .retain(|id| !ids.contains(id));
    result?;
    tracing::info!(
        keyspace = ks.0,
        from_level = choice.level,
        to_level = out_level,
        inputs = choice.inputs.len() + choice.overlaps.len(),
        input_bytes,
        outputs,
        output_bytes,
        relocated_blob_files = choice.relocate.len(),
        duration_ms = started.elapsed().as_millis() as u64,
        "compaction"
    );
    inner.stats.compactions.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Moves values out of the blob files a GC compaction relocates (`Choice::relocate`) into
/// new blob files of its own, which its edit adds with the tables referencing them.
struct Relocation<'a> {
    inner: &'a Inner,
    keyspace: crate::key::KeyspaceId,
    files: &'a [BlobId],
    writer: Option<vlog::Writer>,
}

impl<'a> Relocation<'a> {
    fn new(inner: &'a Inner, choice: &'a Choice) -> Relocation<'a> {
        Relocation {
            inner,
            keyspace: choice.keyspace,
            files: &choice.relocate,
            writer: None,
        }
    }

    /// The stored bytes to write for an entry: `value` itself, or for a separated value
    /// in a relocated file, `attrs || handle` of a copy in a new blob file.
    fn entry<'v>(&mut self, key: &[u8], value: &'v [u8]) -> Result<Cow<'v, [u8]>> {
        if self.files.is_empty() {
            return Ok(Cow::Borrowed(value));
        }
        let Some((user, trailer)) = split_encoded(key) else {
            return Ok(Cow::Borrowed(value));
        };
        if Kind::from_u8(trailer as u8) != Some(Kind::ValueHandle) {
            return Ok(Cow::Borrowed(value));
        }
        let view = entry::view(Kind::ValueHandle, value)
            .map_err(|r| {
                crate::Error::corruption(
                    crate::FileKind::Table,
                    std::path::Path::new("<compaction input>"),
                    0,
                    r,
                )
            })?
            .ok_or_else(|| crate::Error::invalid("a value handle without a value"))?;
        let Body::Handle(old) = view.body else {
            return Ok(Cow::Borrowed(value));
        };
        if !self.files.contains(&old.file_id) {
            return Ok(Cow::Borrowed(value));
        }
        let inner = self.inner;
        let writer = self.writer.get_or_insert_with(|| {
            let ids = Arc::clone(&inner.next_file_id);
            vlog::Writer::new(
                Arc::clone(&inner.fs),
                &inner.dir,
                vlog::WriterOptions {
                    max_file_len: inner.options.blob_file_size,
                },
                Box::new(move || ids.fetch_add(1, Ordering::SeqCst)),
            )
        });
        // Streamed: one chunk in memory whatever the value's size.
        let mut source = inner.reads.blobs.open_value(&old)?;
        let handle = writer.append_from(self.keyspace, user, old.value_len, &mut source)?;
        self.inner.stats.blob_bytes.fetch_add(
            user.len() as u64 + u64::from(old.value_len),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(Cow::Owned(entry::encode_separated(&view.attrs, &handle)))
    }

    /// Seals the new blob files (synced before the edit that names them).
    fn finish(mut self) -> Result<Vec<BlobFileMeta>> {
        match self.writer.as_mut() {
            Some(w) => {
                w.rotate()?;
                Ok(w.take_sealed())
            }
            None => Ok(Vec::new()),
        }
    }
}

fn write_outputs(
    inner: &Inner,
    choice: &Choice,
    ids: &mut Vec<TableId>,
    relocation: &mut Relocation<'_>,
) -> Result<Vec<(crate::key::KeyspaceId, usize, TableMeta)>> {
    let snapshots = inner.snapshots.seqnos();
    let mut children: Vec<Box<dyn Cursor>> = Vec::new();
    let open_table = |meta: &TableMeta| -> Result<Box<dyn Cursor>> {
        let reader = inner.reads.tables.get(meta.id)?;
        Ok(Box::new(reader.iter_no_fill()))
    };
    if choice.level == 0 {
        for t in &choice.inputs {
            children.push(open_table(t)?);
        }
    } else {
        children.push(level_cursor(inner, &choice.inputs));
    }
    if !choice.overlaps.is_empty() {
        children.push(level_cursor(inner, &choice.overlaps));
    }
    let mut input = MergingCursor::new(children);
    input.seek_to_first()?;

    let mut input_range_dels: Vec<RangeTombstone> = Vec::new();
    for t in choice.inputs.iter().chain(&choice.overlaps) {
        if t.has_range_tombstones() {
            let reader = inner.reads.tables.get(t.id)?;
            input_range_dels.extend_from_slice(reader.range_tombstones());
        }
    }
    let fragments = Fragments::build(&input_range_dels);
    let mut carried = Carried {
        tombstones: carried_range_tombstones(&fragments, &snapshots, choice.bottommost),
        lo: Vec::new(),
    };

    let topts = flush::table_options(&inner.options);
    let mut added = Vec::new();
    let mut writer: Option<table::Writer> = None;
    let now = inner.options.clock.now_ms();
    let mut versions = KeyVersions::new(&snapshots, choice.bottommost, now)
        .with_range_tombstones(&fragments)
        .with_merge_operator(inner.reads.merge.get(choice.keyspace));
    let mut current_user: Option<Vec<u8>> = None;
    loop {
        let user = if input.valid() {
            Some(split_encoded(input.key()).map_or(input.key(), |(u, _)| u))
        } else {
            None
        };
        if current_user.is_some() && user != current_user.as_deref() {
            // A user key is complete: write what survives, then maybe cut the table.
            for (key, value) in versions.finish() {
                if writer.is_none() {
                    let (id, w) = inner.create_table(&topts)?;
                    ids.push(id);
                    writer = Some(w);
                }
                if let Some(w) = writer.as_mut() {
                    let stored = relocation.entry(&key, &value)?;
                    w.add(&key, &stored)?;
                }
            }
            let cut = writer
                .as_ref()
                .is_some_and(|w| w.estimated_size() >= inner.options.table_size)
                && current_user
                    .as_ref()
                    .is_some_and(|u| carried.tombstones.is_empty() || u.len() < MAX_KEY_LEN);
            if cut {
                if let (Some(mut w), Some(last)) = (writer.take(), current_user.as_ref()) {
                    carried.add_until(&mut w, successor(last));
                    added.push(finish(inner, choice, w)?);
                }
            }
        }
        let Some(user) = user else { break };
        if current_user.as_deref() != Some(user) {
            current_user = Some(user.to_vec());
        }
        versions.push(input.key(), input.value())?;
        input.next()?;
    }
    inner
        .stats
        .merge_failures
        .fetch_add(versions.merge_failures(), Ordering::Relaxed);
    if writer.is_none() && carried.any_from_lo() {
        // Tombstones reach past the last point entry: a table of their own.
        let (id, w) = inner.create_table(&topts)?;
        ids.push(id);
        writer = Some(w);
    }
    if let Some(mut w) = writer.take() {
        carried.add_until(&mut w, Vec::new());
        added.push(finish(inner, choice, w)?);
    }
    if !added.is_empty() {
        inner.fs.sync_dir(&inner.dir)?;
    }
    Ok(added)
}

/// The range tombstones the outputs carry, handed out table by table: each output gets
/// the part of every tombstone inside its share of the key space, `[lo, hi)`, where `hi`
/// is the successor of its last user key (the next output starts there), so the
/// outputs' claimed ranges stay disjoint and together cover every tombstone whole.
struct Carried {
    tombstones: Vec<RangeTombstone>,
    /// Where the next output's share starts (empty: the beginning).
    lo: Vec<u8>,
}

impl Carried {
    /// Adds to `writer` the tombstones' parts in `[lo, hi)` (`hi` empty: to the end) and
    /// moves `lo` to `hi`.
    fn add_until(&mut self, writer: &mut table::Writer, hi: Vec<u8>) {
        for t in &self.tombstones {
            if let Some(part) = t.clip(&self.lo, &hi) {
                writer.add_range_tombstone(part);
            }
        }
        self.lo = hi;
    }

    /// True if some tombstone reaches at or past `lo`.
    fn any_from_lo(&self) -> bool {
        self.tombstones
            .iter()
            .any(|t| t.clip(&self.lo, &[]).is_some())
    }
}

fn finish(
    inner: &Inner,
    choice: &Choice,
    writer: table::Writer,
) -> Result<(crate::key::KeyspaceId, usize, TableMeta)> {
    let meta = writer.finish()?;
    inner
        .stats
        .compaction_bytes
        .fetch_add(meta.file_size, Ordering::Relaxed);
    Ok((choice.keyspace, choice.output_level(), meta))
}

fn level_cursor(inner: &Inner, inputs: &[Arc<TableMeta>]) -> Box<dyn Cursor> {
    let tables = Arc::clone(&inner.reads.tables);
    let open: Opener = Box::new(move |meta: &TableMeta| {
        let reader = tables.get(meta.id)?;
        Ok(reader.iter_no_fill())
    });
    Box::new(LevelCursor::new(Tables::Owned(inputs.to_vec()), open))
}

fn commit(
    inner: &Inner,
    removed: Vec<(crate::key::KeyspaceId, usize, TableId)>,
    added: Vec<(crate::key::KeyspaceId, usize, TableMeta)>,
    blobs: Vec<BlobFileMeta>,
) -> Result<()> {
    {
        let mut st = inner.state.lock();
        let edit = Edit {
            removed_tables: removed,
            added_tables: added,
            added_blob_files: blobs,
            ..Edit::default()
        };
        versions::apply(inner, &mut st, edit, "compaction")?;
        st.gc_due = true;
    }
    inner.stall_cv.notify_all();
    versions::delete_obsolete_files(inner);
    Ok(())
}
