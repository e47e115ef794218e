//! Sorted tables of the ordered store: immutable files of internal keys and values in
//! [`crate::key::compare_encoded`] order, written once by [`Writer`] (a memtable flush or a
//! compaction) and read by many threads through a shared [`Reader`]. Byte layout:
//! [`FORMAT.md`](FORMAT.md).
//!
//! Owns: the file naming (`<id:020>.sst`), the table options ([`TableOptions`]), the block
//! format (`block`), block compression and checksums (`compression`), the bloom filter
//! (`filter`), the properties block (`properties`), the footer (`footer`), the writer, the
//! reader with its two-level cursor ([`TableIter`]) and the shared [`BlockCache`]. It does
//! not decide which tables exist (the manifest does), when to write one (flush and
//! compaction do) or which versions a reader may see beyond a snapshot seqno.
//!
//! Invariants:
//! 1. Entries are encoded internal keys, strictly increasing by `compare_encoded`; the
//!    writer refuses anything else, so a table never holds two entries with the same key.
//! 2. A table holds at least one entry; every data block holds at least one entry.
//! 3. Every byte of a finished file is covered by a checksum (block trailers, the footer
//!    checksum) or compared against a constant (the footer magic), and the blocks tile the
//!    file with no gaps, so a flipped bit anywhere is reported as corruption by `open`,
//!    by reading the block it falls in, or by [`Reader::verify`].
//! 4. No decoded length, count or offset is used before it is checked against the bytes
//!    that hold it; no buffer is sized from an unchecked length (decoded blocks are at most
//!    [`MAX_BLOCK_LEN`] bytes). Nothing in this module panics on any input.
//!
//! Thread-safety: a [`Writer`] has one owner. [`Reader`] and [`BlockCache`] are
//! `Send + Sync` and shared through `Arc`; a [`TableIter`] is `Send` and has one owner.

mod blob_refs;
mod block;
mod compression;
mod fences;
pub(crate) mod filter;
pub(crate) use filter::Layout;
mod footer;
mod iter;
mod meta;
mod properties;
mod range_block;
mod reader;
mod writer;

#[cfg(test)]
mod range_tests;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use blob_refs::BlobRef;
pub(crate) use compression::Compression;
pub(crate) use iter::TableIter;
pub(crate) use meta::TableMeta;
pub(crate) use reader::{Access, Reader};
pub(crate) use writer::Writer;

/// The decoded data blocks of every table of a store, keyed by table id and block offset:
/// the engine's one block cache (`crate::cache::BlockCache`), which the constant store's
/// logs use too.
pub(crate) type BlockCache = crate::cache::BlockCache<(u64, u64), block::Block>;

use crate::error::{Error, Result};

/// The newest format version, which this build writes (footer and properties): version 3
/// lays the filter out in cache lines (FORMAT.md §4.4), with or without a range-tombstone
/// block. Versions 1 and 2 are read as they were written.
pub(crate) const FORMAT_VERSION: u32 = 3;

/// The format version of a table with a range-tombstone block and a spread filter
/// (version 2; written only with [`Layout::Spread`]).
pub(crate) const FORMAT_VERSION_RANGES: u32 = 2;

/// The format version of a table without range tombstones and with a spread filter
/// (version 1; written only with [`Layout::Spread`]).
pub(crate) const FORMAT_VERSION_PLAIN: u32 = 1;

/// The filter layout of a table of format `version`.
pub(crate) fn filter_layout(version: u32) -> Layout {
    if version >= FORMAT_VERSION {
        Layout::Local
    } else {
        Layout::Spread
    }
}

/// The last 8 bytes of every table file.
pub(crate) const MAGIC: [u8; 8] = *b"CAIRNSST";

/// Bytes that follow every stored block: compression type (1) and masked CRC32C (4).
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

/// Bytes of the footer at the end of the file.
pub(crate) const FOOTER_LEN: usize = 64;

/// Largest decoded block, in bytes (64 MiB). Readers refuse larger blocks before
/// allocating; the writer's limits ([`MAX_BLOCK_SIZE`], [`MAX_INLINE_VALUE_LEN`]) keep data blocks
/// below it, and it refuses to finish a table whose index would exceed it.
pub(crate) const MAX_BLOCK_LEN: usize = 64 << 20;

/// Largest accepted [`TableOptions::block_size`] (16 MiB).
pub(crate) const MAX_BLOCK_SIZE: usize = 16 << 20;

/// Largest value a table stores (32 MiB); larger values belong in the value log. With
/// [`MAX_BLOCK_SIZE`] and the key limit this keeps every data block below
/// [`MAX_BLOCK_LEN`].
pub(crate) const MAX_INLINE_VALUE_LEN: usize = 32 << 20;

/// Largest accepted [`TableOptions::bloom_bits_per_key`].
pub(crate) const MAX_BLOOM_BITS_PER_KEY: u32 = 64;

/// How the writer tunes a table. Readers need none of this: every choice is recorded in
/// the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableOptions {
    /// Target size of a data block before compression, in bytes (default 4096, at most
    /// [`MAX_BLOCK_SIZE`]). A block is cut once it reaches this size, so it may exceed it by
    /// one entry.
    pub(crate) block_size: usize,
    /// Entries between restart points in data blocks (default 16, at least 1). Index
    /// blocks always use 1.
    pub(crate) restart_interval: usize,
    /// Block compression (default [`Compression::None`]; blocks that do not shrink by at
    /// least 1/8 are stored uncompressed whatever this says).
    pub(crate) compression: Compression,
    /// Zstandard level when `compression` is [`Compression::Zstd`] (default 3).
    pub(crate) zstd_level: i32,
    /// Bloom filter bits per distinct user key (default 10, about 1% false positives;
    /// 0 writes no filter; at most [`MAX_BLOOM_BITS_PER_KEY`]).
    pub(crate) bloom_bits_per_key: u32,
    /// How the filter is laid out, and so the format version written (default
    /// [`Layout::Local`], version 3; [`Layout::Spread`] writes versions 1 and 2 as earlier
    /// builds did).
    pub(crate) filter_layout: Layout,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            compression: Compression::None,
            zstd_level: 3,
            bloom_bits_per_key: 10,
            filter_layout: Layout::Local,
        }
    }
}

impl TableOptions {
    /// Checks every option against its documented range.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first option out of range.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
            return Err(Error::invalid(format!(
                "table block_size {} is outside 1..={MAX_BLOCK_SIZE}",
                self.block_size
            )));
        }
        if self.restart_interval == 0 {
            return Err(Error::invalid("table restart_interval must be at least 1"));
        }
        if self.bloom_bits_per_key > MAX_BLOOM_BITS_PER_KEY {
            return Err(Error::invalid(format!(
                "table bloom_bits_per_key {} is above {MAX_BLOOM_BITS_PER_KEY}",
                self.bloom_bits_per_key
            )));
        }
        #[cfg(feature = "zstd")]
        if self.compression == Compression::Zstd
            && !zstd::compression_level_range().contains(&self.zstd_level)
        {
            return Err(Error::invalid(format!(
                "zstd level {} is outside {:?}",
                self.zstd_level,
                zstd::compression_level_range()
            )));
        }
        #[cfg(not(feature = "zstd"))]
        if self.compression == Compression::Zstd {
            return Err(Error::invalid(
                "table compression Zstd needs the cairn crate's \"zstd\" feature, which this \
                 build was compiled without",
            ));
        }
        Ok(())
    }
}
