//! Point reads, counts and the merged cursor scans are built on, over one super version
//! (`db/super_version.rs`) at one seqno.
//!
//! A read takes the current super version and the visible seqno together
//! (`ReadPath::acquire`), so the seqno never covers a write the super version lacks, and no
//! version a reader needs is compacted away (compaction keeps what any seqno at or above
//! its start can see; see `compaction::stream`). Holding a super version keeps its table
//! and blob files on disk until the read is done.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use super::read_path::ReadPath;
use super::row_cache::RowCache;
use super::super_version::{ReadAt, SuperVersion};
use crate::attrs::Head;
use crate::cursor::Cursor;
use crate::entry::{self, Body, EntryView};
use crate::error::{Error, FileKind, Reason, Result};
use crate::iter::level::{LevelCursor, Opener, Tables};
use crate::iter::merge::MergingCursor;
use crate::iter::operands::{merge_forward, Merged};
use crate::iter::visible::{Bounds, Extract, Visible};
use crate::key::{parse_encoded, seek_key, KeyspaceId, Kind, SeqNo};
use crate::reach::{InMemory, Reach};
use crate::table::TableMeta;
use crate::version::{KeyspaceTables, TablePos};

/// What a point read finds for `key` in `keyspace` at `snapshot` (or now): the item
/// built from its newest visible version, or `None` if that version is a tombstone or an
/// expired entry (or there is none). Values are interpreted only through `entry::live`.
pub(crate) fn lookup<T: Extract>(
    reads: &ReadPath,
    keyspace: KeyspaceId,
    key: &[u8],
    at: Option<&ReadAt>,
) -> Result<Option<T::Out>> {
    // The super version stays pinned until the value is read: it keeps listing the blob
    // file the handle names, so GC cannot delete that file between the find and the read
    // (a relocation may move the value meanwhile; the old copy stays readable).
    let (sv, seqno) = reads.acquire_current(at);
    let found = find_at::<T>(reads, &sv, keyspace, key, seqno)?;
    let out = found.map(|item| item.resolve(&reads.blobs)).transpose();
    drop(sv);
    out
}

/// The item [`lookup`] would build, unresolved (a separated value stays a handle), in a
/// super version the caller holds, at `seqno`. The caller keeps `sv` until it has read
/// any handle it got.
pub(crate) fn find_at<T: Extract>(
    reads: &ReadPath,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
) -> Result<Option<T>> {
    find_with(reads, sv, keyspace, key, seqno, Reach::Disk, T::extract)?.answered()
}

/// The [`Head`] of `key` in `keyspace` at `at` (or now), looking only as far as `reach`
/// allows (`crate::reach`): with [`Reach::Memory`], `NeedsIo` where the read would open a
/// table, read a block or merge operands.
///
/// # Errors
/// `Corruption` from the memtables or the tables read; with [`Reach::Disk`], as
/// [`lookup`].
pub(crate) fn head_within(
    reads: &ReadPath,
    keyspace: KeyspaceId,
    key: &[u8],
    at: Option<&ReadAt>,
    reach: Reach,
) -> Result<InMemory<Option<Head>>> {
    let (sv, seqno) = reads.acquire_current(at);
    // A head never reads a separated value: its `resolve` does no I/O.
    let found = find_with(reads, &sv, keyspace, key, seqno, reach, Head::extract)?;
    let out = match found {
        InMemory::Answer(head) => head
            .map(|h| h.resolve(&reads.blobs))
            .transpose()
            .map(InMemory::Answer),
        InMemory::NeedsIo => Ok(InMemory::NeedsIo),
    };
    drop(sv);
    out
}

/// As [`find_at`], with the item built by `extract` from the newest live version (called
/// at most once per source searched: a version a range tombstone hides is extracted, then
/// dropped).
fn find_with<T>(
    reads: &ReadPath,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
    reach: Reach,
    mut extract: impl FnMut(SeqNo, &EntryView<'_>) -> T,
) -> Result<InMemory<Option<T>>> {
    let tables = sv.version.keyspace(keyspace);
    let mut operand = false;
    let newest = newest_live(
        reads,
        sv,
        tables,
        keyspace,
        key,
        seqno,
        reach,
        &mut operand,
        &mut extract,
    )?;
    let InMemory::Answer(newest) = newest else {
        return Ok(InMemory::NeedsIo);
    };
    let Some((found, item)) = newest else {
        if operand {
            // Merging walks every source of the key and may read separated values.
            if reach == Reach::Memory {
                return Ok(InMemory::NeedsIo);
            }
            let merged = merge_at(reads, sv, keyspace, key, seqno)?;
            return Ok(InMemory::Answer(
                merged.map(|m| extract(m.seqno, &m.view())),
            ));
        }
        return Ok(InMemory::Answer(None));
    };
    // Range tombstones are checked apart from the point lookup (a table's filter speaks
    // only for its own point entries). A live newest version they cover is hidden, and
    // so is every older one (a separated value among them is never read).
    let InMemory::Answer(range_dels) =
        sv.range_tombstones_within(&reads.tables, keyspace, reach)?
    else {
        return Ok(InMemory::NeedsIo);
    };
    Ok(InMemory::Answer(
        (!range_dels.deletes(key, found, seqno)).then_some(item),
    ))
}

/// The newest version of `key` with seqno `<= seqno` among the point entries of `sv`,
/// with its seqno, if it is live (not a tombstone, not expired). `tables` are the
/// keyspace's tables in `sv` (`None` for a dropped keyspace). If that version is a merge
/// operand, the answer is `None` with `operand` set: the caller merges ([`merge_at`]).
#[expect(
    clippy::too_many_arguments,
    reason = "the parts of one read, passed once"
)]
fn newest_live<T>(
    reads: &ReadPath,
    sv: &SuperVersion,
    tables: Option<&KeyspaceTables>,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
    reach: Reach,
    operand: &mut bool,
    mut extract: impl FnMut(SeqNo, &EntryView<'_>) -> T,
) -> Result<InMemory<Option<(SeqNo, T)>>> {
    let mut decide = |s: SeqNo, kind: Kind, stored: &[u8]| -> Result<Option<(SeqNo, T)>, Reason> {
        if kind == Kind::Merge {
            *operand = true;
            return Ok(None);
        }
        let live = entry::live_with_clock(kind, stored, || reads.now_ms())?;
        Ok(live.map(|view| (s, extract(s, &view))))
    };
    let found = sv
        .memtables()
        .find_map(|m| m.get_with(keyspace, key, seqno, &mut decide));
    if let Some(found) = found {
        return found
            .map(InMemory::Answer)
            .map_err(|r| Error::corruption(FileKind::Wal, Path::new("<memtable>"), 0, r));
    }
    let Some(tables) = tables else {
        return Ok(InMemory::Answer(None));
    };
    for (pos, meta) in tables.tables_for_key(key) {
        let InMemory::Answer(reader) =
            sv.pins
                .reader_within(&reads.tables, keyspace, pos, meta, reach)?
        else {
            return Ok(InMemory::NeedsIo);
        };
        let found = match &reads.rows {
            None => reader.get_within(key, seqno, reach, &mut decide)?,
            Some(rows) => get_through_rows(rows, &reader, meta, key, seqno, reach, &mut decide)?,
        };
        match found {
            InMemory::NeedsIo => return Ok(InMemory::NeedsIo),
            InMemory::Answer(Some(found)) => {
                return found
                    .map(InMemory::Answer)
                    .map_err(|r| Error::corruption(FileKind::Table, reader.path(), 0, r))
            }
            InMemory::Answer(None) => {}
        }
    }
    Ok(InMemory::Answer(None))
}

/// As `reader.get_within(key, seqno, reach, f)`, through the row cache
/// (`db/row_cache.rs`): a cached row the read may see answers it (invariant 2 there);
/// otherwise the table does, and offers what it found when that is its newest version of
/// `key`. The table's filter is asked first, so keys it rules out never probe the cache.
fn get_through_rows<R>(
    rows: &RowCache,
    reader: &crate::table::Reader,
    meta: &TableMeta,
    key: &[u8],
    seqno: SeqNo,
    reach: Reach,
    f: impl FnOnce(SeqNo, Kind, &[u8]) -> R,
) -> Result<InMemory<Option<R>>> {
    let hash = crate::table::filter::key_hash(key);
    if !reader.may_contain_hash(hash) {
        return Ok(InMemory::Answer(None));
    }
    let at = rows.key(meta.id, hash);
    let cached = rows.get(at, key, seqno);
    if let Some((row, kind)) = cached.and_then(|row| row.kind().map(|kind| (row, kind))) {
        return Ok(InMemory::Answer(Some(f(row.seqno(), kind, row.stored()))));
    }
    // At or above the table's largest seqno, the version found is its newest.
    let newest = seqno >= meta.max_seqno;
    reader.get_within(key, seqno, reach, |found, kind, stored| {
        if newest {
            rows.offer(at, key, found, kind, stored);
        }
        f(found, kind, stored)
    })
}

/// The merged value of `key` at `seqno` in `sv`, whose newest version there is a merge
/// operand (`iter/operands.rs`), or `None` if a range tombstone hides that operand.
///
/// # Errors
/// As `operands::merge_forward`; the tables' errors.
fn merge_at(
    reads: &ReadPath,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    key: &[u8],
    seqno: SeqNo,
) -> Result<Option<Merged>> {
    let range_dels = sv.range_tombstones(&reads.tables, keyspace)?;
    let mut cursor = merged(reads, sv, keyspace, false)?;
    cursor.seek(&seek_key(key, seqno))?;
    // The newest version at or below `seqno`; a range tombstone hiding it hides the key.
    let newest = if cursor.valid() {
        parse_encoded(cursor.key()).filter(|(user, _, _)| *user == key)
    } else {
        None
    };
    match newest {
        Some((_, s, tag)) if tag == Kind::Merge.as_u8() => {
            if range_dels.deletes(key, s, seqno) {
                return Ok(None);
            }
        }
        // The point lookup found an operand; the merged cursor over the same super
        // version must agree.
        _ => {
            return Err(Error::corruption(
                FileKind::Table,
                Path::new("<merged read>"),
                0,
                Reason::BadEntry("a merge read found no operand where the lookup did"),
            ))
        }
    }
    let resolver = reads.resolver(keyspace);
    merge_forward(
        cursor.as_mut(),
        key,
        seqno,
        reads.now_ms(),
        &range_dels,
        &resolver,
    )
    .map(Some)
}

/// A value [`get_with`] hands out: where it lies, or (a separated value) the buffer its
/// read returned, which a caller wanting a `Vec` takes without a copy.
pub(crate) enum Value<'a> {
    /// In the memtable or a cached block.
    Borrowed(&'a [u8]),
    /// Read from a blob file.
    Owned(Vec<u8>),
}

impl Value<'_> {
    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Value::Borrowed(v) => v,
            Value::Owned(v) => v,
        }
    }

    /// The bytes as a `Vec`, copied only if borrowed.
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            Value::Borrowed(v) => v.to_vec(),
            Value::Owned(v) => v,
        }
    }
}

/// Calls `f` with the newest value of `key` in `keyspace` visible at `snapshot` (or now),
/// read in place: from the memtable or the cached table block, or for a separated value
/// from the buffer its blob read returns. `None` (and `f` not called) if absent.
/// `InvalidArgument` naming the keyspace `name` if it has been dropped.
///
/// `f` runs only for the value a read returns: the range tombstones are checked before
/// it is called, and it is called at most once.
pub(crate) fn get_with<R>(
    reads: &ReadPath,
    keyspace: KeyspaceId,
    name: &str,
    key: &[u8],
    at: Option<&ReadAt>,
    f: impl FnOnce(Value<'_>) -> R,
) -> Result<Option<R>> {
    get_within(reads, keyspace, name, key, at, Reach::Disk, f)?.answered()
}

/// As [`get_with`], looking only as far as `reach` allows (`crate::reach`): with
/// [`Reach::Memory`], `NeedsIo` (and `f` not called) where the read would open a table,
/// read a block, read a separated value or merge operands.
pub(crate) fn get_within<R>(
    reads: &ReadPath,
    keyspace: KeyspaceId,
    name: &str,
    key: &[u8],
    at: Option<&ReadAt>,
    reach: Reach,
    f: impl FnOnce(Value<'_>) -> R,
) -> Result<InMemory<Option<R>>> {
    // Held until a separated value is read, as in `lookup`.
    let (sv, seqno) = reads.acquire_current(at);
    let out = get_in(reads, &sv, seqno, keyspace, name, key, reach, f);
    drop(sv);
    out
}

/// Keys of a batched read whose memtable lookups overlap their cache misses at once:
/// enough to keep the CPU's line-fill buffers busy, few enough that the lines fetched
/// for the first key are still cached when its lookup runs.
const BATCH_PREFETCH: usize = 16;

/// As [`get_with`] for each of `keys`, in order, all read at one point (one super version
/// and one seqno: a write that lands meanwhile is seen for every key or for none). The
/// memtable lookups of up to [`BATCH_PREFETCH`] keys at a time overlap their cache misses:
/// the filter words and point-index slots of all of them are fetched first, then their
/// nodes, then each key is looked up as [`get_with`] does.
pub(crate) fn get_many_with<K: AsRef<[u8]>, R>(
    reads: &ReadPath,
    keyspace: KeyspaceId,
    name: &str,
    keys: &[K],
    at: Option<&ReadAt>,
    mut f: impl FnMut(Value<'_>) -> R,
) -> Result<Vec<Option<R>>> {
    let (sv, seqno) = reads.acquire_current(at);
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(BATCH_PREFETCH) {
        let in_memtables = prefetch_chunk(&sv, chunk.iter().map(|k| (keyspace, k.as_ref())));
        if let Some(rows) = &reads.rows {
            prefetch_rows(reads, rows, &sv, keyspace, chunk, &in_memtables);
        }
        for key in chunk {
            let found = get_in(
                reads,
                &sv,
                seqno,
                keyspace,
                name,
                key.as_ref(),
                Reach::Disk,
                &mut f,
            );
            out.push(found?.answered()?);
        }
    }
    drop(sv);
    Ok(out)
}

/// Starts fetching what point reads of `keys` (at most [`BATCH_PREFETCH`]) in the
/// memtables of `sv` touch first, overlapping their cache misses: the filter words and
/// point-index slots of all of them, then the nodes the slots name. Returns, per key,
/// whether a memtable's filter may hold it (false: the read goes to the tables).
fn prefetch_chunk<'k>(
    sv: &SuperVersion,
    keys: impl Iterator<Item = (KeyspaceId, &'k [u8])>,
) -> [bool; BATCH_PREFETCH] {
    let mut hashed = [(KeyspaceId(0), 0u64); BATCH_PREFETCH];
    let mut n = 0;
    for (slot, (keyspace, key)) in hashed.iter_mut().zip(keys) {
        *slot = (keyspace, crate::memtable::key_hash(key));
        n += 1;
    }
    let hashed = hashed.get(..n).unwrap_or(&[]);
    for m in sv.memtables() {
        for &(keyspace, hash) in hashed {
            m.prefetch_get(keyspace, hash);
        }
    }
    let mut in_memtables = [false; BATCH_PREFETCH];
    for m in sv.memtables() {
        for (&(keyspace, hash), maybe) in hashed.iter().zip(&mut in_memtables) {
            *maybe |= m.prefetch_node(keyspace, hash);
        }
    }
    in_memtables
}

/// Tables per key whose filters [`prefetch_rows`] fetches.
const PREFETCH_TABLES: usize = 4;

/// Starts fetching, for point reads of `keys` (at most [`BATCH_PREFETCH`]) that reach the
/// tables of `sv`, the row cache's set of each key in the first table that may hold it:
/// first the filter lines of the first [`PREFETCH_TABLES`] tables each key may be in,
/// then, with those lines at hand, the set of the first table whose filter passes, then
/// the row that set holds for the key, if any. Keys a memtable may hold
/// (`in_memtables`, from [`prefetch_chunk`]) are passed over: their reads most likely
/// end there. Only tables `sv` already has open are looked at.
fn prefetch_rows<K: AsRef<[u8]>>(
    reads: &ReadPath,
    rows: &RowCache,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    keys: &[K],
    in_memtables: &[bool; BATCH_PREFETCH],
) {
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return;
    };
    // `None`: passed over.
    let mut hashes = [None; BATCH_PREFETCH];
    for ((hash, key), &in_memtable) in hashes.iter_mut().zip(keys).zip(in_memtables) {
        if !in_memtable {
            *hash = Some(crate::table::filter::key_hash(key.as_ref()));
        }
    }
    let open = |pos, meta: &TableMeta| match sv.pins.reader_within(
        &reads.tables,
        keyspace,
        pos,
        meta,
        Reach::Memory,
    ) {
        Ok(InMemory::Answer(reader)) => Some(reader),
        _ => None,
    };
    let hashed = || {
        keys.iter()
            .zip(&hashes)
            .filter_map(|(key, hash)| hash.map(|h| (key.as_ref(), h)))
    };
    for (key, hash) in hashed() {
        for (pos, meta) in tables.tables_for_key(key).take(PREFETCH_TABLES) {
            if let Some(reader) = open(pos, meta) {
                reader.prefetch_filter(hash);
            }
        }
    }
    let mut places = [None; BATCH_PREFETCH];
    for ((key, hash), place) in hashed().zip(&mut places) {
        for (pos, meta) in tables.tables_for_key(key).take(PREFETCH_TABLES) {
            if open(pos, meta).is_some_and(|reader| reader.may_contain_hash(hash)) {
                let at = rows.key(meta.id, hash);
                rows.prefetch(at);
                *place = Some(at);
                break;
            }
        }
    }
    for at in places.into_iter().flatten() {
        rows.prefetch_row(at);
    }
}

/// Starts fetching what point reads of every one of `keys` in the current memtables
/// touch first ([`prefetch_chunk`], [`BATCH_PREFETCH`] keys at a time), for a caller that
/// is about to read them one by one: a write leader resolving a group's counters.
pub(crate) fn prefetch_points(reads: &ReadPath, keys: &[(KeyspaceId, &[u8])]) {
    let (sv, _) = reads.acquire_current(None);
    for chunk in keys.chunks(BATCH_PREFETCH) {
        prefetch_chunk(&sv, chunk.iter().copied());
    }
}

/// The read of [`get_within`] in the super version `sv` at `seqno`, which the caller
/// holds until it returns.
#[expect(
    clippy::too_many_arguments,
    reason = "the parts of one read, passed once"
)]
fn get_in<R>(
    reads: &ReadPath,
    sv: &SuperVersion,
    seqno: SeqNo,
    keyspace: KeyspaceId,
    name: &str,
    key: &[u8],
    reach: Reach,
    f: impl FnOnce(Value<'_>) -> R,
) -> Result<InMemory<Option<R>>> {
    /// What the lookup left to do.
    enum Found<R> {
        /// `f` ran on the value in place.
        Done(R),
        /// A separated value: `f` runs on it once it is read.
        Handle(crate::vlog::ValueHandle),
        /// A range tombstone hides the version (and every older one).
        Hidden,
        /// The range tombstones could not be read.
        Failed(Error),
        /// The answer needs a file read that `reach` does not allow.
        NeedsIo,
    }
    // The keyspace is checked in the state read, not apart from it: one acquisition.
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return Err(Error::invalid(format!(
            "keyspace {name:?} has been dropped"
        )));
    };
    let mut f = Some(f);
    let mut operand = false;
    let found = newest_live(
        reads,
        sv,
        Some(tables),
        keyspace,
        key,
        seqno,
        reach,
        &mut operand,
        |found, view| {
            // Range tombstones are checked before the value is handed out (see `find_with`);
            // a read that finds no live version never builds them.
            match sv.range_tombstones_within(&reads.tables, keyspace, reach) {
                Ok(InMemory::Answer(dels)) if dels.deletes(key, found, seqno) => {
                    return Found::Hidden
                }
                Ok(InMemory::Answer(_)) => {}
                Ok(InMemory::NeedsIo) => return Found::NeedsIo,
                Err(e) => return Found::Failed(e),
            }
            match view.body {
                Body::Handle(_) if reach == Reach::Memory => Found::NeedsIo,
                Body::Handle(h) => Found::Handle(h),
                Body::Inline(v) => match f.take() {
                    Some(f) => Found::Done(f(Value::Borrowed(v))),
                    // The lookup decides once; a second call would be a bug of `newest_live`.
                    None => Found::Hidden,
                },
            }
        },
    )?;
    let InMemory::Answer(found) = found else {
        return Ok(InMemory::NeedsIo);
    };
    let out = match found.map(|(_, found)| found) {
        None if operand && reach == Reach::Memory => Ok(InMemory::NeedsIo),
        None if operand => match (merge_at(reads, sv, keyspace, key, seqno)?, f.take()) {
            (Some(merged), Some(f)) => Ok(InMemory::Answer(Some(f(Value::Owned(merged.value))))),
            _ => Ok(InMemory::Answer(None)),
        },
        None | Some(Found::Hidden) => Ok(InMemory::Answer(None)),
        Some(Found::NeedsIo) => Ok(InMemory::NeedsIo),
        Some(Found::Done(r)) => Ok(InMemory::Answer(Some(r))),
        Some(Found::Failed(e)) => Err(e),
        Some(Found::Handle(h)) => match f.take() {
            Some(f) => reads
                .blobs
                .read(&h)
                .map(|v| InMemory::Answer(Some(f(Value::Owned(v))))),
            None => Ok(InMemory::Answer(None)),
        },
    };
    out
}

/// Blocks a scan offers to the block cache per table, from the start of the scan: short
/// range reads (a seek and a few entries) are cached like point reads (on their second
/// miss once the cache is full, see `table::cache`); the rest of a long scan does not
/// evict the working set.
const SCAN_FILL_BLOCKS: u32 = 2;

/// A merged cursor over every source of `keyspace` in `sv` that may hold an entry a read
/// at or below the visible seqno can see. With `keys_only`, the memtable cursors do not
/// copy values (the merged cursor's values are then meaningless for entries from
/// memtables); table cursors never copy them.
///
/// A memtable that is empty now is left out: every entry at or below the visible seqno
/// was applied before that seqno became visible, so later entries are newer than any
/// read of `sv` sees. A single source is returned as it is, without a merging cursor
/// over it (a compacted keyspace with nothing written since: one level).
pub(super) fn merged(
    reads: &ReadPath,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
    keys_only: bool,
) -> Result<Box<dyn Cursor>> {
    let mut children: Vec<Box<dyn Cursor>> = Vec::new();
    for m in sv.memtables() {
        if m.is_empty() {
            continue;
        }
        let cursor = if keys_only {
            m.key_cursor(keyspace)
        } else {
            m.cursor(keyspace)
        };
        children.push(Box::new(cursor));
    }
    if let Some(ks_tables) = sv.version.keyspace_shared(keyspace) {
        for (level, files) in ks_tables.levels.iter().enumerate() {
            if level == 0 {
                for (index, meta) in files.iter().enumerate() {
                    let pos = TablePos { level, index };
                    let reader = sv.pins.reader(&reads.tables, keyspace, pos, meta)?;
                    let reader = reader.into_arc();
                    children.push(Box::new(reader.iter_fill_first(SCAN_FILL_BLOCKS)));
                }
            } else if !files.is_empty() {
                let tables = Arc::clone(&reads.tables);
                let open: Opener = Box::new(move |meta: &TableMeta| {
                    let reader = tables.get(meta.id)?;
                    Ok(reader.iter_fill_first(SCAN_FILL_BLOCKS))
                });
                let level = Tables::Level(Arc::clone(ks_tables), level);
                children.push(Box::new(LevelCursor::new(level, open)));
            }
        }
    }
    if children.len() == 1 {
        if let Some(only) = children.pop() {
            return Ok(only);
        }
    }
    Ok(Box::new(MergingCursor::new(children)))
}

/// The number of live keys of `keyspace` at `snapshot` (or now), from one consistent
/// super version, walking keys only (see [`Visible::count_forward`]).
///
/// # Errors
/// `InvalidArgument` if the keyspace was dropped; `Corruption`, `Io` from its tables.
pub(crate) fn count(reads: &ReadPath, keyspace: KeyspaceId, at: Option<&ReadAt>) -> Result<u64> {
    let (sv, seqno) = reads.acquire(at);
    if sv.version.keyspace(keyspace).is_none() {
        return Err(crate::Error::invalid("the keyspace has been dropped"));
    }
    let cursor = merged(reads, &sv, keyspace, true)?;
    let all = Bounds {
        lo: Bound::Unbounded,
        hi: Bound::Unbounded,
    };
    let range_dels = sv.range_tombstones(&reads.tables, keyspace)?;
    Visible::new(cursor, seqno, reads.now_ms(), all)
        .with_range_tombstones(range_dels)
        .count_forward()
}

/// Bytes of `keyspace` in the current super version: its table files, plus the bytes its
/// writes in the memtables take in the log (see `Memtable::logged_bytes`). 0 for a dropped
/// keyspace.
pub(crate) fn keyspace_disk_size(reads: &ReadPath, keyspace: KeyspaceId) -> u64 {
    let (sv, _) = reads.acquire(None);
    let Some(tables) = sv.version.keyspace(keyspace) else {
        return 0;
    };
    let table_bytes: u64 = tables.levels.iter().flatten().map(|t| t.file_size).sum();
    let log_bytes: u64 = sv.memtables().map(|m| m.logged_bytes(keyspace)).sum();
    table_bytes + log_bytes
}
