//! The fixed headers of the log file (84 bytes) and the index file (112 bytes).
//!
//! Decoding validates in the reference implementation's order (so the same damaged file
//! yields the same class of error), then applies Cairn's stricter checks: every value that
//! later drives arithmetic, a modulo, a shift or an allocation is range-checked here, once,
//! so readers can rely on the invariants listed on [`LogHeader`] and [`IndexHeader`].
//! Layouts: `hash/FORMAT.md`.

use std::path::Path;

use crate::coding::{get_u32_le, get_u64_le};
use crate::error::{Error, FileKind, Reason, Result};

/// Magic number at offset 0 of a log file.
pub const LOG_MAGIC: u32 = 0x49B3_9C95;
/// Magic number at offset 0 of an index file.
pub const INDEX_MAGIC: u32 = 0x9A11_318F;
/// Size of the log header in bytes; the first entry or block starts here.
pub const LOG_HEADER_LEN: u64 = 84;
/// Size of the index header in bytes; the slot table starts here.
pub const INDEX_HEADER_LEN: u64 = 112;
/// Largest compression block size Cairn reads or writes (1 GiB, the reference CLI's limit).
pub const MAX_BLOCK_SIZE: u32 = 1 << 30;
/// Smallest compression block size a writer accepts (the reference's limit).
pub const MIN_BLOCK_SIZE: u32 = 10;

/// How the entry stream of a log is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// Entries back to back, no compression (`compression_type` 0).
    None,
    /// Blocks compressed with raw Snappy (`compression_type` 1).
    Snappy,
    /// Blocks compressed as one Zstandard frame each (`compression_type` 2).
    Zstd,
}

impl Compression {
    /// The on-disk `compression_type` value.
    pub fn code(self) -> u32 {
        match self {
            Compression::None => 0,
            Compression::Snappy => 1,
            Compression::Zstd => 2,
        }
    }

    /// Parses an on-disk `compression_type` value.
    pub fn from_code(code: u32) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Snappy),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The name the CLI prints (`Uncompressed`, `Snappy`, `Zstd`).
    pub fn display_name(self) -> &'static str {
        match self {
            Compression::None => "Uncompressed",
            Compression::Snappy => "Snappy",
            Compression::Zstd => "Zstd",
        }
    }
}

/// Reads little-endian header fields of one file, turning a missing field into
/// `Reason::Truncated` and a bad value into `Reason::HeaderField`, both at the field's
/// offset.
struct FieldReader<'a> {
    kind: FileKind,
    path: &'a Path,
    buf: &'a [u8],
}

impl FieldReader<'_> {
    fn corrupt(&self, offset: u64, reason: Reason) -> Error {
        Error::corruption(self.kind, self.path, offset, reason)
    }

    fn u32_at(&self, offset: usize) -> Result<u32> {
        get_u32_le(self.buf, offset).ok_or_else(|| self.corrupt(offset as u64, Reason::Truncated))
    }

    fn u64_at(&self, offset: usize) -> Result<u64> {
        get_u64_le(self.buf, offset).ok_or_else(|| self.corrupt(offset as u64, Reason::Truncated))
    }

    fn field(&self, field: &'static str, offset: u64, detail: String) -> Error {
        self.corrupt(offset, Reason::HeaderField { field, detail })
    }
}

/// A random 32-bit value for a log identifier or an index seed, from the OS. Without OS
/// randomness it falls back to the clock and process id: both values only need to differ
/// between files, not to be unpredictable.
pub(crate) fn random_u32() -> u32 {
    getrandom::u32().unwrap_or_else(|_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        (t ^ (t >> 32) ^ u64::from(std::process::id())) as u32
    })
}

/// Number of bits needed to write `x` (0 for 0).
#[inline]
pub fn bitlen(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// The 84-byte header of a log file.
///
/// Invariants after [`LogHeader::decode`]: `data_end >= 84`; `data_end` ≤ the file size;
/// a compressed log has `1 ≤ block_size ≤ MAX_BLOCK_SIZE`
/// and `bitlen(max_entries_per_block) + bitlen(data_end) ≤ 64`, so entry addresses fit in
/// 64 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogHeader {
    /// Major format version (always 1).
    pub major: u32,
    /// Minor format version (0).
    pub minor: u32,
    /// Random identifier tying index files to this log.
    pub file_identifier: u32,
    /// Number of PUT entries.
    pub num_puts: u64,
    /// Number of DELETE entries.
    pub num_deletes: u64,
    /// Offset just past the last valid byte of entry data.
    pub data_end: u64,
    /// Longest key of any PUT.
    pub max_key_len: u64,
    /// Longest value of any PUT.
    pub max_value_len: u64,
    /// Sum of the encoded sizes of all DELETE entries.
    pub delete_size: u64,
    /// Block compression of the entry stream.
    pub compression: Compression,
    /// Largest uncompressed size of a block (0 when uncompressed).
    pub block_size: u32,
    /// Sum of the encoded sizes of all PUT entries.
    pub put_size: u64,
    /// Largest number of entries starting in one block (0 when uncompressed).
    pub max_entries_per_block: u32,
}

impl LogHeader {
    /// A header for a new, empty log.
    pub fn new(file_identifier: u32, compression: Compression, block_size: u32) -> LogHeader {
        LogHeader {
            major: 1,
            minor: 0,
            file_identifier,
            num_puts: 0,
            num_deletes: 0,
            data_end: LOG_HEADER_LEN,
            max_key_len: 0,
            max_value_len: 0,
            delete_size: 0,
            compression,
            block_size: if compression == Compression::None {
                0
            } else {
                block_size
            },
            put_size: 0,
            max_entries_per_block: 0,
        }
    }

    /// Bits of an entry address used for the entry's position inside its block.
    pub fn entry_block_bits(&self) -> u32 {
        if self.compression == Compression::None {
            0
        } else {
            bitlen(u64::from(self.max_entries_per_block))
        }
    }

    /// Encodes the header.
    pub fn encode(&self) -> [u8; LOG_HEADER_LEN as usize] {
        let mut out = [0u8; LOG_HEADER_LEN as usize];
        let fields: [(usize, &[u8]); 13] = [
            (0, &LOG_MAGIC.to_le_bytes()),
            (4, &self.major.to_le_bytes()),
            (8, &self.minor.to_le_bytes()),
            (12, &self.file_identifier.to_le_bytes()),
            (16, &self.num_puts.to_le_bytes()),
            (24, &self.num_deletes.to_le_bytes()),
            (32, &self.data_end.to_le_bytes()),
            (40, &self.max_key_len.to_le_bytes()),
            (48, &self.max_value_len.to_le_bytes()),
            (56, &self.delete_size.to_le_bytes()),
            (64, &self.compression.code().to_le_bytes()),
            (68, &self.block_size.to_le_bytes()),
            (72, &self.put_size.to_le_bytes()),
        ];
        for (off, bytes) in fields {
            if let Some(dst) = out.get_mut(off..off + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        }
        if let Some(dst) = out.get_mut(80..84) {
            dst.copy_from_slice(&self.max_entries_per_block.to_le_bytes());
        }
        out
    }

    /// Decodes and validates a log header. `buf` holds the first bytes of the file (at
    /// least 84 if the file has them) and `file_len` is the file's size.
    pub fn decode(path: &Path, buf: &[u8], file_len: u64) -> Result<LogHeader> {
        let r = FieldReader {
            kind: FileKind::SparkeyLog,
            path,
            buf,
        };

        let magic = r.u32_at(0)?;
        if magic != LOG_MAGIC {
            return Err(r.corrupt(0, Reason::BadMagic { found: magic }));
        }
        let major = r.u32_at(4)?;
        let minor = r.u32_at(8)?;
        if major != 1 || minor > 0 {
            return Err(Error::UnsupportedVersion {
                file: FileKind::SparkeyLog,
                path: path.to_path_buf(),
                major,
                minor,
            });
        }
        let compression_code = r.u32_at(64)?;
        let header = LogHeader {
            major,
            minor,
            file_identifier: r.u32_at(12)?,
            num_puts: r.u64_at(16)?,
            num_deletes: r.u64_at(24)?,
            data_end: r.u64_at(32)?,
            max_key_len: r.u64_at(40)?,
            max_value_len: r.u64_at(48)?,
            delete_size: r.u64_at(56)?,
            compression: Compression::None, // replaced below
            block_size: r.u32_at(68)?,
            put_size: r.u64_at(72)?,
            max_entries_per_block: r.u32_at(80)?,
        };
        if header.data_end < LOG_HEADER_LEN {
            return Err(r.field(
                "data_end",
                32,
                format!("{} is below the header size 84", header.data_end),
            ));
        }
        if header.num_puts > header.data_end {
            return Err(r.field(
                "num_puts",
                16,
                format!("{} exceeds data_end {}", header.num_puts, header.data_end),
            ));
        }
        if header.num_deletes > header.data_end {
            return Err(r.field(
                "num_deletes",
                24,
                format!(
                    "{} exceeds data_end {}",
                    header.num_deletes, header.data_end
                ),
            ));
        }
        let compression = Compression::from_code(compression_code).ok_or_else(|| {
            r.field(
                "compression_type",
                64,
                format!("unknown type {compression_code}"),
            )
        })?;
        if file_len < header.data_end {
            return Err(r.corrupt(
                file_len,
                Reason::FileTooSmall {
                    expected: header.data_end,
                    actual: file_len,
                },
            ));
        }
        if header.data_end > i64::MAX as u64 {
            return Err(r.field(
                "data_end",
                32,
                format!("{} exceeds 2^63 - 1", header.data_end),
            ));
        }
        if compression != Compression::None {
            // Cairn's checks: a compressed log must be decodable and addressable.
            if header.block_size == 0 || header.block_size > MAX_BLOCK_SIZE {
                return Err(r.field(
                    "compression_block_size",
                    68,
                    format!("{} is outside 1..=2^30", header.block_size),
                ));
            }
            let bits = bitlen(u64::from(header.max_entries_per_block));
            if bits + bitlen(header.data_end) > 64 {
                return Err(r.field(
                    "max_entries_per_block",
                    80,
                    format!(
                        "{} makes entry addresses overflow 64 bits",
                        header.max_entries_per_block
                    ),
                ));
            }
        }
        Ok(LogHeader {
            compression,
            ..header
        })
    }
}

/// The 112-byte header of an index file.
///
/// Invariants after [`IndexHeader::decode`]: `hash_size` and `address_size` are 4 or 8;
/// `hash_capacity ≥ 1`; `num_entries ≤ hash_capacity`; the file holds the whole slot table;
/// `entry_block_bits < 64`. Checks against the log are in [`IndexHeader::check_against_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexHeader {
    /// Major format version (1).
    pub major: u32,
    /// Minor format version (0 or 1; written as 1).
    pub minor: u32,
    /// Identifier of the log this index was built from.
    pub file_identifier: u32,
    /// Seed of the MurmurHash3 functions.
    pub hash_seed: u32,
    /// Log `data_end` covered by this index.
    pub data_end: u64,
    /// Log `max_key_len` at build time.
    pub max_key_len: u64,
    /// Log `max_value_len` at build time.
    pub max_value_len: u64,
    /// Log `num_puts` at build time.
    pub num_puts: u64,
    /// Bytes of the entry stream that are dead.
    pub garbage_size: u64,
    /// Live keys (occupied slots).
    pub num_entries: u64,
    /// Bytes per slot address (4 or 8).
    pub address_size: u32,
    /// Bytes per slot hash (4 = MurmurHash3_x86_32, 8 = MurmurHash3_x64_128 h1).
    pub hash_size: u32,
    /// Number of slots.
    pub hash_capacity: u64,
    /// Largest displacement of an occupied slot (statistics).
    pub max_displacement: u64,
    /// Bits of an address used for the entry's position in its block.
    pub entry_block_bits: u32,
    /// Adjacent slots with equal hashes (statistics).
    pub hash_collisions: u64,
    /// Sum of displacements (statistics).
    pub total_displacement: u64,
}

impl IndexHeader {
    /// Bytes per slot.
    pub fn slot_len(&self) -> u64 {
        u64::from(self.hash_size) + u64::from(self.address_size)
    }

    /// Exact size of a well-formed index file with this header.
    pub fn file_len(&self) -> Option<u64> {
        self.hash_capacity
            .checked_mul(self.slot_len())?
            .checked_add(INDEX_HEADER_LEN)
    }

    /// Encodes the header.
    pub fn encode(&self) -> [u8; INDEX_HEADER_LEN as usize] {
        let mut out = [0u8; INDEX_HEADER_LEN as usize];
        let fields: [(usize, &[u8]); 18] = [
            (0, &INDEX_MAGIC.to_le_bytes()),
            (4, &self.major.to_le_bytes()),
            (8, &self.minor.to_le_bytes()),
            (12, &self.file_identifier.to_le_bytes()),
            (16, &self.hash_seed.to_le_bytes()),
            (20, &self.data_end.to_le_bytes()),
            (28, &self.max_key_len.to_le_bytes()),
            (36, &self.max_value_len.to_le_bytes()),
            (44, &self.num_puts.to_le_bytes()),
            (52, &self.garbage_size.to_le_bytes()),
            (60, &self.num_entries.to_le_bytes()),
            (68, &self.address_size.to_le_bytes()),
            (72, &self.hash_size.to_le_bytes()),
            (76, &self.hash_capacity.to_le_bytes()),
            (84, &self.max_displacement.to_le_bytes()),
            (92, &self.entry_block_bits.to_le_bytes()),
            (96, &self.hash_collisions.to_le_bytes()),
            (104, &self.total_displacement.to_le_bytes()),
        ];
        for (off, bytes) in fields {
            if let Some(dst) = out.get_mut(off..off + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        }
        out
    }

    /// Decodes and validates an index header on its own (checks that need the log are in
    /// [`IndexHeader::check_against_log`]). `file_len` is the index file's size.
    pub fn decode(path: &Path, buf: &[u8], file_len: u64) -> Result<IndexHeader> {
        let r = FieldReader {
            kind: FileKind::SparkeyIndex,
            path,
            buf,
        };

        let magic = r.u32_at(0)?;
        if magic != INDEX_MAGIC {
            return Err(r.corrupt(0, Reason::BadMagic { found: magic }));
        }
        let major = r.u32_at(4)?;
        let minor = r.u32_at(8)?;
        if major != 1 || minor > 1 {
            return Err(Error::UnsupportedVersion {
                file: FileKind::SparkeyIndex,
                path: path.to_path_buf(),
                major,
                minor,
            });
        }
        let h = IndexHeader {
            major,
            minor,
            file_identifier: r.u32_at(12)?,
            hash_seed: r.u32_at(16)?,
            data_end: r.u64_at(20)?,
            max_key_len: r.u64_at(28)?,
            max_value_len: r.u64_at(36)?,
            num_puts: r.u64_at(44)?,
            garbage_size: r.u64_at(52)?,
            num_entries: r.u64_at(60)?,
            address_size: r.u32_at(68)?,
            hash_size: r.u32_at(72)?,
            hash_capacity: r.u64_at(76)?,
            max_displacement: r.u64_at(84)?,
            entry_block_bits: r.u32_at(92)?,
            hash_collisions: r.u64_at(96)?,
            total_displacement: r.u64_at(104)?,
        };
        if h.hash_size != 4 && h.hash_size != 8 {
            return Err(r.field("hash_size", 72, format!("{} is not 4 or 8", h.hash_size)));
        }
        if h.num_entries > h.num_puts {
            return Err(r.field(
                "num_entries",
                60,
                format!("{} exceeds num_puts {}", h.num_entries, h.num_puts),
            ));
        }
        if h.max_displacement > h.num_entries {
            return Err(r.field(
                "max_displacement",
                84,
                format!(
                    "{} exceeds num_entries {}",
                    h.max_displacement, h.num_entries
                ),
            ));
        }
        if h.hash_collisions > h.num_entries {
            return Err(r.field(
                "hash_collisions",
                96,
                format!(
                    "{} exceeds num_entries {}",
                    h.hash_collisions, h.num_entries
                ),
            ));
        }
        // Cairn's checks: values that drive lookups must be sane.
        if h.address_size != 4 && h.address_size != 8 {
            return Err(r.field(
                "address_size",
                68,
                format!("{} is not 4 or 8", h.address_size),
            ));
        }
        if h.hash_capacity == 0 {
            return Err(r.field(
                "hash_capacity",
                76,
                "capacity 0 cannot hold a table".to_string(),
            ));
        }
        if h.num_entries > h.hash_capacity {
            return Err(r.field(
                "num_entries",
                60,
                format!(
                    "{} exceeds hash_capacity {}",
                    h.num_entries, h.hash_capacity
                ),
            ));
        }
        if h.entry_block_bits >= 64 {
            return Err(r.field(
                "entry_block_bits",
                92,
                format!("{} is not below 64", h.entry_block_bits),
            ));
        }
        if h.data_end < LOG_HEADER_LEN {
            return Err(r.field(
                "data_end",
                20,
                format!("{} is below the log header size 84", h.data_end),
            ));
        }
        let need = h.file_len().ok_or_else(|| {
            r.field(
                "hash_capacity",
                76,
                format!("{} slots overflow the file size", h.hash_capacity),
            )
        })?;
        if file_len < need {
            return Err(r.corrupt(
                file_len,
                Reason::FileTooSmall {
                    expected: need,
                    actual: file_len,
                },
            ));
        }
        Ok(h)
    }

    /// Checks that this index can belong to `log` (identifier, covered range, lengths).
    pub fn check_against_log(
        &self,
        index_path: &Path,
        log_path: &Path,
        log: &LogHeader,
    ) -> Result<()> {
        if self.file_identifier != log.file_identifier {
            return Err(Error::IdentifierMismatch {
                log: log_path.to_path_buf(),
                index: index_path.to_path_buf(),
                log_id: log.file_identifier,
                index_id: self.file_identifier,
            });
        }
        let field = |name: &'static str, off: u64, detail: String| {
            Error::corruption(
                FileKind::SparkeyIndex,
                index_path,
                off,
                Reason::HeaderField {
                    field: name,
                    detail,
                },
            )
        };
        if self.data_end > log.data_end {
            return Err(field(
                "data_end",
                20,
                format!(
                    "{} is past the log's data_end {}",
                    self.data_end, log.data_end
                ),
            ));
        }
        if self.max_key_len > log.max_key_len {
            return Err(field(
                "max_key_len",
                28,
                format!("{} exceeds the log's {}", self.max_key_len, log.max_key_len),
            ));
        }
        if self.max_value_len > log.max_value_len {
            return Err(field(
                "max_value_len",
                36,
                format!(
                    "{} exceeds the log's {}",
                    self.max_value_len, log.max_value_len
                ),
            ));
        }
        if log.compression != Compression::None
            && self.entry_block_bits + bitlen(self.data_end) > 64
        {
            return Err(field(
                "entry_block_bits",
                92,
                format!("{} makes addresses overflow 64 bits", self.entry_block_bits),
            ));
        }
        Ok(())
    }
}
