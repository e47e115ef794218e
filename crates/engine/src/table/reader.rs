//! [`Reader`]: an open table file, validated once and then shared by every thread that
//! reads it. Its cursor, `TableIter`, and the methods that make one are in `iter.rs`.
//!
//! `open` reads the footer, the properties block, the index block and the filter, and
//! checks them (FORMAT.md §6): the blocks tile the file, every index entry points at the
//! data block right after the previous one, separators increase, and the block count
//! matches the properties. Data blocks are read on demand through the [`BlockCache`] and
//! checked when read (trailer checksum, block framing), so a damaged data block fails the
//! reads that touch it, naming the table and the block's offset, and never yields data.
//!
//! Lookups: [`Reader::get`] asks the filter, seeks the index to the first block whose
//! separator is `>=` the seek key, and seeks that block. If the block holds no entry at or
//! after the seek key (its last key is below the seek key but its separator is not), the
//! answer is the first entry of the next block, because every key of that block sorts
//! after the separator. So a lookup reads at most two data blocks, and versions of one
//! user key spread over several blocks are found correctly.
//!
//! Blocks come from the file with positioned reads, or through a memory map of it
//! ([`Access::Map`]); either way each is checked before it is decoded, and the map is
//! bounds-checked like a read (a handle past the file's end is `Truncated`).
//!
//! Thread-safety: `Reader` is `Send + Sync`: the file is read with positioned reads or
//! through an immutable map, and the cache locks internally. A `TableIter` owns an
//! `Arc<Reader>` and has one owner.

use std::cmp::Ordering;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use smallvec::SmallVec;

use super::blob_refs::BlobRefs;
use super::block::{Block, BlockCursor, Walk};
use super::compression::{raw_len_in_place, unseal, Compression};
use super::fences::Fences;
use super::filter::Filter;
use super::footer::{BlockHandle, Footer};
use super::properties::Properties;
use super::range_block;
use super::BlockCache;
use super::{TableMeta, FOOTER_LEN, MAX_BLOCK_LEN};
use crate::cursor::Cursor;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::TableId;
use crate::fs::{read_exact_at, FileSystem, ReadableFile};
use crate::key::{compare_encoded, split_encoded, Kind, SeqNo, MAX_KEY_LEN};
use crate::mmap::Map;
use crate::rangedel::RangeTombstone;
use crate::reach::{InMemory, Reach};

/// How a [`Reader`] reads its blocks from the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Positioned reads (`pread`) into a buffer: an I/O error is `Error::Io`.
    Pread,
    /// Through a memory map of the whole file where the file system can make one
    /// ([`FileSystem::open_read_mapped`]), positioned reads otherwise: a block already in
    /// the page cache costs no system call and no copy before it is checked and decoded,
    /// but a page the device fails to return stops the process (`SIGBUS`).
    Map,
}

/// An open, validated table; see the module documentation.
pub(crate) struct Reader {
    id: TableId,
    path: Arc<Path>,
    file: Box<dyn ReadableFile>,
    cache: Arc<BlockCache>,
    meta: TableMeta,
    properties: Properties,
    footer: Footer,
    index: Block,
    /// The index block's fences, so seeks search a small array first.
    index_fences: Fences,
    /// The data blocks' handles in index order, so a point lookup whose block the fences
    /// decide reads no index entry (empty if the index block is not one restart point per
    /// entry, as every writer makes it; lookups then search the index block).
    handles: Vec<BlockHandle>,
    /// Whether data blocks are read in place ([`Reader::in_place`]): the file is mapped and
    /// the table was written without compression (so its blocks are stored as they are).
    /// Decided at open, so reads of a compressed table never look at the map first.
    in_place: bool,
    /// One bit per entry of `handles`: set once that block has been read in place and its
    /// checksum verified (see [`Reader::in_place_range`]).
    verified: Box<[AtomicU64]>,
    filter: Option<Filter>,
    /// The range-tombstone block's contents (empty without one), read and checked at open.
    range_tombstones: Vec<RangeTombstone>,
    data_end: u64,
    /// Where this reader's index and filter bytes are counted while it lives, if anywhere
    /// ([`Reader::charge_to`]).
    charge: Option<Charge>,
}

/// Bytes counted in a shared total for as long as the value lives.
struct Charge {
    total: Arc<AtomicUsize>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, AtomicOrdering::Relaxed);
    }
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("meta", &self.meta)
            .finish()
    }
}

fn corrupt(path: &Path, offset: u64, reason: Reason) -> Error {
    Error::corruption(FileKind::Table, path, offset, reason)
}

/// Bytes of a point lookup's seek key (user key and trailer) kept on the stack.
const SEEK_INLINE: usize = 64;

/// Sequential block reads in a row after which a cursor reads ahead.
const READAHEAD_AFTER: u32 = 2;

/// The first read-ahead of a run of sequential reads; each next one doubles, up to
/// [`READAHEAD_MAX`].
const READAHEAD_MIN: usize = 32 << 10;

/// The largest read-ahead.
const READAHEAD_MAX: usize = 256 << 10;

/// The read-ahead state of one table cursor. A cursor that reads data blocks from the
/// file one after the other (a scan, a compaction), in either direction, reads the file
/// ahead of the block it needs (after it going forward, before it going backward) into a
/// buffer it owns, and serves the next blocks from it: one `pread` per buffer instead of
/// one per block. A block from the buffer is checked and decoded as one from the file; a
/// read that is not sequential ends the run.
#[derive(Debug, Default)]
pub(crate) struct Readahead {
    /// File bytes `start..start + buf.len()`.
    buf: Vec<u8>,
    start: u64,
    /// Where the last block the cursor needed starts and ends: a block starting at its end
    /// continues a forward run, one ending at its start a backward run.
    last_start: u64,
    last_end: u64,
    /// Sequential blocks in a row, and in which direction.
    run: u32,
    backward: bool,
}

/// Whether to refill a [`Readahead`] buffer on a block it does not hold, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ahead {
    /// Read just the block.
    No,
    /// From the block's start on.
    Forward,
    /// Up to the block's end.
    Backward,
}

impl Readahead {
    /// The stored bytes of the block at `offset`, `len` bytes long, if the buffer holds
    /// all of them.
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let from = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        self.buf.get(from..from.checked_add(len)?)
    }

    /// Notes that the cursor needs the block `offset..end`; whether it continues a run long
    /// enough to read ahead, and in which direction.
    pub(crate) fn note(&mut self, offset: u64, end: u64) -> Ahead {
        let forward = offset == self.last_end;
        let backward = end == self.last_start && !forward;
        self.run = if (forward && !self.backward) || (backward && self.backward) {
            self.run.saturating_add(1)
        } else {
            u32::from(forward || backward)
        };
        self.backward = backward;
        self.last_start = offset;
        self.last_end = end;
        match (self.run >= READAHEAD_AFTER, backward) {
            (false, _) => Ahead::No,
            (true, false) => Ahead::Forward,
            (true, true) => Ahead::Backward,
        }
    }
}

/// Bytes the block at `handle` takes in the file (body and trailer), refused if the body
/// is longer than a block may be.
fn stored_len(path: &Path, handle: BlockHandle) -> Result<usize> {
    usize::try_from(handle.size)
        .ok()
        .filter(|&n| n <= MAX_BLOCK_LEN)
        .map(|n| n + super::BLOCK_TRAILER_LEN)
        .ok_or_else(|| corrupt(path, handle.offset, Reason::LengthOutOfRange))
}

/// The `len` stored bytes of the block at `handle` in `map`, refused as `Truncated` if they
/// do not all lie inside it.
fn mapped_block<'m>(
    map: &'m Map,
    path: &Path,
    handle: BlockHandle,
    len: usize,
) -> Result<&'m [u8]> {
    usize::try_from(handle.offset)
        .ok()
        .and_then(|from| map.bytes().get(from..from.checked_add(len)?))
        .ok_or_else(|| corrupt(path, handle.offset, Reason::Truncated))
}

/// Stored blocks up to this size are read into a buffer each thread keeps, so a block
/// read allocates only the decoded block.
const SCRATCH_MAX: usize = 256 << 10;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads and unseals the stored block at `handle`: straight from the file's map if it has
/// one, else with a positioned read.
fn read_block(file: &dyn ReadableFile, path: &Path, handle: BlockHandle) -> Result<Arc<[u8]>> {
    let len = stored_len(path, handle)?;
    if let Some(map) = file.mapped() {
        let stored = mapped_block(map, path, handle, len)?;
        return unseal(stored, path, handle.offset);
    }
    let read = |stored: &mut Vec<u8>| {
        stored.resize(len, 0);
        read_exact_at(file, handle.offset, stored)?;
        unseal(stored, path, handle.offset)
    };
    if len > SCRATCH_MAX {
        return read(&mut Vec::new());
    }
    // A nested read on this thread (none today) would find the buffer taken and allocate.
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => read(&mut scratch),
        Err(_) => read(&mut Vec::new()),
    })
}

impl Reader {
    /// Opens table `id` at `path`: reads and validates the footer, properties, index and
    /// filter. Data blocks are read later, through `cache`.
    ///
    /// # Errors
    /// `Corruption` (file `Table`, with the offset of the damaged block or of the footer)
    /// for any damage FORMAT.md §6 lists, including `FileTooSmall` for a file shorter than
    /// a footer; `UnsupportedVersion` for an unknown format version; `Error::Io`.
    pub(crate) fn open(
        fs: &dyn FileSystem,
        path: &Path,
        id: TableId,
        cache: Arc<BlockCache>,
    ) -> Result<Reader> {
        Reader::open_with(fs, path, id, cache, Access::Pread)
    }

    /// As [`Reader::open`], reading data blocks as `access` says.
    ///
    /// # Errors
    /// As [`Reader::open`].
    pub(crate) fn open_with(
        fs: &dyn FileSystem,
        path: &Path,
        id: TableId,
        cache: Arc<BlockCache>,
        access: Access,
    ) -> Result<Reader> {
        let file = match access {
            Access::Pread => fs.open_read(path)?,
            Access::Map => fs.open_read_mapped(path)?,
        };
        let file_len = file.len()?;
        let Some(footer_offset) = file_len.checked_sub(FOOTER_LEN as u64) else {
            return Err(corrupt(
                path,
                0,
                Reason::FileTooSmall {
                    expected: FOOTER_LEN as u64,
                    actual: file_len,
                },
            ));
        };
        let mut bytes = [0u8; FOOTER_LEN];
        read_exact_at(file.as_ref(), footer_offset, &mut bytes)?;
        let footer = Footer::decode(&bytes, path, footer_offset)?;
        let mut data_end = footer
            .data_end(footer_offset)
            .map_err(|r| corrupt(path, footer_offset, r))?;
        let raw = read_block(file.as_ref(), path, footer.properties)?;
        let properties =
            Properties::decode(&raw).map_err(|r| corrupt(path, footer.properties.offset, r))?;
        if properties.format_version != footer.version {
            return Err(corrupt(
                path,
                footer.properties.offset,
                Reason::BadEntry("properties format version differs from the footer's"),
            ));
        }
        // The range-tombstone block, if any, sits between the data blocks and the filter
        // (or the index), so the data blocks end where it starts.
        let range_tombstones = match properties.range_tombstones {
            None => Vec::new(),
            Some(h) => {
                if h.end() != Some(data_end) {
                    return Err(corrupt(
                        path,
                        footer.properties.offset,
                        Reason::HeaderField {
                            field: "range_tombstones handle",
                            detail: format!("block at {} does not end at {data_end}", h.offset),
                        },
                    ));
                }
                data_end = h.offset;
                let raw = read_block(file.as_ref(), path, h)?;
                range_block::decode(&raw).map_err(|r| corrupt(path, h.offset, r))?
            }
        };
        let raw = read_block(file.as_ref(), path, footer.index)?;
        let index = Block::decode(raw).map_err(|r| corrupt(path, footer.index.offset, r))?;
        let index_fences =
            Fences::build(&index).map_err(|r| corrupt(path, footer.index.offset, r))?;
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let raw = read_block(file.as_ref(), path, footer.filter)?;
            let layout = super::filter_layout(footer.version);
            Some(Filter::decode(&raw, layout).map_err(|r| corrupt(path, footer.filter.offset, r))?)
        };
        let mut meta = properties.meta(id, file_len);
        meta.extend_for_range_tombstones(&range_tombstones);
        let mut reader = Reader {
            id,
            path: Arc::from(path),
            file,
            cache,
            meta,
            properties,
            footer,
            index,
            index_fences,
            filter,
            range_tombstones,
            data_end,
            handles: Vec::new(),
            in_place: false,
            verified: Box::default(),
            charge: None,
        };
        let handles = reader.check_index()?;
        if handles.len() == reader.index.restart_count() {
            reader.handles = handles;
        }
        reader.in_place =
            reader.file.mapped().is_some() && reader.properties.compression == Compression::None;
        if reader.in_place {
            reader.verified = (0..reader.handles.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect();
        }
        Ok(reader)
    }

    /// Walks the index: handles tile `0..data_end` in order, separators strictly increase,
    /// the last is `>=` the largest key, and there are as many as the properties say.
    /// Returns the handles.
    fn check_index(&self) -> Result<Vec<BlockHandle>> {
        let at = self.footer.index.offset;
        let mut cur = self.index_cursor();
        let (mut expected_offset, mut count) = (0u64, 0u64);
        let mut handles = Vec::new();
        let mut prev_key: Vec<u8> = Vec::new();
        cur.seek_to_first()?;
        while cur.valid() {
            let handle =
                BlockHandle::decode(cur.value()).map_err(|r| corrupt(&self.path, at, r))?;
            if handle.offset != expected_offset || handle.end().is_none_or(|e| e > self.data_end) {
                return Err(corrupt(&self.path, at, Reason::LengthOutOfRange));
            }
            if count > 0 && compare_encoded(&prev_key, cur.key()) != Ordering::Less {
                return Err(corrupt(
                    &self.path,
                    at,
                    Reason::BadEntry("index keys do not increase"),
                ));
            }
            expected_offset = handle.end().unwrap_or(u64::MAX);
            handles.push(handle);
            count += 1;
            prev_key.clear();
            prev_key.extend_from_slice(cur.key());
            cur.next()?;
        }
        if expected_offset != self.data_end
            || count != self.properties.data_blocks
            || compare_encoded(&prev_key, &self.properties.largest) == Ordering::Less
        {
            return Err(corrupt(
                &self.path,
                at,
                Reason::BadEntry("index does not cover the data blocks the properties describe"),
            ));
        }
        handles.shrink_to_fit();
        Ok(handles)
    }

    /// Bytes of the decoded index block (with its fences) and filter this reader holds in
    /// memory for its whole life.
    pub(crate) fn index_filter_len(&self) -> usize {
        self.index.len()
            + self.index_fences.len()
            + self.handles.len() * std::mem::size_of::<BlockHandle>()
            + self.filter.as_ref().map_or(0, Filter::len)
    }

    /// Counts [`Reader::index_filter_len`] in `total` from now until the reader is
    /// dropped (once: a later call replaces the earlier count).
    pub(crate) fn charge_to(&mut self, total: &Arc<AtomicUsize>) {
        let bytes = self.index_filter_len();
        total.fetch_add(bytes, AtomicOrdering::Relaxed);
        self.charge = Some(Charge {
            total: Arc::clone(total),
            bytes,
        });
    }

    /// The table's file id.
    #[cfg(test)]
    pub(crate) fn id(&self) -> TableId {
        self.id
    }

    /// The path the table was opened with.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The earliest expiry of any entry (Unix milliseconds), if any entry has one.
    pub(crate) fn earliest_expiry(&self) -> Option<u64> {
        self.properties.earliest_expiry
    }

    /// True if the table holds one entry per user key (its writer recorded no repeat), so
    /// every entry is the only version of its key here.
    pub(crate) fn distinct_keys(&self) -> bool {
        self.properties.distinct_keys()
    }

    /// The table's references into the value log (empty for a table without value
    /// handles).
    pub(crate) fn blob_refs(&self) -> &BlobRefs {
        &self.properties.blob_refs
    }

    /// The table's summary, rebuilt from its properties block and file size.
    pub(crate) fn meta(&self) -> &TableMeta {
        &self.meta
    }

    /// The table's range tombstones (FORMAT.md §4.7), sorted by start, then seqno
    /// descending. Point lookups never consult them: the read path applies every
    /// tombstone of a keyspace separately, so a filter miss cannot hide one.
    pub(crate) fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.range_tombstones
    }

    /// Where the range-tombstone block is, if the table has one.
    #[cfg(test)]
    pub(crate) fn properties_range_handle(&self) -> Option<BlockHandle> {
        self.properties.range_tombstones
    }

    /// False if the table certainly holds no version of `user_key` (always true without a
    /// filter).
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// Starts fetching what [`Reader::may_contain_hash`] of `hash` reads first.
    pub(crate) fn prefetch_filter(&self, hash: u64) {
        if let Some(f) = &self.filter {
            f.prefetch_hash(hash);
        }
    }

    /// [`Reader::may_contain`] of the key whose `filter::key_hash` is `hash`.
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain_hash(hash))
    }

    /// The newest version of `user_key` with seqno `<= snapshot`: `(seqno, kind, value)`.
    ///
    /// # Errors
    /// `Corruption` for a damaged block on the way; `Error::Io`.
    #[cfg(test)]
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
    ) -> Result<Option<(SeqNo, Kind, Vec<u8>)>> {
        self.get_with(user_key, snapshot, |s, k, v| (s, k, v.to_vec()))
    }

    /// `f(seqno, kind, stored value)` of the newest version of `user_key` with seqno
    /// `<= snapshot`, without copying the value.
    ///
    /// # Errors
    /// As [`Reader::get`].
    pub(crate) fn get_with<R>(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
        f: impl FnOnce(SeqNo, Kind, &[u8]) -> R,
    ) -> Result<Option<R>> {
        self.get_within(user_key, snapshot, Reach::Disk, f)?
            .answered()
    }

    /// As [`Reader::get_with`], looking only as far as `reach` allows: with
    /// [`Reach::Memory`], a data block that is not in the block cache gives
    /// [`InMemory::NeedsIo`] (nothing is read, nothing is cached, no miss is counted).
    ///
    /// # Errors
    /// As [`Reader::get`].
    pub(crate) fn get_within<R>(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
        reach: Reach,
        f: impl FnOnce(SeqNo, Kind, &[u8]) -> R,
    ) -> Result<InMemory<Option<R>>> {
        if !self.may_contain(user_key) {
            return Ok(InMemory::Answer(None));
        }
        // Sorts before every version with seqno <= snapshot and after every newer one: no
        // stored kind is 0xff.
        // On the stack for keys of up to `SEEK_INLINE - 8` bytes: a lookup allocates nothing.
        let mut target: SmallVec<[u8; SEEK_INLINE]> = SmallVec::new();
        target.extend_from_slice(user_key);
        let trailer = (snapshot.min(SeqNo::MAX).0 << 8) | 0xff;
        target.extend_from_slice(&trailer.to_le_bytes());
        let mut f = Some(f);
        // The first block whose separator is >= the target, then (if it holds no entry at
        // or after the target) the next one.
        if let Some(first) = self
            .index_fences
            .first_at_or_after(&target)
            .filter(|_| !self.handles.is_empty())
        {
            // Decided by the fences: no index entry is read.
            for i in first..first.saturating_add(2) {
                let Some(&handle) = self.handles.get(i) else {
                    return Ok(InMemory::Answer(None));
                };
                let answer =
                    self.get_in_block(handle, Some(i), reach, user_key, &target, &mut f)?;
                if let Some(answer) = answer {
                    return Ok(answer);
                }
            }
            return Ok(InMemory::Answer(None));
        }
        // Borrowed cursors: a lookup clones no shared reference count but the data block's.
        let mut index = BlockCursor::new(&self.index, &*self.path, self.footer.index.offset);
        index.seek_in(&target, self.index_fences.candidates(&target))?;
        for _ in 0..2 {
            if !index.valid() {
                return Ok(InMemory::Answer(None));
            }
            let handle = self.handle(&index)?;
            if let Some(answer) =
                self.get_in_block(handle, None, reach, user_key, &target, &mut f)?
            {
                return Ok(answer);
            }
            index.next()?;
        }
        Ok(InMemory::Answer(None))
    }

    /// The answer of [`Reader::get_within`] from the data block at `handle`, or `None` if
    /// the block holds no entry at or after `target` (the answer is then in the next
    /// block). `at`: the block's place among the handles, if known. `f` is taken when it
    /// is called.
    fn get_in_block<R, F: FnOnce(SeqNo, Kind, &[u8]) -> R>(
        &self,
        handle: BlockHandle,
        at: Option<usize>,
        reach: Reach,
        user_key: &[u8],
        target: &[u8],
        f: &mut Option<F>,
    ) -> Result<Option<InMemory<Option<R>>>> {
        // A cached block's header is in the cache's map slot: the interval the seek will
        // walk is prefetched from it before the clone touches the block's bytes.
        let key = (self.id.0, handle.offset);
        let ahead = |b: &Block| {
            b.prefetch_walk(Walk::To(target));
            b.clone()
        };
        let block = match reach {
            Reach::Disk => match self.in_place(handle, at, Walk::To(target))? {
                Some(block) => block,
                None => match self.cache.get_map(key, ahead) {
                    Some(block) => block,
                    None => self.block_from_file(handle, true, None)?,
                },
            },
            Reach::Memory => match self.cache.get_if_cached_map(key, ahead) {
                Some(block) => block,
                None => return Ok(Some(InMemory::NeedsIo)),
            },
        };
        let mut data = BlockCursor::new(block, &*self.path, handle.offset);
        data.seek(target)?;
        if !data.valid() {
            return Ok(None);
        }
        let found = split_encoded(data.key()).filter(|(u, _)| *u == user_key);
        let Some((_, trailer)) = found else {
            return Ok(Some(InMemory::Answer(None)));
        };
        let tag = trailer as u8;
        let kind = Kind::from_u8(tag)
            .ok_or_else(|| corrupt(&self.path, data.file_offset(), Reason::BadTag(tag)))?;
        Ok(Some(InMemory::Answer(
            f.take().map(|f| f(SeqNo(trailer >> 8), kind, data.value())),
        )))
    }

    /// Reads every data block from the file (not the cache), checks its checksum and
    /// decodes every entry: keys are valid internal keys in strictly increasing order,
    /// each block's keys lie between its separator and the previous one, the filter holds
    /// every user key, and the counts, seqno range and key range match the properties;
    /// reads the range-tombstone block again too (`verify_range_block`). Returns the
    /// number of entries.
    ///
    /// # Errors
    /// `Corruption` at the offset of the first block (or of the properties block) found
    /// wrong; `Error::Io`.
    pub(crate) fn verify(&self) -> Result<u64> {
        self.verify_range_block()?;
        let mut index = self.index_cursor();
        let mut tally = Properties {
            min_seqno: SeqNo::MAX,
            max_seqno: SeqNo::ZERO,
            entries: 0,
            tombstones: 0,
            expiring: 0,
            earliest_expiry: None,
            raw_bytes: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
            repeats: self.properties.repeats.map(|_| 0),
            ..self.properties.clone()
        };
        let mut prev_separator: Option<Vec<u8>> = None;
        index.seek_to_first()?;
        while index.valid() {
            let handle = self.handle(&index)?;
            let at = handle.offset;
            let raw = read_block(self.file.as_ref(), &self.path, handle)?;
            let block = Block::decode(raw).map_err(|r| corrupt(&self.path, at, r))?;
            let mut data = BlockCursor::new(block, Arc::clone(&self.path), at);
            data.seek_to_first()?;
            while data.valid() {
                let key = data.key();
                let bad = |msg| Err(corrupt(&self.path, at, Reason::BadEntry(msg)));
                let Some((user_key, trailer)) = split_encoded(key) else {
                    return bad("key shorter than its trailer");
                };
                let kind = Kind::from_u8(trailer as u8)
                    .ok_or_else(|| corrupt(&self.path, at, Reason::BadTag(trailer as u8)))?;
                let seqno = SeqNo(trailer >> 8);
                if user_key.len() > MAX_KEY_LEN {
                    return bad("user key longer than the key limit");
                }
                if kind == Kind::RangeDelete {
                    return bad("a range tombstone among the point entries");
                }
                if tally.entries > 0 && compare_encoded(&tally.largest, key) != Ordering::Less {
                    return bad("keys do not increase");
                }
                let repeat = tally.entries > 0
                    && split_encoded(&tally.largest).is_some_and(|(last, _)| last == user_key);
                if let Some(r) = tally.repeats.as_mut() {
                    *r += u64::from(repeat);
                }
                let after_prev = prev_separator
                    .as_ref()
                    .is_none_or(|s| compare_encoded(s, key) == Ordering::Less);
                if !after_prev || compare_encoded(key, index.key()) == Ordering::Greater {
                    return bad("key outside the range its index entry gives the block");
                }
                if !self.may_contain(user_key) {
                    return bad("the filter does not hold a key of the table");
                }
                if tally.entries == 0 {
                    tally.smallest = key.to_vec();
                }
                tally.entries += 1;
                tally.tombstones += u64::from(kind == Kind::Delete);
                let expiry = crate::entry::expiry_of(kind, data.value())
                    .map_err(|r| corrupt(&self.path, at, r))?;
                if let Some(e) = expiry {
                    tally.expiring += 1;
                    tally.earliest_expiry = Some(tally.earliest_expiry.map_or(e, |t| t.min(e)));
                }
                tally.raw_bytes += (user_key.len() + data.value().len()) as u64;
                tally.min_seqno = tally.min_seqno.min(seqno);
                tally.max_seqno = tally.max_seqno.max(seqno);
                tally.largest.clear();
                tally.largest.extend_from_slice(key);
                data.next()?;
            }
            prev_separator = Some(index.key().to_vec());
            index.next()?;
        }
        if tally != self.properties {
            return Err(corrupt(
                &self.path,
                self.footer.properties.offset,
                Reason::BadEntry("the properties do not match the table's entries"),
            ));
        }
        Ok(tally.entries)
    }

    /// Reads the range-tombstone block (if any) from the file again, checks its checksum
    /// and encoding, and that it holds the tombstones the reader applies.
    fn verify_range_block(&self) -> Result<()> {
        let Some(h) = self.properties.range_tombstones else {
            return Ok(());
        };
        let raw = read_block(self.file.as_ref(), &self.path, h)?;
        let found = range_block::decode(&raw).map_err(|r| corrupt(&self.path, h.offset, r))?;
        if found != self.range_tombstones {
            return Err(corrupt(
                &self.path,
                h.offset,
                Reason::BadEntry("the range-tombstone block changed since the table was opened"),
            ));
        }
        Ok(())
    }

    pub(super) fn index_cursor(&self) -> BlockCursor {
        BlockCursor::new(
            self.index.clone(),
            Arc::clone(&self.path),
            self.footer.index.offset,
        )
    }

    /// Positions `index` (a cursor from [`Reader::index_cursor`]) at the first entry
    /// `>= target`, searching the fences first.
    pub(super) fn seek_index(&self, index: &mut BlockCursor, target: &[u8]) -> Result<()> {
        index.seek_in(target, self.index_fences.candidates(target))
    }

    /// The handle in the current index entry, checked against the data region.
    pub(super) fn handle<B, P>(&self, index: &BlockCursor<B, P>) -> Result<BlockHandle>
    where
        B: AsRef<Block> + Send,
        P: std::ops::Deref<Target = Path> + Send,
    {
        let at = self.footer.index.offset;
        let handle = BlockHandle::decode(index.value()).map_err(|r| corrupt(&self.path, at, r))?;
        if handle.end().is_none_or(|e| e > self.data_end) {
            return Err(corrupt(&self.path, at, Reason::LengthOutOfRange));
        }
        Ok(handle)
    }

    /// A cursor over the data block of the current index entry, from the cache or the
    /// file, and whether the block was read from the file;
    /// with `readahead`, sequential reads from the file go through it. A cached block's
    /// lines where `walk` starts are prefetched before its bytes are touched.
    pub(super) fn data_cursor_counted(
        &self,
        index: &BlockCursor,
        fill_cache: bool,
        readahead: Option<&mut Readahead>,
        walk: Walk,
    ) -> Result<(BlockCursor, bool)> {
        let handle = self.handle(index)?;
        if let Some(block) = self.in_place(handle, Some(index.restart_hint()), walk)? {
            let cursor = BlockCursor::new(block, Arc::clone(&self.path), handle.offset);
            return Ok((cursor, true));
        }
        let (block, from_file) = self.data_block_ahead(handle, fill_cache, readahead, walk)?;
        Ok((
            BlockCursor::new(block, Arc::clone(&self.path), handle.offset),
            from_file,
        ))
    }

    /// Whether blocks are read through a map of the file.
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        self.file.mapped().is_some()
    }

    /// The handle of the `i`-th data block, from the handles kept for point lookups.
    #[cfg(test)]
    pub(crate) fn handle_at(&self, i: usize) -> Option<BlockHandle> {
        self.handles.get(i).copied()
    }

    /// Prefetches, when it is cached, the data block a walk over the table's blocks will
    /// load after the one at `current` (index position `at`, a hint checked against the
    /// handles): the next block's first lines going forward ([`Walk::First`]), the
    /// previous block's last interval going backward ([`Walk::Last`]). Its cache slot,
    /// reference count and first lines then arrive while the walk is still in this block.
    pub(super) fn prefetch_following(&self, current: BlockHandle, at: usize, walk: Walk) {
        if self.handles.get(at) != Some(&current) {
            return;
        }
        let following = match walk {
            Walk::First => at.checked_add(1),
            Walk::Last => at.checked_sub(1),
            Walk::To(_) => None,
        };
        if let Some(h) = following.and_then(|i| self.handles.get(i)) {
            self.cache
                .peek_map((self.id.0, h.offset), |b| b.prefetch_walk(walk));
        }
    }

    /// The data block at `handle` read where it lies in the table's map, if the table's
    /// blocks are read in place and this one is stored uncompressed (see
    /// [`Reader::in_place_range`]); `None` otherwise. Nothing is copied and the block
    /// cache is not used: the page cache holds the bytes.
    ///
    /// # Errors
    /// As [`Reader::in_place_range`].
    fn in_place(
        &self,
        handle: BlockHandle,
        at: Option<usize>,
        walk: Walk,
    ) -> Result<Option<Block>> {
        let Some((map, start, raw_len)) = self.in_place_range(handle, at, walk)? else {
            return Ok(None);
        };
        let block = Block::decode_mapped(Arc::clone(map), start, raw_len)
            .map_err(|r| corrupt(&self.path, handle.offset, r))?;
        block.prefetch_walk(walk);
        Ok(Some(block))
    }

    /// Moves `data`, a cursor over a block of this table read in place, to the block at
    /// `handle` (the index's current entry), read in place too, keeping the cursor's
    /// buffers and its reference to the map: a walk across the table's blocks then takes
    /// no reference per block (each one an atomic write to a line every thread reading the
    /// table shares). `Ok(false)`, `data` untouched, if the block is not read in place or
    /// `data` does not hold a block of this table's map.
    ///
    /// # Errors
    /// As [`Reader::in_place`]; `data` is then invalid and must be dropped.
    pub(super) fn reload_in_place(
        &self,
        index: &BlockCursor,
        handle: BlockHandle,
        walk: Walk,
        data: &mut BlockCursor,
    ) -> Result<bool> {
        let Some((map, start, raw_len)) =
            self.in_place_range(handle, Some(index.restart_hint()), walk)?
        else {
            return Ok(false);
        };
        if !data.reload_mapped(map, start, raw_len, handle.offset)? {
            return Ok(false);
        }
        data.block().prefetch_walk(walk);
        Ok(true)
    }

    /// Where the data block at `handle` lies in the table's map, as `(map, start, raw
    /// length)`, if the table's blocks are read in place (`Reader::in_place`, the field)
    /// and this one is stored uncompressed; `None` otherwise (the block then goes through
    /// the block cache). The block's checksum is verified the first time this reader
    /// reads it in place and the success remembered in `verified`, so later reads of the
    /// same bytes skip the pass over the whole block (a block whose place among the
    /// handles is unknown is verified every time). `at`: the block's place among the
    /// handles, if known (a hint, checked). `walk`: where the reader starts in the block;
    /// a lookup or seek (`Walk::To`) has every line of the block fetched ahead, a walk
    /// from the first or last entry only the trailer's line (and, once framed, the lines
    /// it starts on).
    ///
    /// # Errors
    /// `Corruption` for a handle outside the file, a checksum mismatch or a damaged
    /// restart array.
    fn in_place_range(
        &self,
        handle: BlockHandle,
        at: Option<usize>,
        walk: Walk,
    ) -> Result<Option<(&Arc<Map>, usize, usize)>> {
        let Some(map) = self.file.mapped().filter(|_| self.in_place) else {
            return Ok(None);
        };
        let len = stored_len(&self.path, handle)?;
        let stored = mapped_block(map, &self.path, handle, len)?;
        // In range: `mapped_block` sliced the map from it.
        let start = usize::try_from(handle.offset).unwrap_or(usize::MAX);
        // The trailer's line is asked for first: it is read first. A lookup or seek then
        // asks for every other line at once, so the misses of its binary search over the
        // restart keys overlap (without that, reading in place was slower than copying
        // the block, whose copy streams it in). A walk from the first or last entry reads
        // the block in order and leaves the rest to the CPU's own prefetcher (asking for
        // every line cost a scan 7 % of its time).
        crate::mmap::prefetch(stored, stored.len().saturating_sub(1));
        if !matches!(walk, Walk::First | Walk::Last) {
            crate::mmap::prefetch_lines(stored, 0, stored.len());
        }
        let place = at
            .filter(|&i| self.handles.get(i) == Some(&handle))
            .or_else(|| {
                self.handles
                    .binary_search_by_key(&handle.offset, |h| h.offset)
                    .ok()
            });
        let bit = place.and_then(|i| Some((self.verified.get(i / 64)?, 1u64 << (i % 64))));
        let known_good =
            bit.is_some_and(|(word, mask)| word.load(AtomicOrdering::Relaxed) & mask != 0);
        let raw_len = raw_len_in_place(stored, !known_good)
            .map_err(|r| corrupt(&self.path, handle.offset, r))?;
        let Some(raw_len) = raw_len else {
            return Ok(None);
        };
        if let (false, Some((word, mask))) = (known_good, bit) {
            word.fetch_or(mask, AtomicOrdering::Relaxed);
        }
        Ok(Some((map, start, raw_len)))
    }

    /// The data block at `handle`, from the cache or the file, and whether it came from
    /// the file; a block read from the file is offered to the cache if `fill_cache`. With
    /// `readahead`, sequential reads from the file go through it.
    fn data_block_ahead(
        &self,
        handle: BlockHandle,
        fill_cache: bool,
        readahead: Option<&mut Readahead>,
        walk: Walk,
    ) -> Result<(Block, bool)> {
        // Noted before the cache is asked, so cached blocks keep a sequential run going.
        let sequential = match (readahead, handle.end()) {
            (Some(ra), Some(end)) => Some((ra.note(handle.offset, end), ra)),
            _ => None,
        };
        let ahead = |b: &Block| {
            b.prefetch_walk(walk);
            b.clone()
        };
        if let Some(block) = self.cache.get_map((self.id.0, handle.offset), ahead) {
            return Ok((block, false));
        }
        Ok((self.block_from_file(handle, fill_cache, sequential)?, true))
    }

    /// The data block at `handle` read from the file (through `sequential`'s readahead
    /// buffer when given: whether to refill it, and the buffer), offered to the cache if
    /// `fill_cache`.
    fn block_from_file(
        &self,
        handle: BlockHandle,
        fill_cache: bool,
        sequential: Option<(Ahead, &mut Readahead)>,
    ) -> Result<Block> {
        let raw = match sequential {
            Some((ahead, ra)) => self.read_block_ahead(handle, ahead, ra)?,
            None => read_block(self.file.as_ref(), &self.path, handle)?,
        };
        // Only a block the cache may keep gets a guide: the others are walked once.
        let block = if fill_cache {
            Block::decode(raw)
        } else {
            Block::decode_unguided(raw)
        }
        .map_err(|r| corrupt(&self.path, handle.offset, r))?;
        if fill_cache {
            self.cache.insert((self.id.0, handle.offset), block.clone());
        }
        Ok(block)
    }

    /// Reads and unseals the block at `handle` through `ra`: from its buffer if it holds
    /// the block, else, unless `ahead` is [`Ahead::No`], after refilling the buffer (twice
    /// the last refill, up to [`READAHEAD_MAX`], never outside the data blocks) from the
    /// block's start on or up to its end, else straight from the file.
    fn read_block_ahead(
        &self,
        handle: BlockHandle,
        ahead: Ahead,
        ra: &mut Readahead,
    ) -> Result<Arc<[u8]>> {
        if self.file.mapped().is_some() {
            // The kernel reads a mapped file ahead of sequential faults by itself.
            return read_block(self.file.as_ref(), &self.path, handle);
        }
        let stored_len = stored_len(&self.path, handle)?;
        if ra.slice(handle.offset, stored_len).is_none() {
            let want = (ra.buf.len() * 2).clamp(READAHEAD_MIN, READAHEAD_MAX);
            let start = match ahead {
                Ahead::No => return read_block(self.file.as_ref(), &self.path, handle),
                Ahead::Forward => handle.offset,
                // Back to the first data block (at offset 0) at most.
                Ahead::Backward => {
                    let end = handle.offset.saturating_add(stored_len as u64);
                    end.saturating_sub(want as u64).min(handle.offset)
                }
            };
            let rest = usize::try_from(self.data_end.saturating_sub(start)).unwrap_or(usize::MAX);
            let reach = usize::try_from(handle.offset.saturating_sub(start))
                .unwrap_or(usize::MAX)
                .saturating_add(stored_len);
            let len = want.min(rest).max(reach);
            // The read overwrites every byte: only bytes the buffer never had are zeroed.
            if ra.buf.len() < len {
                ra.buf.resize(len, 0);
            } else {
                ra.buf.truncate(len);
            }
            if let Err(e) = read_exact_at(self.file.as_ref(), start, &mut ra.buf) {
                ra.buf.clear();
                return Err(e);
            }
            ra.start = start;
        }
        let stored = ra
            .slice(handle.offset, stored_len)
            .ok_or_else(|| corrupt(&self.path, handle.offset, Reason::Truncated))?;
        unseal(stored, &self.path, handle.offset)
    }
}
