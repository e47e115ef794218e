//! [`TableIter`]: the two-level cursor over a table: an index cursor chooses the data
//! block, a block cursor walks it, and moving past either end of a block moves the index.
//!
//! Invariant: while the cursor is valid, `index` is on the entry whose handle names the
//! block `data` walks. A data block is never empty (the reader refuses empty blocks), so a
//! step off one end of a block lands on the neighbouring block's first or last entry; the
//! loops that skip blocks are still bounded by the index, whatever a damaged file holds.
//!
//! Thread-safety: `Send`, one owner; it keeps its table open through an `Arc<Reader>`.

use std::sync::Arc;

use super::block::{BlockCursor, Walk};
use super::reader::{Readahead, Reader};
use crate::cursor::Cursor;
use crate::error::Result;

/// A [`Cursor`] over every entry of a table: an index cursor choosing the data block and a
/// cursor within that block.
#[derive(Debug)]
pub(crate) struct TableIter {
    reader: Arc<Reader>,
    index: BlockCursor,
    data: Option<BlockCursor>,
    /// How many more blocks read from the file may enter the cache.
    fill_budget: u32,
    /// Reads ahead of a run of sequential block reads.
    readahead: Readahead,
    /// The table holds one entry per user key (`Reader::distinct_keys`).
    distinct: bool,
}

impl TableIter {
    /// An unpositioned cursor; the first `fill_budget` blocks it reads from the file enter
    /// the cache (`u32::MAX`: all, 0: none).
    pub(super) fn new(reader: Arc<Reader>, fill_budget: u32) -> TableIter {
        let index = reader.index_cursor();
        let distinct = reader.distinct_keys();
        TableIter {
            distinct,
            reader,
            index,
            data: None,
            fill_budget,
            readahead: Readahead::default(),
        }
    }

    /// Loads the data block of the current index entry (or drops it at the index's end),
    /// prefetching where `walk` will start in it.
    fn load(&mut self, walk: Walk) -> Result<Option<&mut BlockCursor>> {
        if !self.index.valid() {
            self.data = None;
            return Ok(None);
        }
        let handle = self.reader.handle(&self.index)?;
        if self.data.as_ref().map(BlockCursor::file_offset) != Some(handle.offset) {
            if let Some(data) = self.data.as_mut() {
                if self
                    .reader
                    .reload_in_place(&self.index, handle, walk, data)?
                {
                    return Ok(self.data.as_mut());
                }
            }
            let fill = self.fill_budget > 0;
            let (mut cursor, from_file) = self.reader.data_cursor_counted(
                &self.index,
                fill,
                Some(&mut self.readahead),
                walk,
            )?;
            if from_file {
                self.fill_budget = self.fill_budget.saturating_sub(1);
            }
            if let Some(old) = self.data.as_mut() {
                cursor.reuse_buffers(old);
            }
            self.data = Some(cursor);
            // A walk through the blocks: the one after this is fetched while this is read.
            if !from_file && !matches!(walk, Walk::To(_)) {
                self.reader
                    .prefetch_following(handle, self.index.restart_hint(), walk);
            }
        }
        Ok(self.data.as_mut())
    }

    /// While the data cursor is exhausted, moves to the first entry of the next block.
    fn skip_forward(&mut self) -> Result<()> {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            self.index.next()?;
            if let Some(d) = self.load(Walk::First)? {
                d.seek_to_first()?;
            }
        }
        Ok(())
    }

    /// While the data cursor is exhausted, moves to the last entry of the previous block.
    fn skip_backward(&mut self) -> Result<()> {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            self.index.prev()?;
            if let Some(d) = self.load(Walk::Last)? {
                d.seek_to_last()?;
            }
        }
        Ok(())
    }

    /// The table-file offset of the data block the cursor is in, if any.
    #[cfg(test)]
    pub(crate) fn data_file_offset(&self) -> Option<u64> {
        self.data.as_ref().map(BlockCursor::file_offset)
    }

    /// How many times the data cursor was moved to another block in place.
    #[cfg(test)]
    pub(crate) fn data_reloads(&self) -> Option<usize> {
        self.data.as_ref().map(|d| d.reloads)
    }

    /// Leaves the cursor invalid if `result` is an error.
    fn guard(&mut self, result: Result<()>) -> Result<()> {
        if result.is_err() {
            self.data = None;
        }
        result
    }

    fn try_seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.reader.seek_index(&mut self.index, target)?;
        if !self.index.valid() {
            return self.seek_to_last();
        }
        if let Some(d) = self.load(Walk::To(target))? {
            d.seek_for_prev(target)?;
        }
        self.skip_backward()
    }
}

impl Cursor for TableIter {
    fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(BlockCursor::valid)
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.data.as_ref().and_then(|d| d.current())
    }

    fn only_version(&self) -> bool {
        self.distinct && self.valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = (|| {
            self.index.seek_to_first()?;
            if let Some(d) = self.load(Walk::First)? {
                d.seek_to_first()?;
            }
            self.skip_forward()
        })();
        self.guard(r)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let r = (|| {
            self.index.seek_to_last()?;
            if let Some(d) = self.load(Walk::Last)? {
                d.seek_to_last()?;
            }
            self.skip_backward()
        })();
        self.guard(r)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = (|| {
            self.reader.seek_index(&mut self.index, target)?;
            if let Some(d) = self.load(Walk::To(target))? {
                d.seek(target)?;
            }
            self.skip_forward()
        })();
        self.guard(r)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let r = self.try_seek_for_prev(target);
        self.guard(r)
    }

    fn next(&mut self) -> Result<()> {
        let r = match self.data.as_mut() {
            Some(d) if d.valid() => d.next().and_then(|()| self.skip_forward()),
            _ => Ok(()),
        };
        self.guard(r)
    }

    fn prev(&mut self) -> Result<()> {
        let r = match self.data.as_mut() {
            Some(d) if d.valid() => d.prev().and_then(|()| self.skip_backward()),
            _ => Ok(()),
        };
        self.guard(r)
    }
}

impl Reader {
    /// A cursor over every entry; data blocks it reads are offered to the cache.
    #[cfg(test)]
    pub(crate) fn iter(self: &Arc<Self>) -> TableIter {
        TableIter::new(Arc::clone(self), u32::MAX)
    }

    /// A cursor over every entry that uses cached blocks but does not offer the blocks it
    /// reads (for long scans and compaction, which would evict the working set).
    pub(crate) fn iter_no_fill(self: &Arc<Self>) -> TableIter {
        TableIter::new(Arc::clone(self), 0)
    }

    /// A cursor that offers only the first `blocks` blocks it reads from the file to the
    /// cache: short range reads stay cached, a long scan does not evict the working set.
    pub(crate) fn iter_fill_first(self: &Arc<Self>, blocks: u32) -> TableIter {
        TableIter::new(Arc::clone(self), blocks)
    }
}
