//! Decoded on-disk structures and building blocks of the constant store, for tools; **no
//! stability promise**: anything here may change in any release.
//!
//! [`super`] is the supported API (write a log, index it, read it, verify it). This module
//! exists for programs that look at or produce the files themselves: `cairn sparkey info`
//! decodes headers, the fuzz targets and the format tests forge headers and slot tables,
//! hash keys with the index's hash functions and build an index in memory. Everything here
//! is the engine's own code (the same decoders, the same hash functions, the same index
//! builder), so what a tool sees is what a [`Reader`] sees.
//!
//! The header types are also what the supported API returns where it reports a file's
//! header ([`Reader::header`], [`super::LogReader::header`], [`super::LogWriter::close`],
//! [`super::write_index`]): their fields are the fields of the Sparkey format's headers
//! (`hash/FORMAT.md`) and change only with that format; their methods carry no promise.
//!
//! Invariants: nothing here writes a file; every decoder validates as the readers do (a
//! decoded header satisfies the invariants listed on it); [`slot`], [`hash_key`] and
//! [`entry_at`] read through an open [`Reader`] and bounds-check every index and address.

use super::reader::Reader;
use crate::error::Result;

pub use super::header::{IndexHeader, LogHeader, INDEX_HEADER_LEN, LOG_HEADER_LEN};
pub use super::index_writer::{build_index, BuiltIndex, PreviousIndex};
pub use super::murmur::{murmur3_x64_128_h1, murmur3_x86_32};

/// Slot `i` of `reader`'s index as `(hash, address)`; `None` past the table. An address of
/// 0 marks an empty slot.
pub fn slot(reader: &Reader, i: u64) -> Option<(u64, u64)> {
    reader.slot(i)
}

/// The hash of `key` under `reader`'s index hash function (32 or 64 bits) and seed: the
/// value its slot stores.
pub fn hash_key(reader: &Reader, key: &[u8]) -> u64 {
    reader.hash_key(key)
}

/// The key and value of the PUT at slot address `address` of `reader`'s log.
///
/// # Errors
/// `Corruption` if the address does not point at a readable PUT in the range the index
/// covers; I/O errors.
pub fn entry_at(reader: &Reader, address: u64) -> Result<(Vec<u8>, Vec<u8>)> {
    reader.entry_at(address)
}
