//! Reading a log file: header validation, the memory map, entry decoding and the log
//! iterator (every PUT and DELETE in file order).
//!
//! A [`LogReader`] maps the first `data_end` bytes of the log as they were when it was
//! opened; entries appended later are invisible to it. Entry decoding is shared with the
//! index builder and the index reader through the crate-internal [`RawIter`] and
//! [`Stream`] types. Every length read from the file is checked against `data_end` before
//! it is used, and reads never allocate more than the bytes actually present.
//!
//! Thread-safety: `LogReader` is `Send + Sync` and cheap to clone (an `Arc`); iterators
//! are per-thread.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::coding::{get_vlq, VlqError, MAX_VLQ_LEN};
use crate::error::{Error, FileKind, Reason, Result};
use crate::mmap::Map;

use super::block::{decode_block, Block, BlockCache, Lookup};
use super::header::{Compression, LogHeader, LOG_HEADER_LEN};

/// Default byte budget of the decoded-block cache used by lookups in compressed logs.
pub const DEFAULT_BLOCK_CACHE_BYTES: usize = 64 << 20;

/// The kind of a log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A key was set to a value.
    Put,
    /// A key was removed.
    Delete,
}

/// One entry of a log, as returned by [`LogIter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// PUT or DELETE.
    pub kind: EntryKind,
    /// The key.
    pub key: Vec<u8>,
    /// The value (empty for a DELETE).
    pub value: Vec<u8>,
}

/// An open log file.
#[derive(Debug, Clone)]
pub struct LogReader {
    pub(crate) inner: Arc<LogInner>,
}

#[derive(Debug)]
pub(crate) struct LogInner {
    pub(crate) path: PathBuf,
    pub(crate) header: LogHeader,
    pub(crate) map: Map,
    pub(crate) cache: BlockCache,
    /// True if the log was copied into memory at open (`load`), not mapped.
    pub(crate) loaded: bool,
}

/// Reads the header of the log at `path` without mapping it.
pub fn read_log_header(path: &Path) -> Result<(File, LogHeader)> {
    let mut file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let file_len = file
        .metadata()
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    let mut buf = Vec::with_capacity(LOG_HEADER_LEN as usize);
    (&mut file)
        .take(LOG_HEADER_LEN)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, "read", e))?;
    let header = LogHeader::decode(path, &buf, file_len)?;
    Ok((file, header))
}

impl LogReader {
    /// Opens the log at `path` with the default block cache.
    ///
    /// # Errors
    /// I/O errors, `Corruption` for a damaged header, `UnsupportedVersion`.
    pub fn open(path: impl AsRef<Path>) -> Result<LogReader> {
        LogReader::open_with_cache(path, DEFAULT_BLOCK_CACHE_BYTES)
    }

    /// Opens the log at `path` with a decoded-block cache of `cache_bytes` (compressed logs).
    pub fn open_with_cache(path: impl AsRef<Path>, cache_bytes: usize) -> Result<LogReader> {
        LogReader::open_inner(path.as_ref(), cache_bytes, false)
    }

    /// Opens the log; `load` copies it into memory (see [`crate::hash::ReadOptions::load_log`]).
    ///
    /// Without the `zstd` feature a Zstandard-compressed log is refused here, before any
    /// block is read: `Error::FeatureDisabled`.
    pub(crate) fn open_inner(path: &Path, cache_bytes: usize, load: bool) -> Result<LogReader> {
        let (file, header) = read_log_header(path)?;
        #[cfg(not(feature = "zstd"))]
        if header.compression == Compression::Zstd {
            return Err(Error::zstd_disabled(format!(
                "reading Zstandard-compressed log file {}",
                path.display()
            )));
        }
        let map = if load {
            Map::load(&file, header.data_end)
                .map_err(|e| Error::io(path, "load", e))?
                .0
        } else {
            Map::new(&file, header.data_end).map_err(|e| Error::io(path, "mmap", e))?
        };
        let cache_bytes = if header.compression == Compression::None {
            0
        } else {
            cache_bytes
        };
        let cache = BlockCache::for_blocks_of(cache_bytes, header.block_size as usize);
        Ok(LogReader {
            inner: Arc::new(LogInner {
                path: path.to_path_buf(),
                header,
                map,
                cache,
                loaded: load,
            }),
        })
    }

    /// The header as it was when the log was opened.
    pub fn header(&self) -> &LogHeader {
        &self.inner.header
    }

    /// The path the log was opened with.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Iterates every entry (PUT and DELETE) in file order, up to `data_end`.
    pub fn iter(&self) -> LogIter {
        LogIter {
            raw: RawIter::new(Arc::clone(&self.inner), self.inner.header.data_end),
        }
    }

    /// Hints the kernel to read the mapped log ahead (sequential scans) or not (lookups).
    pub(crate) fn advise_random(&self) {
        self.inner.map.advise_random();
    }
}

/// Iterator over every entry of a log; yields `Err` once and then stops if the log is
/// damaged.
#[derive(Debug)]
pub struct LogIter {
    raw: RawIter,
}

impl Iterator for LogIter {
    type Item = Result<LogEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.raw.next_raw(true) {
            Ok(Some(e)) => Some(Ok(LogEntry {
                kind: e.kind,
                key: std::mem::take(&mut self.raw.key),
                value: std::mem::take(&mut self.raw.value),
            })),
            Ok(None) => None,
            Err(err) => Some(Err(err)),
        }
    }
}

/// Lengths of a decoded entry header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryHead {
    pub kind: EntryKind,
    pub key_len: u64,
    pub value_len: u64,
    /// Bytes of the two VLQs.
    pub head_len: u64,
}

impl EntryHead {
    fn from_vlqs(a: u64, b: u64, head_len: u64) -> EntryHead {
        if a == 0 {
            EntryHead {
                kind: EntryKind::Delete,
                key_len: b,
                value_len: 0,
                head_len,
            }
        } else {
            EntryHead {
                kind: EntryKind::Put,
                key_len: a - 1,
                value_len: b,
                head_len,
            }
        }
    }

    /// Bytes the entry occupies in the uncompressed entry stream.
    pub fn encoded_len(&self) -> Option<u64> {
        self.head_len
            .checked_add(self.key_len)?
            .checked_add(self.value_len)
    }
}

impl LogInner {
    pub(crate) fn corrupt(&self, offset: u64, reason: Reason) -> Error {
        Error::corruption(FileKind::SparkeyLog, &self.path, offset, reason)
    }

    fn vlq_err(&self, offset: u64, e: VlqError) -> Error {
        match e {
            VlqError::Truncated => self.corrupt(offset, Reason::Truncated),
            VlqError::Overflow => self.corrupt(offset, Reason::BadVarint),
        }
    }

    /// Decodes the entry header at file offset `off` of an uncompressed log and checks
    /// that the whole entry lies before `limit`.
    #[inline]
    pub(crate) fn plain_head(&self, off: u64, limit: u64) -> Result<EntryHead> {
        let bytes = self.map.bytes();
        let start =
            usize::try_from(off).map_err(|_| self.corrupt(off, Reason::LengthOutOfRange))?;
        let limit_usize = usize::try_from(limit.min(bytes.len() as u64)).unwrap_or(bytes.len());
        let window = bytes
            .get(start..limit_usize)
            .ok_or_else(|| self.corrupt(off, Reason::LengthOutOfRange))?;
        let (a, n1) = get_vlq(window).map_err(|e| self.vlq_err(off, e))?;
        let (b, n2) = get_vlq(window.get(n1..).unwrap_or(&[]))
            .map_err(|e| self.vlq_err(off + n1 as u64, e))?;
        let head = EntryHead::from_vlqs(a, b, (n1 + n2) as u64);
        match head.encoded_len() {
            Some(len) if len <= window.len() as u64 => Ok(head),
            _ => Err(self.corrupt(off, Reason::Truncated)),
        }
    }

    /// Loads the block at `offset`, through the cache when `cached` (which may decline to
    /// keep it, see `BlockCache`). Blocks that enter the cache carry their entry-start
    /// table; others are read once, so locating an entry in them walks from the start
    /// (no cheaper than building the table, and no allocation).
    pub(crate) fn block(&self, offset: u64, cached: bool) -> Result<Block> {
        let admit = if cached {
            match self.cache.lookup(offset) {
                Lookup::Hit(block) => return Ok(block),
                Lookup::Miss { admit } => admit,
            }
        } else {
            false
        };
        let h = &self.header;
        let block = decode_block(
            &self.path,
            self.map.bytes(),
            offset,
            h.compression,
            h.block_size,
            admit,
        )?;
        if admit {
            self.cache.insert_admitted(offset, block.clone());
        }
        Ok(block)
    }
}

/// A read position in the entry stream of a compressed log.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    /// File offset of the current block.
    pub block_offset: u64,
    block: Block,
    pos: usize,
    cached: bool,
}

impl Stream {
    /// Positions at the start of the block at `offset`.
    pub(crate) fn at_block(log: &LogInner, offset: u64, cached: bool) -> Result<Stream> {
        Stream::load(log, offset, cached)
    }

    fn load(log: &LogInner, offset: u64, cached: bool) -> Result<Stream> {
        if offset < LOG_HEADER_LEN || offset >= log.header.data_end {
            return Err(log.corrupt(offset, Reason::LengthOutOfRange));
        }
        let block = log.block(offset, cached)?;
        Ok(Stream {
            block_offset: offset,
            block,
            pos: 0,
            cached,
        })
    }

    /// Positions at the start of the `index`-th entry starting in the block at `offset`.
    pub(crate) fn at_entry(
        log: &LogInner,
        offset: u64,
        index: u64,
        cached: bool,
    ) -> Result<Stream> {
        let mut s = Stream::load(log, offset, cached)?;
        s.pos = s.block.entry_start(index).ok_or_else(|| {
            log.corrupt(
                offset,
                Reason::BadEntry("entry address points past the entries of its block"),
            )
        })?;
        Ok(s)
    }

    /// Moves to the next non-empty block if the current one is exhausted. Returns false
    /// at the end of the log. Inlined: most calls find the block not exhausted.
    #[inline]
    pub(crate) fn fill(&mut self, log: &LogInner) -> Result<bool> {
        if self.pos < self.block.data().len() {
            return Ok(true);
        }
        self.next_block(log)
    }

    /// [`Stream::fill`] once the current block is exhausted (kept out of line, so `fill`
    /// stays small enough to inline).
    #[inline(never)]
    fn next_block(&mut self, log: &LogInner) -> Result<bool> {
        while self.pos >= self.block.data().len() {
            let off = self.block.next_offset();
            if off >= log.header.data_end {
                return Ok(false);
            }
            self.block = log.block(off, self.cached)?;
            self.block_offset = off;
            self.pos = 0;
        }
        Ok(true)
    }

    fn rest(&self) -> &[u8] {
        self.block.data().get(self.pos..).unwrap_or(&[])
    }

    pub(crate) fn read_vlq(&mut self, log: &LogInner) -> Result<u64> {
        if !self.fill(log)? {
            return Err(log.corrupt(self.block_offset, Reason::Truncated));
        }
        match get_vlq(self.rest()) {
            Ok((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            Err(VlqError::Overflow) => Err(log.corrupt(self.block_offset, Reason::BadVarint)),
            Err(VlqError::Truncated) => {
                // A VLQ split across blocks: never written by Sparkey writers, but legal
                // to decode.
                let mut buf = [0u8; MAX_VLQ_LEN];
                let mut n = 0;
                while n < MAX_VLQ_LEN {
                    if !self.fill(log)? {
                        return Err(log.corrupt(self.block_offset, Reason::Truncated));
                    }
                    let b = self.rest().first().copied().unwrap_or(0);
                    self.pos += 1;
                    if let Some(slot) = buf.get_mut(n) {
                        *slot = b;
                    }
                    n += 1;
                    if b < 0x80 {
                        break;
                    }
                }
                get_vlq(buf.get(..n).unwrap_or(&[]))
                    .map(|(v, _)| v)
                    .map_err(|e| log.vlq_err(self.block_offset, e))
            }
        }
    }

    pub(crate) fn read_head(&mut self, log: &LogInner) -> Result<EntryHead> {
        let a = self.read_vlq(log)?;
        let b = self.read_vlq(log)?;
        // Head length is only used for garbage accounting; recompute it canonically.
        let head_len = (crate::coding::vlq_len(a) + crate::coding::vlq_len(b)) as u64;
        Ok(EntryHead::from_vlqs(a, b, head_len))
    }

    /// Appends the next `n` bytes of the stream to `out`.
    pub(crate) fn read_into(
        &mut self,
        log: &LogInner,
        mut n: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        while n > 0 {
            if !self.fill(log)? {
                return Err(log.corrupt(self.block_offset, Reason::Truncated));
            }
            let rest = self.rest();
            let take = (rest.len() as u64).min(n) as usize;
            out.extend_from_slice(rest.get(..take).unwrap_or(&[]));
            self.pos += take;
            n -= take as u64;
        }
        Ok(())
    }

    /// Skips the next `n` bytes of the stream.
    pub(crate) fn skip(&mut self, log: &LogInner, mut n: u64) -> Result<()> {
        while n > 0 {
            if !self.fill(log)? {
                return Err(log.corrupt(self.block_offset, Reason::Truncated));
            }
            let take = (self.rest().len() as u64).min(n) as usize;
            self.pos += take;
            n -= take as u64;
        }
        Ok(())
    }

    /// The next at most `max` bytes of the stream that lie in the current block (moving
    /// to the next block first if this one is exhausted), consumed. Empty only if `max`
    /// is 0.
    ///
    /// # Errors
    /// `Corruption` (`Truncated`) if the log ends first; block decoding errors.
    pub(crate) fn chunk(&mut self, log: &LogInner, max: u64) -> Result<&[u8]> {
        if max == 0 {
            return Ok(&[]);
        }
        if !self.fill(log)? {
            return Err(log.corrupt(self.block_offset, Reason::Truncated));
        }
        let start = self.pos;
        let take = (self.rest().len() as u64).min(max) as usize;
        self.pos += take;
        Ok(self.block.data().get(start..start + take).unwrap_or(&[]))
    }

    /// Consumes the next `key.len()` bytes and tells whether they equal `key`.
    pub(crate) fn consume_eq(&mut self, log: &LogInner, key: &[u8]) -> Result<bool> {
        let mut remaining = key;
        let mut equal = true;
        while !remaining.is_empty() {
            if !self.fill(log)? {
                return Err(log.corrupt(self.block_offset, Reason::Truncated));
            }
            let rest = self.rest();
            let take = rest.len().min(remaining.len());
            let (want, tail) = remaining.split_at(take);
            equal &= rest.get(..take) == Some(want);
            self.pos += take;
            remaining = tail;
        }
        Ok(equal)
    }
}

/// One entry as decoded by [`RawIter`]; its key (and value, if asked for) are in the
/// iterator's `key` / `value` buffers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawEntry {
    pub kind: EntryKind,
    /// Uncompressed: the entry's file offset. Compressed: its block's file offset.
    pub position: u64,
    /// Index of the entry among those starting in its block (0 when uncompressed).
    pub index_in_block: u64,
    pub key_len: u64,
    pub value_len: u64,
    pub encoded_len: u64,
}

impl RawEntry {
    /// The entry's address with `bits` bits of in-block index (see FORMAT.md).
    #[inline]
    pub fn address(&self, bits: u32) -> u64 {
        if bits == 0 {
            self.position
        } else {
            (self.position << bits) | self.index_in_block
        }
    }
}

/// `in_block` of a [`Where::Blocks`] positioned in the block holding the tail of an entry
/// that spanned blocks (no entry may start there).
const AFTER_TAIL: u64 = u64::MAX;

#[derive(Debug)]
enum Where {
    Plain {
        offset: u64,
    },
    Blocks {
        stream: Option<Stream>,
        block: u64,
        in_block: u64,
    },
    Done,
}

/// Walks the entries of a log in file order, decoding into reusable buffers.
#[derive(Debug)]
pub(crate) struct RawIter {
    log: Arc<LogInner>,
    /// Entries (uncompressed) or blocks (compressed) starting at or after this offset are
    /// not visited.
    limit: u64,
    at: Where,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

impl RawIter {
    pub(crate) fn new(log: Arc<LogInner>, limit: u64) -> RawIter {
        let limit = limit.min(log.header.data_end);
        let at = if log.header.compression == Compression::None {
            Where::Plain {
                offset: LOG_HEADER_LEN,
            }
        } else {
            Where::Blocks {
                stream: None,
                block: 0,
                in_block: 0,
            }
        };
        RawIter {
            log,
            limit,
            at,
            key: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decodes the next entry; copies the value only if `want_value`.
    pub(crate) fn next_raw(&mut self, want_value: bool) -> Result<Option<RawEntry>> {
        let r = self.step(want_value);
        if !matches!(r, Ok(Some(_))) {
            self.at = Where::Done;
        }
        r
    }

    fn step(&mut self, want_value: bool) -> Result<Option<RawEntry>> {
        let log = &*self.log;
        self.key.clear();
        self.value.clear();
        match &mut self.at {
            Where::Done => Ok(None),
            Where::Plain { offset } => {
                let off = *offset;
                if off >= self.limit {
                    return Ok(None);
                }
                let head = log.plain_head(off, log.header.data_end)?;
                let encoded_len = head.encoded_len().unwrap_or(u64::MAX);
                let key_start = (off + head.head_len) as usize;
                let bytes = log.map.bytes();
                let key_end = key_start + head.key_len as usize;
                self.key
                    .extend_from_slice(bytes.get(key_start..key_end).unwrap_or(&[]));
                if want_value {
                    let value_end = key_end + head.value_len as usize;
                    self.value
                        .extend_from_slice(bytes.get(key_end..value_end).unwrap_or(&[]));
                }
                *offset = off + encoded_len;
                Ok(Some(RawEntry {
                    kind: head.kind,
                    position: off,
                    index_in_block: 0,
                    key_len: head.key_len,
                    value_len: head.value_len,
                    encoded_len,
                }))
            }
            Where::Blocks {
                stream,
                block,
                in_block,
            } => {
                let s = match stream {
                    Some(s) => s,
                    None => {
                        if LOG_HEADER_LEN >= self.limit {
                            return Ok(None);
                        }
                        stream.insert(Stream::at_block(log, LOG_HEADER_LEN, false)?)
                    }
                };
                if !s.fill(log)? || s.block_offset >= self.limit {
                    return Ok(None);
                }
                if s.block_offset != *block {
                    *block = s.block_offset;
                    *in_block = 0;
                } else if *in_block == AFTER_TAIL {
                    // Writers close the block holding the tail of an entry that spans
                    // blocks (FORMAT.md, block packing), because an address counts entries
                    // from the start of its block, where that tail is: an entry starting
                    // after a tail has no address, and indexing it would send lookups to
                    // the wrong bytes (a present key would read as absent).
                    return Err(log.corrupt(
                        s.block_offset,
                        Reason::BadEntry(
                            "an entry starts in the block holding the tail of the previous entry",
                        ),
                    ));
                }
                let position = s.block_offset;
                let index_in_block = *in_block;
                let head = s.read_head(log)?;
                let encoded_len = head
                    .encoded_len()
                    .ok_or_else(|| log.corrupt(position, Reason::LengthOutOfRange))?;
                s.read_into(log, head.key_len, &mut self.key)?;
                if want_value {
                    s.read_into(log, head.value_len, &mut self.value)?;
                } else {
                    s.skip(log, head.value_len)?;
                }
                *in_block += 1;
                if s.block_offset != position {
                    // The entry spanned blocks: no entry may start in the rest of this one.
                    *block = s.block_offset;
                    *in_block = AFTER_TAIL;
                }
                Ok(Some(RawEntry {
                    kind: head.kind,
                    position,
                    index_in_block,
                    key_len: head.key_len,
                    value_len: head.value_len,
                    encoded_len,
                }))
            }
        }
    }
}

/// An entry found at an index address, positioned at the start of its key.
#[derive(Debug)]
pub(crate) enum Located {
    /// Uncompressed log: the key starts at this file offset.
    Plain { key_offset: u64, head: EntryHead },
    /// Compressed log: the stream is at the first key byte.
    Stream { stream: Stream, head: EntryHead },
}

impl Located {
    pub(crate) fn head(&self) -> EntryHead {
        match self {
            Located::Plain { head, .. } | Located::Stream { head, .. } => *head,
        }
    }
}

impl LogInner {
    /// Finds the PUT entry at index address `addr` (`bits` of in-block index); the entry
    /// must start before `limit`. A DELETE there means the index is corrupt.
    pub(crate) fn locate(
        &self,
        addr: u64,
        bits: u32,
        limit: u64,
        cached: bool,
        index_path: &Path,
    ) -> Result<Located> {
        let bad_addr = || {
            Error::corruption(
                FileKind::SparkeyIndex,
                index_path,
                0,
                Reason::BadEntry("a slot address points outside the log data it covers"),
            )
        };
        let located = if self.header.compression == Compression::None {
            if addr < LOG_HEADER_LEN || addr >= limit {
                return Err(bad_addr());
            }
            let head = self.plain_head(addr, self.header.data_end)?;
            Located::Plain {
                key_offset: addr + head.head_len,
                head,
            }
        } else {
            let block = if bits == 0 { addr } else { addr >> bits };
            let index = if bits == 0 {
                0
            } else {
                addr & ((1u64 << bits) - 1)
            };
            if block < LOG_HEADER_LEN || block >= limit {
                return Err(bad_addr());
            }
            let mut stream = Stream::at_entry(self, block, index, cached)?;
            let head = stream.read_head(self)?;
            Located::Stream { stream, head }
        };
        if located.head().kind != EntryKind::Put {
            return Err(Error::corruption(
                FileKind::SparkeyIndex,
                index_path,
                0,
                Reason::BadEntry("a slot points at a DELETE entry"),
            ));
        }
        Ok(located)
    }

    /// If the PUT at `addr` has key `key`, its encoded length.
    pub(crate) fn put_matches(
        &self,
        addr: u64,
        bits: u32,
        limit: u64,
        key: &[u8],
        index_path: &Path,
    ) -> Result<Option<u64>> {
        let located = self.locate(addr, bits, limit, true, index_path)?;
        let head = located.head();
        if head.key_len != key.len() as u64 {
            return Ok(None);
        }
        let equal = match located {
            Located::Plain { key_offset, .. } => {
                let start = key_offset as usize;
                self.map.bytes().get(start..start + key.len()) == Some(key)
            }
            Located::Stream { mut stream, .. } => stream.consume_eq(self, key)?,
        };
        Ok(if equal { head.encoded_len() } else { None })
    }
}

impl RawIter {
    /// An iterator that starts at file offset `start` (an entry start when uncompressed,
    /// a block start when compressed) and stops before `limit`.
    pub(crate) fn starting_at(log: Arc<LogInner>, start: u64, limit: u64) -> Result<RawIter> {
        let mut it = RawIter::new(log, limit);
        let log = Arc::clone(&it.log);
        it.at = if start >= it.limit {
            Where::Done
        } else if log.header.compression == Compression::None {
            Where::Plain { offset: start }
        } else {
            Where::Blocks {
                stream: Some(Stream::at_block(&log, start, false)?),
                block: start,
                in_block: 0,
            }
        };
        Ok(it)
    }
}
