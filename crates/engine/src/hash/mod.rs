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

mod block;
mod fastmod;
mod header;
mod index_writer;
mod log_reader;
mod log_writer;
mod murmur;
mod reader;
mod verify;

pub use crate::mmap::Residency;
pub use header::{
    bitlen, Compression, IndexHeader, LogHeader, INDEX_HEADER_LEN, LOG_HEADER_LEN, MAX_BLOCK_SIZE,
    MIN_BLOCK_SIZE,
};
pub use index_writer::{
    build_index, capacity_for, write_index, BuildKind, BuiltIndex, HashSize, IndexOptions,
    PreviousIndex,
};
pub use log_reader::{EntryKind, LogEntry, LogIter, LogReader, DEFAULT_BLOCK_CACHE_BYTES};
pub use log_writer::{LogOptions, LogWriter};
pub use murmur::{murmur3_x64_128_h1, murmur3_x86_32, MAX_HASHED_KEY_LEN};
pub use reader::{index_path_for, log_path_for, HashIter, ReadOptions, Reader};
pub use verify::{verify, VerifyReport};
