//! The constant store: Sparkey-compatible log (`.spl`) and index (`.spi`) files.
//!
//! A log is an append-only sequence of PUT and DELETE entries, optionally cut into
//! Snappy- or Zstandard-compressed blocks; an index is an immutable Robin Hood hash table
//! mapping key hashes to log addresses. Write a log with [`LogWriter`], index it with
//! [`write_index`], and serve lookups from any number of threads or processes with
//! [`Reader`]. The byte layout and every deviation from the reference implementation are
//! in `FORMAT.md` beside this file.
//!
//! This module depends only on the crate's leaf modules (`error`, `coding`, `mmap`,
//! `atomic`), so it could become its own crate without surgery.

//!
//! What is public, and how firmly:
//! * the names re-exported here are the supported API: writing ([`LogWriter`],
//!   [`LogOptions`], [`Compression`]), indexing ([`write_index`], [`IndexOptions`],
//!   [`HashSize`], [`BuildKind`]), reading ([`Reader`], [`ReadOptions`], [`HashIter`],
//!   [`Residency`], and the whole log with [`LogReader`], [`LogIter`], [`LogEntry`],
//!   [`EntryKind`], or entry by entry in pieces with [`LogCursor`]), checking ([`verify`], [`VerifyReport`]), the file-name convention
//!   ([`index_path_for`], [`log_path_for`]) and the documented limits;
//! * [`raw`] holds the decoded headers, the hash functions, the in-memory index builder
//!   and slot-level access, for tools and tests, with no stability promise;
//! * everything else (slot arithmetic, block decoding, the block cache) is private.

mod block;
mod cursor;
mod fastmod;
mod header;
mod index_writer;
mod log_reader;
mod log_writer;
mod murmur;
pub mod raw;
mod reader;
mod verify;

pub use crate::mmap::Residency;
pub use cursor::{CursorState, LogCursor};
pub use header::{Compression, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
pub use index_writer::{write_index, BuildKind, HashSize, IndexOptions};
pub use log_reader::{EntryKind, LogEntry, LogIter, LogReader, DEFAULT_BLOCK_CACHE_BYTES};
pub use log_writer::{LogOptions, LogWriter};
pub use murmur::MAX_HASHED_KEY_LEN;
pub use reader::{index_path_for, log_path_for, HashIter, ReadOptions, Reader};
pub use verify::{verify, VerifyReport};
