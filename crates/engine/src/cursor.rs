//! [`Cursor`]: the one bidirectional, seekable iterator shape shared by every sorted source
//! of internal keys (memtable, table blocks, tables, levels) and by the merging iterator
//! built over them.
//!
//! Keys are encoded internal keys (see `key.rs`) and are ordered by
//! [`crate::key::compare_encoded`], never bytewise.
//!
//! Contract, for every implementation:
//! 1. A new cursor is not positioned (`valid()` is false) until a seek.
//! 2. `key()` and `value()` may only be called while `valid()`; they return empty slices
//!    otherwise (never panic).
//! 3. A movement that fails returns `Err` and leaves the cursor invalid; a caller must not
//!    continue after an error (the store's user-facing iterators stop for good).
//! 4. `next` past the last entry and `prev` before the first leave the cursor invalid and
//!    return `Ok(())`.

use crate::error::Result;

/// A positioned, bidirectional iterator over encoded internal keys and their values.
pub(crate) trait Cursor: Send {
    /// True if the cursor is on an entry.
    fn valid(&self) -> bool;
    /// The encoded internal key of the current entry.
    fn key(&self) -> &[u8];
    /// The value of the current entry (empty for tombstones).
    fn value(&self) -> &[u8];
    /// The current entry's key and value, or `None` when the cursor is not on one: one
    /// call where `valid`, `key` and `value` take three, each of which a cursor over other
    /// cursors forwards through every layer below it.
    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.valid().then(|| (self.key(), self.value()))
    }
    /// True if no entry ahead of the current one, in the direction of the cursor's last
    /// move (after it for `next` and the forward seeks, before it for `prev`,
    /// `seek_to_last` and `seek_for_prev`), has the current entry's user key: a reader
    /// walking that way that decided this entry need not look at the next one. A table or
    /// a level with one entry per user key answers for both directions. `false` when not
    /// known (the default), or when not on an entry.
    fn only_version(&self) -> bool {
        false
    }
    /// Moves to the first entry.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Moves to the last entry.
    fn seek_to_last(&mut self) -> Result<()>;
    /// Moves to the first entry whose key is `>= target` (an encoded internal key).
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Moves to the last entry whose key is `<= target` (an encoded internal key).
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()>;
    /// Moves to the following entry.
    fn next(&mut self) -> Result<()>;
    /// Moves to the preceding entry.
    fn prev(&mut self) -> Result<()>;
}
