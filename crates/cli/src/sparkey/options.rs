//! Option values shared by several `sparkey` commands: compression, block size, hash size.

use cairn::hash::{Compression, HashSize};
use clap::ValueEnum;

/// Default compression block size (the reference's `SNAPPY_DEFAULT_BLOCKSIZE`).
pub const DEFAULT_BLOCK_SIZE: u32 = 4096;
/// Smallest block size the CLI accepts (the reference CLI's limit; the library allows 10).
pub const MIN_BLOCK_SIZE: u32 = 16;
/// Largest block size the CLI accepts.
pub const MAX_BLOCK_SIZE: u32 = 1 << 30;

/// `-c none|snappy|zstd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// Entries back to back, no compression.
    None,
    /// Blocks compressed with raw Snappy.
    Snappy,
    /// Blocks compressed with Zstandard (level 3).
    Zstd,
}

impl CompressionArg {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            CompressionArg::None => "none",
            CompressionArg::Snappy => "snappy",
            CompressionArg::Zstd => "zstd",
        }
    }
}

impl From<CompressionArg> for Compression {
    fn from(c: CompressionArg) -> Compression {
        match c {
            CompressionArg::None => Compression::None,
            CompressionArg::Snappy => Compression::Snappy,
            CompressionArg::Zstd => Compression::Zstd,
        }
    }
}

/// `--hash-size auto|32|64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HashSizeArg {
    /// 64-bit hashes from 2^23 slots on (an incremental build keeps the index's width).
    Auto,
    /// 32-bit MurmurHash3_x86_32.
    #[value(name = "32")]
    Bits32,
    /// 64-bit MurmurHash3_x64_128 (first word).
    #[value(name = "64")]
    Bits64,
}

impl From<HashSizeArg> for HashSize {
    fn from(h: HashSizeArg) -> HashSize {
        match h {
            HashSizeArg::Auto => HashSize::Auto,
            HashSizeArg::Bits32 => HashSize::Bits32,
            HashSizeArg::Bits64 => HashSize::Bits64,
        }
    }
}

/// Parses `-b N` with the reference CLI's messages and range (16 ..= 2^30).
pub fn parse_block_size(text: &str) -> Result<u32, String> {
    let n: i64 = text
        .trim()
        .parse()
        .map_err(|_| format!("Block size must be an integer, but was '{text}'"))?;
    u32::try_from(n)
        .ok()
        .filter(|n| (MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(n))
        .ok_or_else(|| {
            format!(
                "Block size {n}, not in range. Max is {MAX_BLOCK_SIZE}, min is {MIN_BLOCK_SIZE}"
            )
        })
}
