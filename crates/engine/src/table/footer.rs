//! Block handles and the fixed 64-byte footer at the end of a table file (FORMAT.md §4.6).
//!
//! Owns: [`BlockHandle`] (where a stored block is; VLQ-encoded in index entries,
//! fixed-width in the footer), the [`Footer`] encoding, its validation order (length,
//! magic, checksum, version), and the layout rule that the blocks tile the file: data
//! blocks, then the filter (if any), the index and the properties block, each directly
//! after the previous one, then the footer.
//!
//! Thread-safety: plain values and pure functions.

use std::path::Path;

use super::{BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION, FORMAT_VERSION_PLAIN, MAGIC};
use crate::checksum::Checksum;
use crate::coding::{get_u32_le, get_u64_le, put_vlq, Cursor};
use crate::error::{Error, FileKind, Reason, Result};

/// Where a stored block is: its offset in the file and its stored body length (without
/// the 5-byte trailer that follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    /// Offset of the block's first byte.
    pub(crate) offset: u64,
    /// Stored body bytes (compressed or not), excluding the trailer.
    pub(crate) size: u64,
}

impl BlockHandle {
    /// Appends the index-entry form: `offset: VLQ, size: VLQ`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        put_vlq(out, self.offset);
        put_vlq(out, self.size);
    }

    /// Parses the index-entry form; `buf` must hold exactly one handle.
    ///
    /// # Errors
    /// `Truncated`, `BadVarint`, or `BadEntry` if bytes follow the handle.
    pub(crate) fn decode(buf: &[u8]) -> std::result::Result<BlockHandle, Reason> {
        let mut cur = Cursor::new(buf);
        let handle = BlockHandle {
            offset: cur.vlq()?,
            size: cur.vlq()?,
        };
        if !cur.is_empty() {
            return Err(Reason::BadEntry("bytes follow a block handle"));
        }
        Ok(handle)
    }

    /// The offset just past the block's trailer, or `None` if that overflows.
    pub(crate) fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The decoded footer. A filter handle with `size == 0` means the table has no filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The bloom filter block (`size` 0 and `offset` 0: none).
    pub(crate) filter: BlockHandle,
    /// The index block.
    pub(crate) index: BlockHandle,
    /// The properties block.
    pub(crate) properties: BlockHandle,
    /// The format version (1, or 2 for a table with a range-tombstone block).
    pub(crate) version: u32,
}

/// Footer field offsets (FORMAT.md §4.6).
const VERSION_AT: usize = 48;
const CRC_AT: usize = 52;
const MAGIC_AT: usize = 56;

impl Footer {
    /// The 64 footer bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        for h in [self.filter, self.index, self.properties] {
            out.extend_from_slice(&h.offset.to_le_bytes());
            out.extend_from_slice(&h.size.to_le_bytes());
        }
        out.extend_from_slice(&self.version.to_le_bytes());
        let crc = Checksum::of(&out).masked();
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&MAGIC);
        out
    }

    /// Decodes the footer `bytes` found at `footer_offset` of `path`: magic first (is this
    /// a table at all?), then the checksum, then the version.
    ///
    /// # Errors
    /// `Corruption` at `footer_offset` with `Truncated` (not 64 bytes), `BadMagic` (`found`
    /// is the first 4-byte half of the magic field that differs, little-endian) or
    /// `Checksum`; `UnsupportedVersion` (major = the version, minor 0) for a version this
    /// build does not read.
    pub(crate) fn decode(bytes: &[u8], path: &Path, footer_offset: u64) -> Result<Footer> {
        let corrupt = |reason| Error::corruption(FileKind::Table, path, footer_offset, reason);
        if bytes.len() != FOOTER_LEN {
            return Err(corrupt(Reason::Truncated));
        }
        let word = |at| get_u32_le(bytes, at).unwrap_or_default();
        let magic = bytes.get(MAGIC_AT..).unwrap_or_default();
        if magic != MAGIC {
            let lo = word(MAGIC_AT);
            let found = if lo != u32::from_le_bytes([b'C', b'A', b'I', b'R']) {
                lo
            } else {
                word(MAGIC_AT + 4)
            };
            return Err(corrupt(Reason::BadMagic { found }));
        }
        let stored = word(CRC_AT);
        let computed = Checksum::of(bytes.get(..CRC_AT).unwrap_or_default()).masked();
        if stored != computed {
            return Err(corrupt(Reason::Checksum { stored, computed }));
        }
        let version = word(VERSION_AT);
        if !(FORMAT_VERSION_PLAIN..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                file: FileKind::Table,
                path: path.to_path_buf(),
                major: version,
                minor: 0,
            });
        }
        let handle = |i: usize| BlockHandle {
            offset: get_u64_le(bytes, 16 * i).unwrap_or_default(),
            size: get_u64_le(bytes, 16 * i + 8).unwrap_or_default(),
        };
        Ok(Footer {
            filter: handle(0),
            index: handle(1),
            properties: handle(2),
            version,
        })
    }

    /// Checks that the blocks tile the file before the footer at `footer_offset` (filter,
    /// index and properties each directly after the previous, the properties block ending
    /// at the footer) and returns the end of the data blocks.
    ///
    /// # Errors
    /// `HeaderField` naming the first handle that breaks the rule (reported at the
    /// footer's offset, where the handles are stored).
    pub(crate) fn data_end(&self, footer_offset: u64) -> std::result::Result<u64, Reason> {
        let bad = |field: &'static str, h: BlockHandle, expected_end: u64| Reason::HeaderField {
            field,
            detail: format!(
                "block at {} of {} bytes does not end at {expected_end}",
                h.offset, h.size
            ),
        };
        let checks = [
            ("properties handle", self.properties, footer_offset),
            ("index handle", self.index, self.properties.offset),
        ];
        for (field, h, expected_end) in checks {
            if h.end() != Some(expected_end) {
                return Err(bad(field, h, expected_end));
            }
        }
        if self.filter.size == 0 {
            if self.filter.offset != 0 {
                return Err(bad("filter handle", self.filter, 0));
            }
            return Ok(self.index.offset);
        }
        if self.filter.end() != Some(self.index.offset) {
            return Err(bad("filter handle", self.filter, self.index.offset));
        }
        Ok(self.filter.offset)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    fn sample() -> Footer {
        Footer {
            filter: BlockHandle {
                offset: 100,
                size: 20,
            },
            index: BlockHandle {
                offset: 125,
                size: 30,
            },
            properties: BlockHandle {
                offset: 160,
                size: 40,
            },
            version: FORMAT_VERSION_PLAIN,
        }
    }

    #[test]
    fn round_trip_and_layout() {
        let bytes = sample().encode();
        assert_eq!(bytes.len(), FOOTER_LEN);
        assert_eq!(&bytes[56..], b"CAIRNSST");
        let f = Footer::decode(&bytes, Path::new("t"), 205).unwrap();
        assert_eq!(f, sample());
        assert_eq!(f.data_end(205), Ok(100));
        assert!(f.data_end(206).is_err());
        let mut no_filter = sample();
        no_filter.filter = BlockHandle::default();
        assert_eq!(no_filter.data_end(205), Ok(125));
        no_filter.filter.offset = 3;
        assert!(no_filter.data_end(205).is_err());
        let mut gap = sample();
        gap.filter.size = 19;
        assert!(gap.data_end(205).is_err());
        let mut huge = sample();
        huge.index.offset = u64::MAX;
        assert!(huge.data_end(205).is_err(), "overflow is refused");
    }

    #[test]
    fn any_flipped_byte_is_corruption() {
        let good = sample().encode();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            let err = Footer::decode(&bad, Path::new("t"), 9).unwrap_err();
            let c = err
                .as_corruption()
                .unwrap_or_else(|| panic!("byte {i}: {err}"));
            assert_eq!((c.file, c.offset), (FileKind::Table, 9));
            if i >= MAGIC_AT {
                assert!(matches!(c.reason, Reason::BadMagic { .. }), "byte {i}");
            } else {
                assert!(matches!(c.reason, Reason::Checksum { .. }), "byte {i}");
            }
        }
        assert!(Footer::decode(&good[1..], Path::new("t"), 9).is_err());
    }

    #[test]
    fn versions_1_2_and_3_are_read() {
        for version in [2, FORMAT_VERSION] {
            let mut f = sample();
            f.version = version;
            let f = Footer::decode(&f.encode(), Path::new("t"), 0).unwrap();
            assert_eq!(f.version, version);
        }
        assert_eq!(FORMAT_VERSION, 3);
        assert_eq!(
            Footer::decode(&sample().encode(), Path::new("t"), 0)
                .unwrap()
                .version,
            1
        );
    }

    #[test]
    fn unknown_version_is_unsupported_not_corrupt() {
        let mut bytes = sample().encode();
        bytes[VERSION_AT..VERSION_AT + 4].copy_from_slice(&4u32.to_le_bytes());
        let crc = Checksum::of(&bytes[..CRC_AT]).masked();
        bytes[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        match Footer::decode(&bytes, Path::new("t"), 0) {
            Err(Error::UnsupportedVersion {
                file: FileKind::Table,
                major: 4,
                minor: 0,
                ..
            }) => {}
            other => panic!("expected UnsupportedVersion, got {other:?}"),
        }
    }

    #[test]
    fn handles_round_trip_and_refuse_trailing_bytes() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 4096,
        };
        let mut buf = Vec::new();
        h.encode_into(&mut buf);
        assert_eq!(BlockHandle::decode(&buf), Ok(h));
        buf.push(0);
        assert!(BlockHandle::decode(&buf).is_err());
        assert_eq!(BlockHandle::decode(&[0x80]), Err(Reason::Truncated));
        assert_eq!(h.end(), Some((1 << 40) + 4096 + 5));
    }
}
