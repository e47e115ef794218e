//! How far a point read may go for its answer: [`Reach`], and what a read limited to
//! memory gives back, [`InMemory`].
//!
//! A point read normally opens table files, reads data blocks that are not in the block
//! cache and reads separated values from blob files. A read with [`Reach::Memory`] does
//! none of that: it answers from the memtables, the tables already open (their index,
//! filter and range tombstones are read when a table is opened) and the blocks already in
//! the block cache, and otherwise stops with [`InMemory::NeedsIo`] before any file is
//! touched. It is for callers that must not wait for the disk while holding something
//! others need (a language binding holding its interpreter lock, an event loop), which
//! then repeat the read with [`Reach::Disk`] where waiting is fine. RocksDB calls the
//! same idea `kBlockCacheTier`.
//!
//! Invariants:
//! 1. Whenever a memory read answers, the answer is the one the same read with
//!    [`Reach::Disk`] at the same point (same super version and seqno) would give:
//!    tombstones, range tombstones, expiry and snapshots are applied the same way, by the
//!    same code; the two reads differ only in where they give up.
//! 2. A memory read does no file I/O: no table open, no block read, no blob read. A read
//!    that meets a merge operand or a separated value (both may need file reads to
//!    resolve) gives [`InMemory::NeedsIo`].
//! 3. A memory read inserts no block into the block cache and opens no table (it may pin,
//!    in its super version, a table the table cache already holds open); a block it finds
//!    counts as a cache hit, a block it misses counts nothing (the disk read that follows
//!    it counts the miss).
//!
//! This is a leaf module: the table reader (a format module) and the engine's read path
//! both use it.

use crate::error::{Error, Result};

/// Where a point read may look for its answer (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Anywhere: tables are opened and blocks and values read as needed.
    Disk,
    /// Memory only: memtables, open tables and cached blocks.
    Memory,
}

/// The outcome of a read that may not do I/O ([`Keyspace::get_with_in_memory`],
/// [`Keyspace::contains_key_in_memory`], and the [`Readable`] methods of the same names).
///
/// ```
/// use cairn::{Db, InMemory, Options};
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let db = Db::open(dir.path(), Options::default())?;
/// let ks = db.keyspace("k")?;
/// ks.insert("a", "1")?;
/// // In the memtable: answered from memory, the same as `get` would.
/// let value = match ks.get_with_in_memory("a", |v| v.to_vec())? {
///     InMemory::Answer(found) => found,
///     // Would have to read a file: read it where waiting is fine.
///     InMemory::NeedsIo => ks.get("a")?,
/// };
/// assert_eq!(value, Some(b"1".to_vec()));
/// # db.close()
/// # }
/// ```
///
/// [`Keyspace::get_with_in_memory`]: crate::Keyspace::get_with_in_memory
/// [`Keyspace::contains_key_in_memory`]: crate::Keyspace::contains_key_in_memory
/// [`Readable`]: crate::Readable
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum InMemory<T> {
    /// The answer, the same the read that may do I/O gives at the same point.
    Answer(T),
    /// The answer needs a file read: a table not open yet, a data block not in the block
    /// cache, a separated value or a merge. Nothing was read; repeat the read with the
    /// method that may do I/O.
    NeedsIo,
}

impl<T> InMemory<T> {
    /// The answer, if the read gave one.
    pub fn answer(self) -> Option<T> {
        match self {
            InMemory::Answer(t) => Some(t),
            InMemory::NeedsIo => None,
        }
    }

    /// Applies `f` to the answer.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> InMemory<U> {
        match self {
            InMemory::Answer(t) => InMemory::Answer(f(t)),
            InMemory::NeedsIo => InMemory::NeedsIo,
        }
    }
}

impl<T> InMemory<T> {
    /// The answer of a read made with [`Reach::Disk`], which always answers.
    ///
    /// # Errors
    /// `InvalidArgument` if it did not (a bug of the read path; checked in debug builds).
    pub(crate) fn answered(self) -> Result<T> {
        match self {
            InMemory::Answer(t) => Ok(t),
            InMemory::NeedsIo => {
                debug_assert!(false, "a read that may do I/O stopped short of it");
                Err(Error::invalid(
                    "a read that may do I/O stopped short of it (a bug in Cairn)",
                ))
            }
        }
    }
}
