//! A cursor over a log: one entry at a time, its key and value read in pieces without
//! copying, with the positioning operations of the reference C API's log iterator (seek to
//! a block or entry start, rewind to the current key, position on a looked-up key, step
//! to the next live entry).
//!
//! [`LogIter`](super::LogIter) and [`HashIter`](super::HashIter) copy each entry out and
//! are what Rust callers want; a [`LogCursor`] exists for callers that must follow the
//! reference's `sparkey_logiter` contract exactly (the `libsparkey` C library) or that
//! stream values too large to copy.
//!
//! States ([`CursorState`]) are those of the reference: `New` (positioned before an entry
//! header), `Active` (an entry's header has been read; its key and value can be read),
//! `Closed` (end of the data) and `Invalid` (the last operation failed or a lookup found
//! nothing).
//!
//! Invariants:
//! * every byte read lies below the log's `data_end` as it was when the log was opened;
//!   lengths read from the file are checked before use (uncompressed entries must lie
//!   wholly before `data_end`; compressed streams fail with `Truncated` at the end);
//! * `key_left ≤ key_len` and `value_left ≤ value_len`; chunks never cross a block and never
//!   run past the part (key or value) being read;
//! * a chunk borrows the cursor, so it cannot outlive the next operation on it: the bytes
//!   are either in the log's map (kept alive by the cursor's reference to the log) or in a
//!   decoded block the cursor holds;
//! * no operation loops without consuming input: a value read on a cursor that is not
//!   `Active` fails at once (the reference skips key bytes first and can spin forever).
//!
//! Thread-safety: a cursor is `Send`, used by one thread at a time; it shares the log
//! (read-only) with every other reader of it.

use std::sync::Arc;

use crate::error::{Error, Reason, Result};

use super::header::{Compression, LOG_HEADER_LEN};
use super::log_reader::{EntryKind, Located, LogInner, LogReader, Stream};
use super::reader::Reader;

/// The state of a [`LogCursor`] (numbered as the reference's `sparkey_iter_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorState {
    /// Before an entry: [`LogCursor::advance`] reads its header.
    New,
    /// On an entry: its kind and lengths are known, its key and value can be read.
    Active,
    /// At the end of the data.
    Closed,
    /// An operation failed, or a lookup found nothing.
    Invalid,
}

/// Where the next unread byte is.
#[derive(Debug, Clone)]
enum At {
    /// Uncompressed log: this file offset.
    Plain(u64),
    /// Compressed log: the start of the block at this offset, not decoded yet.
    BlockStart(u64),
    /// Compressed log: a position inside a decoded block.
    Stream(Stream),
}

/// A cursor over the entries of one log; see the module documentation.
#[derive(Debug)]
pub struct LogCursor {
    log: Arc<LogInner>,
    state: CursorState,
    at: At,
    /// Where the current entry's key starts (for [`LogCursor::reset`]).
    key_start: At,
    kind: EntryKind,
    key_len: u64,
    value_len: u64,
    key_left: u64,
    value_left: u64,
    /// Uncompressed: the current entry's offset. Compressed: its block's offset.
    entry_position: u64,
    /// Index of the current entry among those starting in its block.
    entry_index: u64,
    /// Block whose entries `next_index` counts, and the index the next entry gets.
    count_block: u64,
    next_index: u64,
    /// Scratch for hashing keys that span blocks.
    key_buf: Vec<u8>,
}

impl LogCursor {
    /// A cursor before the first entry of `log` (state `New`).
    pub fn new(log: &LogReader) -> LogCursor {
        let inner = Arc::clone(&log.inner);
        let at = start_of(&inner);
        LogCursor {
            log: inner,
            state: CursorState::New,
            key_start: at.clone(),
            at,
            kind: EntryKind::Put,
            key_len: 0,
            value_len: 0,
            key_left: 0,
            value_left: 0,
            entry_position: 0,
            entry_index: 0,
            count_block: 0,
            next_index: 0,
            key_buf: Vec::new(),
        }
    }

    /// The current state.
    pub fn state(&self) -> CursorState {
        self.state
    }

    /// Kind of the current entry (meaningful when `Active`).
    pub fn kind(&self) -> EntryKind {
        self.kind
    }

    /// Key length of the current entry (0 unless `Active`).
    pub fn key_len(&self) -> u64 {
        self.key_len
    }

    /// Value length of the current entry (0 for a DELETE, and unless `Active`).
    pub fn value_len(&self) -> u64 {
        self.value_len
    }

    /// The file identifier of the log this cursor reads.
    pub fn file_identifier(&self) -> u32 {
        self.log.header.file_identifier
    }

    /// The address an index stores for the current entry, with `bits` bits of in-block
    /// index (0 for uncompressed logs).
    pub fn address(&self, bits: u32) -> u64 {
        if bits == 0 || self.log.header.compression == Compression::None {
            self.entry_position
        } else {
            (self.entry_position << bits) | self.entry_index
        }
    }

    fn clear_entry(&mut self) {
        self.key_len = 0;
        self.value_len = 0;
        self.key_left = 0;
        self.value_left = 0;
    }

    /// Moves to `position`: an entry start (uncompressed log) or a block start (compressed
    /// log), or the log's `data_end` (state `Closed`). State `New` otherwise.
    ///
    /// # Errors
    /// `InvalidArgument` for a position outside `84 ..= data_end`; for compressed logs,
    /// the errors of decoding the block there (a position that is not a block start
    /// usually fails to decode). The state is then `Invalid`.
    pub fn seek(&mut self, position: u64) -> Result<()> {
        self.clear_entry();
        self.state = CursorState::Invalid;
        let data_end = self.log.header.data_end;
        if position == data_end {
            self.state = CursorState::Closed;
            return Ok(());
        }
        if !(LOG_HEADER_LEN..data_end).contains(&position) {
            return Err(Error::invalid(format!(
                "seek position {position} is outside the log data {LOG_HEADER_LEN}..{data_end}"
            )));
        }
        self.at = if self.log.header.compression == Compression::None {
            At::Plain(position)
        } else {
            At::Stream(Stream::at_block(&self.log, position, false)?)
        };
        self.count_block = position;
        self.next_index = 0;
        self.state = CursorState::New;
        Ok(())
    }

    /// Skips the unread rest of the current entry and reads the next entry's header: state
    /// `Active`, or `Closed` at the end of the data. A `Closed` cursor stays `Closed`.
    ///
    /// # Errors
    /// Corruption of the log (state `Invalid`).
    pub fn advance(&mut self) -> Result<()> {
        if self.state == CursorState::Closed {
            return Ok(());
        }
        let (skip_key, skip_value) = if self.state == CursorState::Active {
            (self.key_left, self.value_left)
        } else {
            (0, 0)
        };
        self.state = CursorState::Invalid;
        self.clear_entry();
        let log = Arc::clone(&self.log);
        let data_end = log.header.data_end;
        match &mut self.at {
            At::Plain(offset) => {
                let off = offset
                    .checked_add(skip_key)
                    .and_then(|o| o.checked_add(skip_value))
                    .ok_or_else(|| log.corrupt(*offset, Reason::LengthOutOfRange))?;
                *offset = off;
                if off >= data_end {
                    self.state = CursorState::Closed;
                    return Ok(());
                }
                let head = log.plain_head(off, data_end)?;
                self.entry_position = off;
                self.entry_index = 0;
                self.at = At::Plain(off + head.head_len);
                self.set_entry(head.kind, head.key_len, head.value_len);
            }
            At::BlockStart(_) | At::Stream(_) => {
                let s = self.stream()?;
                let Some(s) = s else {
                    self.state = CursorState::Closed;
                    return Ok(());
                };
                s.skip(&log, skip_key)?;
                s.skip(&log, skip_value)?;
                if !s.fill(&log)? {
                    self.state = CursorState::Closed;
                    return Ok(());
                }
                let position = s.block_offset;
                let head = s.read_head(&log)?;
                head.encoded_len()
                    .ok_or_else(|| log.corrupt(position, Reason::LengthOutOfRange))?;
                if position != self.count_block {
                    self.count_block = position;
                    self.next_index = 0;
                }
                self.entry_position = position;
                self.entry_index = self.next_index;
                self.next_index += 1;
                self.set_entry(head.kind, head.key_len, head.value_len);
            }
        }
        Ok(())
    }

    /// The decoded stream of a compressed log, decoding the pending block first; `None`
    /// if the log has no block.
    fn stream(&mut self) -> Result<Option<&mut Stream>> {
        if let At::BlockStart(offset) = self.at {
            if offset >= self.log.header.data_end {
                return Ok(None);
            }
            self.at = At::Stream(Stream::at_block(&self.log, offset, false)?);
            self.count_block = offset;
            self.next_index = 0;
        }
        Ok(match &mut self.at {
            At::Stream(s) => Some(s),
            _ => None,
        })
    }

    fn set_entry(&mut self, kind: EntryKind, key_len: u64, value_len: u64) {
        self.kind = kind;
        self.key_len = key_len;
        self.value_len = value_len;
        self.key_left = key_len;
        self.value_left = value_len;
        self.key_start = self.at.clone();
        self.state = CursorState::Active;
    }

    fn require_active(&self) -> Result<()> {
        if self.state == CursorState::Active {
            Ok(())
        } else {
            Err(Error::invalid("the log cursor is not on an entry"))
        }
    }

    /// Rewinds to the start of the current entry's key: key and value are unread again.
    ///
    /// # Errors
    /// `InvalidArgument` unless `Active`.
    pub fn reset(&mut self) -> Result<()> {
        self.require_active()?;
        self.at = self.key_start.clone();
        self.key_left = self.key_len;
        self.value_left = self.value_len;
        Ok(())
    }

    /// Reads the next at most `max` bytes of the current key, without copying; empty once
    /// the key is exhausted. A chunk never crosses a block of a compressed log.
    ///
    /// # Errors
    /// `InvalidArgument` unless `Active`; corruption of the log.
    pub fn key_chunk(&mut self, max: u64) -> Result<&[u8]> {
        self.require_active()?;
        let take = self.key_left.min(max);
        let (chunk_len, chunk) = chunk_at(&self.log, &mut self.at, take)?;
        self.key_left -= chunk_len;
        Ok(chunk)
    }

    /// Discards the unread rest of the key, then reads the next at most `max` bytes of the
    /// value like [`LogCursor::key_chunk`].
    ///
    /// # Errors
    /// `InvalidArgument` unless `Active` (checked before anything is skipped); corruption.
    pub fn value_chunk(&mut self, max: u64) -> Result<&[u8]> {
        self.require_active()?;
        self.skip_key()?;
        let take = self.value_left.min(max);
        let (chunk_len, chunk) = chunk_at(&self.log, &mut self.at, take)?;
        self.value_left -= chunk_len;
        Ok(chunk)
    }

    fn skip_key(&mut self) -> Result<()> {
        let n = self.key_left;
        if n > 0 {
            match &mut self.at {
                At::Plain(off) => *off += n,
                At::Stream(s) => s.skip(&self.log, n)?,
                At::BlockStart(_) => {
                    return Err(Error::invalid("the log cursor is not on an entry"));
                }
            }
            self.key_left = 0;
        }
        Ok(())
    }

    /// Looks `key` up in `reader` and positions the cursor on its PUT with the key
    /// consumed (the value is read next; [`LogCursor::advance`] continues with the entry
    /// after it). Returns false, state `Invalid`, if the key is absent. The cursor reads
    /// `reader`'s log from then on.
    ///
    /// # Errors
    /// Corruption of the index or the log (state `Invalid`).
    pub fn seek_key(&mut self, reader: &Reader, key: &[u8]) -> Result<bool> {
        self.state = CursorState::Invalid;
        self.clear_entry();
        self.bind(reader);
        let log = &*self.log;
        let bits = reader.address_bits();
        let limit = reader.header().data_end;
        let index_path = reader.index_path();
        let mut found = None;
        reader.probe(reader.hash_key(key), |addr| {
            let located = log.locate(addr, bits, limit, true, index_path)?;
            let head = located.head();
            if head.key_len != key.len() as u64 {
                return Ok(false);
            }
            let (start, after) = match located {
                Located::Plain { key_offset, .. } => {
                    let ks = key_offset as usize;
                    if log.map.bytes().get(ks..ks + key.len()) != Some(key) {
                        return Ok(false);
                    }
                    (
                        At::Plain(key_offset),
                        At::Plain(key_offset + key.len() as u64),
                    )
                }
                Located::Stream { stream, .. } => {
                    let start = stream.clone();
                    let mut s = stream;
                    if !s.consume_eq(log, key)? {
                        return Ok(false);
                    }
                    (At::Stream(start), At::Stream(s))
                }
            };
            found = Some((addr, head, start, after));
            Ok(true)
        })?;
        let Some((addr, head, start, after)) = found else {
            return Ok(false);
        };
        self.set_entry(head.kind, head.key_len, head.value_len);
        self.key_start = start;
        self.at = after;
        self.key_left = 0;
        if bits == 0 {
            self.entry_position = addr;
            self.entry_index = 0;
        } else {
            self.entry_position = addr >> bits;
            self.entry_index = addr & ((1u64 << bits) - 1);
        }
        self.count_block = self.entry_position;
        self.next_index = self.entry_index + 1;
        Ok(true)
    }

    /// Steps like [`LogCursor::advance`] but stops only on PUTs that `reader`'s index holds
    /// as live (the hash iterator's rule), rewound to the start of the key; `Closed` at the
    /// end. The cursor reads `reader`'s log from then on.
    ///
    /// # Errors
    /// Corruption of the log (state `Invalid`).
    pub fn next_live(&mut self, reader: &Reader) -> Result<()> {
        self.bind(reader);
        let bits = reader.address_bits();
        loop {
            self.advance()?;
            if self.state != CursorState::Active {
                return Ok(());
            }
            if self.kind != EntryKind::Put {
                continue;
            }
            let mut key = std::mem::take(&mut self.key_buf);
            key.clear();
            loop {
                let chunk = self.key_chunk(u64::MAX)?;
                if chunk.is_empty() {
                    break;
                }
                key.extend_from_slice(chunk);
            }
            let live = reader.is_live(reader.hash_key(&key), self.address(bits));
            self.key_buf = key;
            self.reset()?;
            if live {
                return Ok(());
            }
        }
    }

    /// Makes the cursor read `reader`'s log (same file identifier assumed by the caller).
    fn bind(&mut self, reader: &Reader) {
        let theirs = &reader.log().inner;
        if !Arc::ptr_eq(&self.log, theirs) {
            self.log = Arc::clone(theirs);
            self.at = start_of(&self.log);
            self.key_start = self.at.clone();
            self.state = CursorState::New;
            self.count_block = 0;
            self.next_index = 0;
        }
    }
}

fn start_of(log: &LogInner) -> At {
    if log.header.compression == Compression::None {
        At::Plain(LOG_HEADER_LEN)
    } else {
        At::BlockStart(LOG_HEADER_LEN)
    }
}

/// Reads up to `take` bytes at `at` (at most to the end of a block); returns the count and
/// the bytes.
fn chunk_at<'a>(log: &'a LogInner, at: &'a mut At, take: u64) -> Result<(u64, &'a [u8])> {
    if take == 0 {
        return Ok((0, &[]));
    }
    match at {
        At::Plain(off) => {
            let start = *off;
            let end = start
                .checked_add(take)
                .filter(|&e| e <= log.header.data_end)
                .ok_or_else(|| log.corrupt(start, Reason::Truncated))?;
            let bytes = log
                .map
                .bytes()
                .get(start as usize..end as usize)
                .ok_or_else(|| log.corrupt(start, Reason::Truncated))?;
            *off = end;
            Ok((take, bytes))
        }
        At::Stream(s) => {
            let chunk = s.chunk(log, take)?;
            Ok((chunk.len() as u64, chunk))
        }
        At::BlockStart(offset) => Err(log.corrupt(*offset, Reason::Truncated)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{write_index, IndexOptions, LogOptions, LogWriter};

    fn read_all(c: &mut LogCursor, value: bool, max: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let chunk = if value {
                c.value_chunk(max)
            } else {
                c.key_chunk(max)
            };
            match chunk {
                Ok(b) if !b.is_empty() => out.extend_from_slice(b),
                _ => return out,
            }
        }
    }

    fn build(dir: &std::path::Path, compression: Compression) -> Result<Reader> {
        let (log, index) = (dir.join("c.spl"), dir.join("c.spi"));
        let options = LogOptions::default().compression(compression, 16);
        let mut w = LogWriter::create(&log, &options)?;
        w.put(b"k1", b"v1")?;
        w.put(b"k2", b"value-longer-than-block!")?;
        w.delete(b"k1")?;
        w.put(b"key-three-long", b"v3")?;
        w.close()?;
        write_index(&index, &log, &IndexOptions::default())?;
        Reader::open(&index, &log)
    }

    fn each_compression(f: impl Fn(Reader) -> Result<()>) -> Result<()> {
        for compression in [Compression::None, Compression::Snappy] {
            let dir = tempfile::tempdir().map_err(|e| Error::invalid(e.to_string()))?;
            f(build(dir.path(), compression)?)?;
        }
        Ok(())
    }

    #[test]
    fn walks_every_entry_in_chunks() -> Result<()> {
        each_compression(|r| {
            let mut c = LogCursor::new(r.log());
            assert_eq!(c.state(), CursorState::New);
            let mut seen = Vec::new();
            loop {
                c.advance()?;
                if c.state() != CursorState::Active {
                    break;
                }
                let key = read_all(&mut c, false, 3);
                let value = read_all(&mut c, true, 5);
                assert_eq!(key.len() as u64, c.key_len());
                assert_eq!(value.len() as u64, c.value_len());
                seen.push((c.kind(), key, value));
            }
            assert_eq!(c.state(), CursorState::Closed);
            c.advance()?;
            assert_eq!(c.state(), CursorState::Closed);
            let expected = vec![
                (EntryKind::Put, b"k1".to_vec(), b"v1".to_vec()),
                (
                    EntryKind::Put,
                    b"k2".to_vec(),
                    b"value-longer-than-block!".to_vec(),
                ),
                (EntryKind::Delete, b"k1".to_vec(), Vec::new()),
                (EntryKind::Put, b"key-three-long".to_vec(), b"v3".to_vec()),
            ];
            assert_eq!(seen, expected);
            Ok(())
        })
    }

    #[test]
    fn value_read_skips_the_key_and_reset_rewinds() -> Result<()> {
        each_compression(|r| {
            let mut c = LogCursor::new(r.log());
            c.advance()?;
            c.advance()?;
            assert_eq!(c.key_chunk(1)?, b"k");
            assert_eq!(read_all(&mut c, true, 100), b"value-longer-than-block!");
            c.reset()?;
            assert_eq!(read_all(&mut c, false, 100), b"k2");
            c.reset()?;
            assert_eq!(read_all(&mut c, true, 100), b"value-longer-than-block!");
            c.advance()?;
            assert_eq!(
                (c.kind(), c.key_len(), c.value_len()),
                (EntryKind::Delete, 2, 0)
            );
            Ok(())
        })
    }

    #[test]
    fn inactive_cursors_refuse_reads_at_once() -> Result<()> {
        each_compression(|r| {
            let mut c = LogCursor::new(r.log());
            assert!(c.value_chunk(10).is_err());
            assert!(c.key_chunk(10).is_err());
            assert!(c.reset().is_err());
            assert_eq!(c.state(), CursorState::New);
            Ok(())
        })
    }

    #[test]
    fn lookups_position_on_the_value_and_next_continues() -> Result<()> {
        each_compression(|r| {
            let mut c = LogCursor::new(r.log());
            assert!(c.seek_key(&r, b"k2")?);
            assert_eq!(c.state(), CursorState::Active);
            assert_eq!(c.key_chunk(10)?, b"");
            assert_eq!(read_all(&mut c, true, 7), b"value-longer-than-block!");
            c.advance()?;
            assert_eq!(c.kind(), EntryKind::Delete);
            assert_eq!(read_all(&mut c, false, 10), b"k1");
            assert!(!c.seek_key(&r, b"k1")?);
            assert_eq!(c.state(), CursorState::Invalid);
            assert!(!c.seek_key(&r, b"absent")?);
            assert!(c.seek_key(&r, b"key-three-long")?);
            c.reset()?;
            assert_eq!(read_all(&mut c, false, 4), b"key-three-long");
            Ok(())
        })
    }

    #[test]
    fn live_steps_skip_deleted_and_superseded_entries() -> Result<()> {
        each_compression(|r| {
            let mut c = LogCursor::new(r.log());
            let mut keys = Vec::new();
            loop {
                c.next_live(&r)?;
                if c.state() != CursorState::Active {
                    break;
                }
                keys.push(read_all(&mut c, false, 100));
            }
            assert_eq!(keys, [b"k2".to_vec(), b"key-three-long".to_vec()]);
            Ok(())
        })
    }

    /// Walks every entry with small chunks; returns the number of steps taken. Bounded, so
    /// a cursor that stopped consuming input would fail the test instead of hanging it.
    fn walk(c: &mut LogCursor) -> usize {
        for steps in 0..10_000 {
            if c.advance().is_err() || c.state() != CursorState::Active {
                return steps;
            }
            let _ = read_all(c, false, 3);
            let _ = read_all(c, true, 5);
        }
        usize::MAX
    }

    #[test]
    fn damaged_logs_give_errors_not_panics_or_hangs() -> Result<()> {
        for compression in [Compression::None, Compression::Snappy] {
            let dir = tempfile::tempdir().map_err(|e| Error::invalid(e.to_string()))?;
            let r = build(dir.path(), compression)?;
            let bytes = std::fs::read(dir.path().join("c.spl"))
                .map_err(|e| Error::invalid(e.to_string()))?;
            let damaged = dir.path().join("d.spl");
            for at in LOG_HEADER_LEN as usize..bytes.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut copy = bytes.clone();
                    if let Some(b) = copy.get_mut(at) {
                        *b ^= flip;
                    }
                    std::fs::write(&damaged, &copy).map_err(|e| Error::invalid(e.to_string()))?;
                    let Ok(log) = LogReader::open(&damaged) else {
                        continue;
                    };
                    let mut c = LogCursor::new(&log);
                    assert!(walk(&mut c) < 10_000, "walk did not end (byte {at})");
                    for position in 0..=log.header().data_end + 1 {
                        if c.seek(position).is_ok() {
                            assert!(walk(&mut c) < 10_000, "walk from {position} did not end");
                        }
                    }
                }
            }
            // Every position of the undamaged log, including ones inside entries.
            let mut c = LogCursor::new(r.log());
            for position in 0..=r.log().header().data_end {
                if c.seek(position).is_ok() {
                    assert!(walk(&mut c) < 10_000);
                }
            }
        }
        Ok(())
    }

    #[test]
    fn seek_checks_the_position() -> Result<()> {
        each_compression(|r| {
            let mut c = LogCursor::new(r.log());
            let end = r.log().header().data_end;
            c.seek(end)?;
            assert_eq!(c.state(), CursorState::Closed);
            assert!(c.seek(end + 1).is_err());
            assert!(c.seek(3).is_err());
            assert_eq!(c.state(), CursorState::Invalid);
            c.seek(LOG_HEADER_LEN)?;
            assert_eq!(c.state(), CursorState::New);
            c.advance()?;
            assert_eq!(read_all(&mut c, false, 10), b"k1");
            Ok(())
        })
    }
}
