//! Blocks: the sorted, prefix-compressed runs of entries that data and index blocks are
//! made of (FORMAT.md §4.2). [`BlockBuilder`] encodes one; [`Block`] validates a decoded
//! block's framing once; [`BlockCursor`] walks it in both directions.
//!
//! Grammar of a raw (decompressed) block:
//!
//! ```text
//! block    := entry+ restart[n] n:u32
//! entry    := shared:VLQ unshared:VLQ value_len:VLQ key_delta[unshared] value[value_len]
//! restart  := u32       offset of an entry with shared = 0 (a full key)
//! ```
//!
//! An entry's key is the first `shared` bytes of the previous entry's key followed by
//! `key_delta`. Every `restart_interval`-th entry is a restart point: it stores its whole
//! key, and its offset is listed in the restart array, so a seek can binary-search the
//! restart keys and a backward step can re-decode from the previous restart point.
//!
//! Backward steps: entries can only be decoded forward from a restart point, so the first
//! backward step into a restart interval decodes the interval's entries once and remembers
//! each one passed (offset, value range and full key, in two buffers the cursor reuses);
//! further steps back take the remembered entries, last first, without decoding. A walk
//! backward therefore decodes each entry about once, like a walk forward. `seek_to_last`
//! and `seek_for_prev` remember the entries they pass too, since a backward walk usually
//! follows them. Any other move forgets them. The remembered entries always form a run of
//! the cursor's restart interval ending just before the current entry, so the step back
//! from the current entry is the last of them (or, with none, a decode from the restart).
//!
//! Seeks: a block with at most `GUIDE_MAX` restart points (data blocks of the usual
//! sizes) keeps a fence of each restart key in its header (`fences::Guide`), built once
//! by [`Block::decode`] (blocks that are walked once and dropped, decoded by
//! [`Block::decode_unguided`], go without); a seek narrows the restart points to search from it, so it
//! usually reads neither the restart array nor a restart key before walking the one
//! interval that holds its target (whose cache lines it prefetches first). Other blocks
//! (index blocks; their readers keep `Fences` apart) are binary-searched by restart keys.
//!
//! Invariants checked by [`Block::decode`]: `n >= 1`, the restart array fits, the first
//! restart is offset 0, restarts strictly increase and lie inside the entries. Checked by
//! the cursor as it decodes: every length stays inside the entries, `shared` never exceeds
//! the previous key, entries at restart points share nothing, no entry straddles a restart
//! point, and every key is at least as long as an internal-key trailer. Key order is not
//! re-checked on every step (blocks are checksummed); `Reader::verify` checks it.
//!
//! Layout: a [`Block`] is a small header (restart framing, guide, inline restart offsets)
//! beside the block's bytes, shared: an `Arc<[u8]>` of a decoded block, or a range of a
//! mapped table file for a block read in place ([`Block::decode_mapped`]). It is cloned by
//! value: the block
//! cache keeps the header inside its map slot, so a point read finds the guide in the slot
//! it has just probed, prefetches the interval it will walk, and only then touches the
//! bytes' allocation (whose reference count shares a cache line with the first entries).
//!
//! Thread-safety: a [`Block`] is immutable and its bytes shared; a cursor has one owner.

use std::cmp::Ordering;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use super::fences::{Guide, RestartKeys, GUIDE_MAX};
use crate::coding::{get_u32_le, put_vlq, Cursor as ByteCursor};
use crate::cursor::Cursor;
use crate::error::{Error, FileKind, Reason, Result};
use crate::key::{compare_encoded, compare_encoded_from, TRAILER_LEN};
use crate::mmap::Map;

/// Encodes one block; see the module documentation.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entry bytes after which the next entry starts a restart point even if fewer than
    /// `restart_interval` entries came since the last one.
    restart_bytes: usize,
    since_restart: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    /// An empty builder placing a restart point every `restart_interval` entries.
    ///
    /// Requires: `restart_interval >= 1`.
    pub(crate) fn new(restart_interval: usize) -> BlockBuilder {
        debug_assert!(restart_interval >= 1);
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval: restart_interval.max(1),
            restart_bytes: usize::MAX,
            since_restart: 0,
            last_key: Vec::new(),
        }
    }

    /// Also starts a restart point at the first entry that begins `bytes` or more after
    /// the last one (data blocks: see `RESTART_SPACING`).
    pub(crate) fn restart_every_bytes(mut self, bytes: usize) -> BlockBuilder {
        self.restart_bytes = bytes.max(1);
        self
    }

    /// True if no entry was added since the last [`BlockBuilder::finish`].
    pub(crate) fn is_empty(&self) -> bool {
        self.restarts.is_empty()
    }

    /// Bytes the block would have if finished now.
    pub(crate) fn estimated_len(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Appends an entry.
    ///
    /// Requires: `key` sorts after the previous key (the writer checks), and the finished
    /// block stays below 4 GiB (the writer keeps it below `MAX_BLOCK_LEN`).
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(self.is_empty() || compare_encoded(&self.last_key, key) == Ordering::Less);
        let since_bytes = self
            .buf
            .len()
            .saturating_sub(self.restarts.last().map_or(0, |&r| r as usize));
        let shared = if self.is_empty()
            || self.since_restart >= self.restart_interval
            || since_bytes >= self.restart_bytes
        {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        let delta = key.get(shared..).unwrap_or(&[]);
        put_vlq(&mut self.buf, shared as u64);
        put_vlq(&mut self.buf, delta.len() as u64);
        put_vlq(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(delta);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(delta);
        self.since_restart += 1;
    }

    /// Appends the restart array and count, returns the raw block and resets the builder.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        out.reserve(4 * self.restarts.len() + 4);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        out
    }
}

/// Bytes of a cache line.
const CACHE_LINE: usize = 64;

/// Where a walk over a block starts: what [`Block::prefetch_walk`] fetches.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Walk<'a> {
    /// At the first entry, going forward (its first [`WALK_AHEAD`] bytes).
    First,
    /// At the last entry, going backward (the last restart interval).
    Last,
    /// At the first entry at or after a target (its restart interval).
    To(&'a [u8]),
}

/// How far ahead of the entry it decodes a forward walk prefetches, in bytes.
const WALK_AHEAD: usize = 384;

/// Most bytes of a restart interval a seek prefetches before walking it.
const PREFETCH_MAX: usize = 2048;

/// A decoded block whose restart array has been validated.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    data: Bytes,
    /// Where the restart array starts (= end of the entries).
    restarts_offset: usize,
    restart_count: usize,
    /// The restart keys' fences, for blocks small enough to have them (data blocks of the
    /// usual sizes): seeks start from them.
    guide: Option<Guide>,
    /// The restart offsets again, beside the guide, for blocks of at most [`GUIDE_MAX`]
    /// restart points whose entries end below 64 KiB (`inline_restarts` of them, else 0):
    /// a seek or a step reads its restart offset from the header it has already touched
    /// instead of the restart array at the block's end, one dependent cache miss fewer.
    restarts: [u16; GUIDE_MAX],
    inline_restarts: usize,
}

/// Where a [`Block`]'s bytes live.
#[derive(Debug, Clone)]
enum Bytes {
    /// A block decoded (or copied) into its own allocation.
    Owned(Arc<[u8]>),
    /// Bytes `start..start + len` of a mapped table file (checked to lie inside it).
    Mapped {
        map: Arc<Map>,
        start: usize,
        len: usize,
    },
}

/// `Truncated` unless bytes `start..start + len` lie inside `map`.
fn check_in_map(map: &Map, start: usize, len: usize) -> std::result::Result<(), Reason> {
    match start.checked_add(len) {
        Some(end) if end <= map.bytes().len() => Ok(()),
        _ => Err(Reason::Truncated),
    }
}

impl Bytes {
    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(bytes) => bytes,
            // In range: checked when the block was made.
            Bytes::Mapped { map, start, len } => {
                map.bytes().get(*start..start + len).unwrap_or(&[])
            }
        }
    }
}

impl Block {
    /// Validates the framing of a raw block (see the module documentation).
    ///
    /// # Errors
    /// `Truncated` if the restart count or array does not fit, `BadEntry` for an empty
    /// block or restart offsets that are not strictly increasing from 0 inside the entries.
    pub(crate) fn decode(data: impl Into<Arc<[u8]>>) -> std::result::Result<Block, Reason> {
        let mut block = Block::decode_unguided(data)?;
        // A restart entry that does not decode leaves the block without a guide; seeks
        // then meet the damage themselves and report it, as they would without guides.
        block.guide = Guide::build(&block).ok().flatten();
        Ok(block)
    }

    /// As [`Block::decode`], without the guide: for a block that is walked and then
    /// dropped (a long scan's or a compaction's, never offered to the block cache), which
    /// would pay for decoding every restart key and never use the result. A seek in it
    /// binary-searches the restart keys.
    ///
    /// # Errors
    /// As [`Block::decode`].
    pub(crate) fn decode_unguided(
        data: impl Into<Arc<[u8]>>,
    ) -> std::result::Result<Block, Reason> {
        Block::frame(Bytes::Owned(data.into()))
    }

    /// As [`Block::decode_unguided`], for the raw block at bytes `start..start + len` of
    /// `map`, read where it lies: nothing is copied, and the block keeps the map alive.
    ///
    /// # Errors
    /// `Truncated` if the range is not inside the map; as [`Block::decode`].
    pub(crate) fn decode_mapped(
        map: Arc<Map>,
        start: usize,
        len: usize,
    ) -> std::result::Result<Block, Reason> {
        check_in_map(&map, start, len)?;
        Block::frame(Bytes::Mapped { map, start, len })
    }

    /// Validates the framing of the raw block `bytes` (see [`Block::decode`]).
    fn frame(bytes: Bytes) -> std::result::Result<Block, Reason> {
        let mut block = Block {
            data: bytes,
            restarts_offset: 0,
            restart_count: 0,
            guide: None,
            restarts: [0; GUIDE_MAX],
            inline_restarts: 0,
        };
        block.reframe()?;
        Ok(block)
    }

    /// Moves this block, read in place from a map, to the raw block at bytes
    /// `start..start + len` of the same `map`, framed anew: a walk across a mapped table's
    /// blocks takes no new reference to the map per block. `Ok(false)` (nothing changed)
    /// if this block does not lie in `map`.
    ///
    /// # Errors
    /// As [`Block::decode_mapped`]; the block is then unusable (its cursor must be dropped).
    pub(crate) fn reframe_mapped(
        &mut self,
        map: &Arc<Map>,
        start: usize,
        len: usize,
    ) -> std::result::Result<bool, Reason> {
        let Bytes::Mapped {
            map: own,
            start: own_start,
            len: own_len,
        } = &mut self.data
        else {
            return Ok(false);
        };
        if !Arc::ptr_eq(own, map) {
            return Ok(false);
        }
        check_in_map(map, start, len)?;
        *own_start = start;
        *own_len = len;
        self.reframe()?;
        Ok(true)
    }

    /// Validates the framing of the block's bytes and sets the fields derived from it (no
    /// guide).
    fn reframe(&mut self) -> std::result::Result<(), Reason> {
        self.guide = None;
        self.restart_count = 0;
        self.restarts_offset = 0;
        self.inline_restarts = 0;
        let data = self.data.as_slice();
        let count_at = data.len().checked_sub(4).ok_or(Reason::Truncated)?;
        let count = get_u32_le(data, count_at).ok_or(Reason::Truncated)? as usize;
        let restarts_offset = count
            .checked_mul(4)
            .and_then(|len| count_at.checked_sub(len))
            .ok_or(Reason::Truncated)?;
        if count == 0 || restarts_offset == 0 {
            return Err(Reason::BadEntry("block holds no entries"));
        }
        let array = data
            .get(restarts_offset..count_at)
            .ok_or(Reason::Truncated)?;
        // One pass over the array checks it and, for a block small enough, copies it
        // inline: this runs on every read of a block read in place.
        let inline = count <= GUIDE_MAX && restarts_offset <= usize::from(u16::MAX);
        let mut prev = 0;
        for (i, bytes) in array.chunks_exact(4).enumerate() {
            // Four bytes each (`chunks_exact`); `u32::MAX` would fail the check below.
            let r = get_u32_le(bytes, 0).unwrap_or(u32::MAX) as usize;
            let ok = if i == 0 {
                r == 0
            } else {
                r > prev && r < restarts_offset
            };
            if !ok {
                return Err(Reason::BadEntry(
                    "block restart offsets do not increase from 0 inside the entries",
                ));
            }
            prev = r;
            if inline {
                if let Some(slot) = self.restarts.get_mut(i) {
                    // Fits: every restart lies below `restarts_offset` (checked above).
                    *slot = r as u16;
                }
            }
        }
        self.restarts_offset = restarts_offset;
        self.restart_count = count;
        if inline {
            self.inline_restarts = count;
        }
        Ok(())
    }

    /// The restart points a seek for `target` must search (see `Fences::candidates`).
    fn seek_candidates(&self, target: &[u8]) -> (usize, usize) {
        match &self.guide {
            Some(guide) => guide.candidates(target),
            None => (0, self.restart_count.saturating_sub(1)),
        }
    }

    /// Bytes held (what the block cache charges, before its per-entry overhead).
    pub(crate) fn len(&self) -> usize {
        self.data().len()
    }

    /// The raw block.
    #[inline]
    fn data(&self) -> &[u8] {
        self.data.as_slice()
    }

    fn restart(&self, i: usize) -> usize {
        if i < self.inline_restarts {
            if let Some(&r) = self.restarts.get(i) {
                return usize::from(r);
            }
        }
        get_u32_le(self.data(), self.restarts_offset + 4 * i)
            .map_or(self.restarts_offset, |r| r as usize)
    }

    /// The bytes of restart interval `i` a prefetch covers: from its restart point to the
    /// next one (or the entries' end), at most [`PREFETCH_MAX`] of them.
    fn interval_span(&self, i: usize) -> (usize, usize) {
        let start = self.restart(i);
        let end = if i + 1 < self.restart_count {
            self.restart(i + 1)
        } else {
            self.restarts_offset
        };
        (start, end.min(start.saturating_add(PREFETCH_MAX)))
    }

    /// Hints the CPU to fetch the cache lines of restart interval `i` (up to
    /// [`PREFETCH_MAX`] bytes of it), which a seek then walks entry by entry: their misses
    /// overlap instead of coming one entry at a time.
    fn prefetch_interval(&self, i: usize) {
        let (start, end) = self.interval_span(i);
        // From the line after the first: the seek's first decode touches that one at once.
        self.prefetch_range(((start | (CACHE_LINE - 1)) + 1).min(end), end);
    }

    /// Hints the CPU to fetch the cache lines `walk` will read first: called on the header
    /// a cache lookup has just found, before the bytes' reference count is touched, so
    /// the misses overlap. For a seek, only when the guide narrows it to one interval.
    pub(crate) fn prefetch_walk(&self, walk: Walk) {
        let (start, end) = match walk {
            Walk::First => (0, WALK_AHEAD.min(self.restarts_offset)),
            Walk::Last => self.interval_span(self.restart_count.saturating_sub(1)),
            Walk::To(target) => match self.seek_candidates(target) {
                (lo, hi) if lo == hi => self.interval_span(lo),
                _ => return,
            },
        };
        self.prefetch_range(start, end);
    }

    /// Hints the CPU to fetch the cache lines of bytes `start..end`.
    fn prefetch_range(&self, start: usize, end: usize) {
        crate::mmap::prefetch_lines(self.data(), start, end.max(start + 1));
    }

    /// Restart points in the block (at least 1).
    pub(crate) fn restart_count(&self) -> usize {
        self.restart_count
    }

    /// The full key stored at restart point `i`.
    ///
    /// # Errors
    /// `BadEntry` if the entry there shares a prefix; the framing errors of a damaged entry.
    pub(crate) fn restart_key_at(&self, i: usize) -> std::result::Result<&[u8], Reason> {
        let entry = self.entry_at(self.restart(i))?;
        if entry.shared != 0 {
            return Err(Reason::BadEntry("block restart entry shares a prefix"));
        }
        Ok(self.bytes(entry.delta))
    }

    /// Decodes the entry framing at `off`.
    fn entry_at(&self, off: usize) -> std::result::Result<Entry, Reason> {
        let region = self
            .data()
            .get(off..self.restarts_offset)
            .ok_or(Reason::LengthOutOfRange)?;
        // Fast path: the three lengths are one byte each (keys and values under 128 bytes).
        if let Some(&[a, b, c]) = region.get(..3).and_then(|h| <&[u8; 3]>::try_from(h).ok()) {
            if (a | b | c) < 0x80 {
                let (shared, unshared, value_len) = (a as usize, b as usize, c as usize);
                let delta_start = off + 3;
                let value_start = delta_start + unshared;
                let next = value_start + value_len;
                if next > self.restarts_offset {
                    return Err(Reason::Truncated);
                }
                return Ok(Entry {
                    shared,
                    delta: (delta_start, unshared),
                    value: (value_start, value_len),
                    next,
                });
            }
        }
        let mut cur = ByteCursor::new(region);
        let len = |v: u64| usize::try_from(v).map_err(|_| Reason::LengthOutOfRange);
        let shared = len(cur.vlq()?)?;
        let unshared = len(cur.vlq()?)?;
        let value_len = len(cur.vlq()?)?;
        let delta_start = off + cur.position();
        cur.take(unshared)?;
        let value_start = off + cur.position();
        cur.take(value_len)?;
        Ok(Entry {
            shared,
            delta: (delta_start, unshared),
            value: (value_start, value_len),
            next: off + cur.position(),
        })
    }

    fn bytes(&self, (start, len): (usize, usize)) -> &[u8] {
        self.data().get(start..start + len).unwrap_or(&[])
    }
}

impl RestartKeys for Block {
    fn restart_count(&self) -> usize {
        Block::restart_count(self)
    }

    fn restart_key_at(&self, i: usize) -> std::result::Result<&[u8], Reason> {
        Block::restart_key_at(self, i)
    }
}

impl AsRef<Block> for Block {
    fn as_ref(&self) -> &Block {
        self
    }
}

impl crate::cache::Weigh for Block {
    fn weight(&self) -> usize {
        // The header lives in the cache's map slot: charged twice, for the slot and for
        // the empty slots a map keeps beside its full ones (it grows when 7/8 full, to
        // 7/16, so up to about one empty slot per full one).
        self.len() + 2 * std::mem::size_of::<Block>()
    }
}

/// The framing of one entry: ranges are (start, len) in the block.
struct Entry {
    shared: usize,
    delta: (usize, usize),
    value: (usize, usize),
    next: usize,
}

/// An entry a backward step can return to without decoding (see the module documentation):
/// its offset, where its key starts in `BlockCursor::behind_keys` (it ends where the next
/// remembered key starts, or at the buffer's end) and its value's range.
#[derive(Debug, Clone, Copy)]
struct Behind {
    offset: usize,
    key_start: usize,
    value: (usize, usize),
}

/// A [`Cursor`] over one block. Errors name `path` and `file_offset` (the block's offset in
/// its table file, since offsets inside a compressed block mean nothing on disk).
///
/// Cursors that outlive a call own their block and path (a [`Block`] clone and an
/// `Arc<Path>`, the defaults); a lookup in an index block borrows both.
#[derive(Debug)]
pub(crate) struct BlockCursor<B = Block, P = Arc<Path>> {
    block: B,
    path: P,
    file_offset: u64,
    /// Offset of the current entry (meaningful while `valid`).
    current: usize,
    /// Offset of the entry after the current one (where `parse_next` decodes).
    next: usize,
    /// The restart region holding the entry at `next`'s predecessor.
    restart_index: usize,
    key: Vec<u8>,
    /// How many bytes the current key shares with the one before it (its entry's
    /// `shared`; 0 at a restart point).
    shared: usize,
    value: (usize, usize),
    valid: bool,
    /// The entries of `restart_index`'s interval just before the current one, in block
    /// order (possibly none): what the next backward steps return.
    behind: Vec<Behind>,
    /// Their keys, one after another.
    behind_keys: Vec<u8>,
    /// After a backward step to a remembered entry: where its key starts in
    /// `behind_keys` (it runs to the end), lent from there instead of copied into `key`.
    /// `None`: the current key is in `key`.
    lent: Option<usize>,
    /// Entries decoded so far (tests check that walks decode each entry about once).
    #[cfg(test)]
    pub(super) decoded: usize,
    /// Times [`BlockCursor::reload_mapped`] moved it to another block.
    #[cfg(test)]
    pub(super) reloads: usize,
}

impl<B: AsRef<Block>, P: Deref<Target = Path>> BlockCursor<B, P> {
    /// An unpositioned cursor over `block`, which was read from `path` at `file_offset`.
    pub(crate) fn new(block: B, path: P, file_offset: u64) -> BlockCursor<B, P> {
        BlockCursor {
            block,
            path,
            file_offset,
            current: 0,
            next: 0,
            restart_index: 0,
            key: Vec::new(),
            shared: 0,
            value: (0, 0),
            valid: false,
            behind: Vec::new(),
            behind_keys: Vec::new(),
            lent: None,
            #[cfg(test)]
            decoded: 0,
            #[cfg(test)]
            reloads: 0,
        }
    }

    /// Takes over the buffers of `old`, a cursor this one replaces (its position is lost),
    /// so a walk across many blocks does not allocate key buffers for each.
    pub(crate) fn reuse_buffers(&mut self, old: &mut Self) {
        old.valid = false;
        self.valid = false;
        self.key = std::mem::take(&mut old.key);
        self.behind = std::mem::take(&mut old.behind);
        self.behind_keys = std::mem::take(&mut old.behind_keys);
        self.key.clear();
        self.forget_behind();
    }

    /// The table-file offset of the block (for error messages of callers).
    pub(crate) fn file_offset(&self) -> u64 {
        self.file_offset
    }

    /// The restart point the cursor's walk is in: in a block with a restart at every
    /// entry (an index block), the current entry's position. A hint: callers check what
    /// they find there.
    pub(crate) fn restart_hint(&self) -> usize {
        self.restart_index
    }

    fn corrupt(&mut self, reason: Reason) -> Error {
        self.valid = false;
        self.forget_behind();
        Error::corruption(FileKind::Table, &self.path, self.file_offset, reason)
    }

    fn forget_behind(&mut self) {
        self.behind.clear();
        self.behind_keys.clear();
        self.lent = None;
    }

    /// The current key, wherever it is (`lent`).
    fn key_bytes(&self) -> &[u8] {
        match self.lent {
            Some(start) => self.behind_keys.get(start..).unwrap_or(&[]),
            None => &self.key,
        }
    }

    /// Moves a lent key back into `key`, where decoding the next entry needs it (its
    /// shared prefix).
    fn own_key(&mut self) {
        if let Some(start) = self.lent.take() {
            self.key.clear();
            self.key
                .extend_from_slice(self.behind_keys.get(start..).unwrap_or(&[]));
            self.behind_keys.truncate(start);
        }
    }

    /// Positions before restart point `i`: the next `parse_next` decodes it.
    fn seek_restart(&mut self, i: usize) {
        self.forget_behind();
        self.key.clear();
        self.restart_index = i;
        self.next = self.block.as_ref().restart(i);
        self.valid = false;
    }

    /// Decodes the entry at `next`; `Ok(false)` (and invalid) at the end of the block.
    fn parse_next(&mut self) -> Result<bool> {
        self.own_key();
        let block: &Block = self.block.as_ref();
        if self.next >= block.restarts_offset {
            self.valid = false;
            self.current = block.restarts_offset;
            return Ok(false);
        }
        // A walk forward reads the block line after line: ask for the lines a few entries
        // ahead, so the next entries' misses overlap this one's work.
        crate::mmap::prefetch(block.data(), self.next + WALK_AHEAD);
        let entry = match block.entry_at(self.next) {
            Ok(entry) => entry,
            Err(r) => return Err(self.corrupt(r)),
        };
        let block: &Block = self.block.as_ref();
        let at_restart = if self.key.is_empty() && self.next == block.restart(self.restart_index) {
            true
        } else if self.restart_index + 1 < block.restart_count {
            let following = block.restart(self.restart_index + 1);
            if self.next > following {
                return Err(self.corrupt(Reason::BadEntry("block entry straddles a restart point")));
            }
            if self.next == following {
                self.restart_index += 1;
            }
            self.next == following
        } else {
            false
        };
        if entry.shared > self.key.len() || (at_restart && entry.shared != 0) {
            return Err(self.corrupt(Reason::BadEntry(
                "block entry shares more key bytes than the previous key has",
            )));
        }
        self.key.truncate(entry.shared);
        self.key
            .extend_from_slice(self.block.as_ref().bytes(entry.delta));
        self.shared = entry.shared;
        if self.key.len() < TRAILER_LEN {
            return Err(self.corrupt(Reason::BadEntry("block key is shorter than a key trailer")));
        }
        self.value = entry.value;
        self.current = self.next;
        self.next = entry.next;
        self.valid = true;
        #[cfg(test)]
        {
            self.decoded += 1;
        }
        Ok(true)
    }

    /// As `parse_next`, first remembering the current entry (if any) for backward steps;
    /// entries of an interval the cursor leaves are forgotten.
    fn parse_next_remembering(&mut self) -> Result<bool> {
        self.own_key();
        if self.valid {
            self.behind.push(Behind {
                offset: self.current,
                key_start: self.behind_keys.len(),
                value: self.value,
            });
            self.behind_keys.extend_from_slice(&self.key);
        }
        let interval = self.restart_index;
        let more = self.parse_next()?;
        if !more || self.restart_index != interval {
            self.forget_behind();
        }
        Ok(more)
    }

    /// Whether the key at restart point `i` sorts before `target`.
    fn restart_below(&mut self, i: usize, target: &[u8]) -> Result<bool> {
        match self.block.as_ref().restart_key_at(i) {
            Ok(key) => Ok(compare_encoded(key, target) == Ordering::Less),
            Err(r) => Err(self.corrupt(r)),
        }
    }

    /// Seeks to the first entry `>= target`, given that the last restart point whose key
    /// is `< target` (or restart 0 if none is) lies in `lo..=hi`; with `remember`, keeps the
    /// entries it passes for backward steps.
    fn seek_between(
        &mut self,
        target: &[u8],
        mut lo: usize,
        mut hi: usize,
        remember: bool,
    ) -> Result<()> {
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.restart_below(mid, target)? {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.seek_restart(lo);
        self.block.as_ref().prefetch_interval(lo);
        // Where the last key compared first differed from the target's user key, below it
        // (`compare_encoded_from`). An entry sharing more than that many bytes with it is
        // below the target too, and one sharing fewer agrees with the target up to what it
        // shares: most entries of the walk are decided without comparing their whole key.
        let mut below_at: Option<usize> = None;
        loop {
            let more = if remember {
                self.parse_next_remembering()?
            } else {
                self.parse_next()?
            };
            if !more {
                return Ok(());
            }
            let from = match below_at {
                Some(at) if self.shared > at => {
                    if self.key.len().saturating_sub(TRAILER_LEN) <= at {
                        // A prefix of the target's user key: below it, with no byte
                        // that differs.
                        below_at = None;
                    }
                    continue;
                }
                Some(_) => self.shared,
                None => 0,
            };
            let (order, at) = compare_encoded_from(&self.key, target, from);
            if order != Ordering::Less {
                return Ok(());
            }
            below_at = at;
        }
    }

    /// As [`Cursor::seek`], searching only the restart points `candidates` (inclusive;
    /// `Fences::candidates` of this cursor's block gives them for `target`).
    pub(crate) fn seek_in(&mut self, target: &[u8], candidates: (usize, usize)) -> Result<()> {
        let (lo, hi) = candidates;
        let last = self.block.as_ref().restart_count.saturating_sub(1);
        self.seek_between(target, lo.min(last), hi.min(last), false)
    }
}

impl<P: Deref<Target = Path>> BlockCursor<Block, P> {
    /// Moves the cursor, unpositioned, to the raw block at `start..start + len` of `map`,
    /// read from the table at `file_offset`, when its own block lies in that same map
    /// ([`Block::reframe_mapped`]): its buffers, its path and its reference to the map are
    /// kept. `Ok(false)`, the cursor untouched, if its block does not lie in `map`.
    ///
    /// # Errors
    /// `Corruption` as [`Block::decode_mapped`]; the cursor is then invalid and must be
    /// dropped.
    pub(crate) fn reload_mapped(
        &mut self,
        map: &Arc<Map>,
        start: usize,
        len: usize,
        file_offset: u64,
    ) -> Result<bool> {
        match self.block.reframe_mapped(map, start, len) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(r) => {
                self.file_offset = file_offset;
                return Err(self.corrupt(r));
            }
        }
        self.file_offset = file_offset;
        // Unpositioned, as a new cursor: the next move positions it.
        self.seek_restart(0);
        #[cfg(test)]
        {
            self.reloads += 1;
        }
        Ok(true)
    }

    /// The block the cursor walks.
    pub(crate) fn block(&self) -> &Block {
        &self.block
    }
}

impl<B: AsRef<Block> + Send, P: Deref<Target = Path> + Send> Cursor for BlockCursor<B, P> {
    fn valid(&self) -> bool {
        self.valid
    }

    fn key(&self) -> &[u8] {
        if self.valid {
            self.key_bytes()
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        if self.valid {
            self.block.as_ref().bytes(self.value)
        } else {
            &[]
        }
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.seek_restart(0);
        self.parse_next().map(drop)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.seek_restart(self.block.as_ref().restart_count.saturating_sub(1));
        while self.parse_next_remembering()? && self.next < self.block.as_ref().restarts_offset {}
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        // The last restart point whose key is < target; the answer is at or after it.
        let (lo, hi) = self.block.as_ref().seek_candidates(target);
        self.seek_between(target, lo, hi, false)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let (lo, hi) = self.block.as_ref().seek_candidates(target);
        self.seek_between(target, lo, hi, true)?;
        if !self.valid {
            self.seek_to_last()
        } else if compare_encoded(self.key_bytes(), target) == Ordering::Greater {
            self.prev()
        } else {
            Ok(())
        }
    }

    fn next(&mut self) -> Result<()> {
        if self.valid {
            self.own_key();
            self.forget_behind();
            self.parse_next()?;
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if let Some(entry) = self.behind.pop() {
            // Its successor is the current entry (checked when it was decoded). Its key is
            // the last one remembered, once the current entry's (if lent) is dropped.
            if let Some(start) = self.lent {
                self.behind_keys.truncate(start);
            }
            self.next = self.current;
            self.current = entry.offset;
            self.value = entry.value;
            self.lent = Some(entry.key_start);
            return Ok(());
        }
        // Decode the interval before the current entry, remembering all but its last entry.
        let original = self.current;
        let mut r = self
            .restart_index
            .min(self.block.as_ref().restart_count.saturating_sub(1));
        while self.block.as_ref().restart(r) >= original {
            if r == 0 {
                self.valid = false;
                self.forget_behind();
                return Ok(());
            }
            r -= 1;
        }
        self.seek_restart(r);
        // A walk backward goes on to the interval before this one next: fetch it now.
        if let Some(before) = r.checked_sub(1) {
            let block = self.block.as_ref();
            let (start, end) = block.interval_span(before);
            block.prefetch_range(start, end);
        }
        while self.parse_next_remembering()? {
            match self.next.cmp(&original) {
                Ordering::Less => continue,
                Ordering::Equal => return Ok(()),
                Ordering::Greater => break,
            }
        }
        Err(self.corrupt(Reason::BadEntry(
            "block entries do not chain back to the current entry",
        )))
    }
}

#[cfg(test)]
#[path = "block_tests.rs"]
mod tests;
