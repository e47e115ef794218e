//! The bytes of a blob file (FORMAT.md §3–§5): file header, record header, chunked value
//! with its checksums, footer. Pure encoding and decoding; no I/O.
//!
//! Grammar:
//!
//! ```text
//! file    := file_header record* footer?
//! header  := magic:u32 version:u32 file_id:u64 header_crc:u32          (20 bytes)
//! record  := header_crc:u32 keyspace:u32 value_len:u32 key_len:u16 flags:u8 reserved:u8
//!            key[key_len] (chunk crc:u32)*                                (chunks of 64 KiB)
//! footer  := records_end:u64 record_count:u64 value_bytes:u64 file_id:u64
//!            footer_crc:u32 magic:u32                                   (40 bytes)
//! ```
//!
//! Checksums (all masked CRC32C, `checksum.rs`):
//! * record `header_crc` = CRC of `file_id:u64 ‖ record_offset:u64 ‖ record bytes 4..16 ‖
//!   key`, so a record only checks out at the place it was written;
//! * chunk `crc` = CRC of `header_crc:u32 (as stored) ‖ chunk_index:u32 ‖ chunk`, so a chunk
//!   only checks out in its own record at its own position;
//! * footer `footer_crc` = CRC of footer bytes 0..32.
//!
//! Every decoder checks lengths before use and reports a [`Reason`]; callers add the file,
//! path and offset.

use crate::checksum::Checksum;
use crate::coding::{get_u32_le, get_u64_le};
use crate::error::Reason;
use crate::files::FileHeader;

/// The file magic: the bytes `C B L B` read as a little-endian `u32`.
pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"CBLB");

/// The footer magic: the bytes `C B L F` read as a little-endian `u32`.
pub(crate) const FOOTER_MAGIC: u32 = u32::from_le_bytes(*b"CBLF");

/// The format version this build writes and reads.
pub(crate) const VERSION: u32 = 1;

/// Bytes of the file header: magic, version, file id, header checksum.
pub(crate) const FILE_HEADER_LEN: u64 = crate::files::FILE_HEADER_LEN as u64;

/// Bytes of a record header (before the key).
pub(crate) const RECORD_HEADER_LEN: u64 = 16;

/// Bytes of value per checksummed chunk (64 KiB); the last chunk may be shorter.
pub(crate) const CHUNK_LEN: u64 = 64 << 10;

/// Bytes of the checksum that follows each chunk.
pub(crate) const CHUNK_CRC_LEN: u64 = 4;

/// Bytes of the footer of a sealed file.
pub(crate) const FOOTER_LEN: u64 = 40;

/// The 20-byte file header of blob file `id`.
pub(crate) fn encode_file_header(id: u64) -> Vec<u8> {
    FileHeader {
        magic: MAGIC,
        version: VERSION,
        id,
    }
    .encode()
}

/// Why a file header is unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// Damage at an offset of the header.
    Damaged(u64, Reason),
    /// A version this build does not read.
    Unsupported(u32),
}

/// Checks a file header and returns its file id.
///
/// # Errors
/// `Damaged(0, Truncated)` if fewer than 20 bytes, `Damaged(0, BadMagic)`,
/// `Damaged(16, Checksum)`, `Unsupported(version)`, `Damaged(8, HeaderField "file_id")` if
/// `expected_id` is given and differs.
pub(crate) fn decode_file_header(
    bytes: &[u8],
    expected_id: Option<u64>,
) -> Result<u64, HeaderError> {
    let FileHeader { version, id, .. } = FileHeader::decode(bytes, MAGIC)
        .map_err(|(at, reason)| HeaderError::Damaged(at, reason))?;
    if version != VERSION {
        return Err(HeaderError::Unsupported(version));
    }
    if let Some(expected) = expected_id {
        if expected != id {
            return Err(HeaderError::Damaged(
                8,
                Reason::HeaderField {
                    field: "file_id",
                    detail: format!("{id} differs from the id {expected} in the file name"),
                },
            ));
        }
    }
    Ok(id)
}

/// Number of chunks a value of `value_len` bytes is stored in (0 for an empty value).
pub(crate) fn chunk_count(value_len: u32) -> u64 {
    u64::from(value_len).div_ceil(CHUNK_LEN)
}

/// Bytes a record takes: header, key, value and one checksum per chunk.
pub(crate) fn record_len(key_len: usize, value_len: u32) -> u64 {
    RECORD_HEADER_LEN
        + key_len as u64
        + u64::from(value_len)
        + chunk_count(value_len) * CHUNK_CRC_LEN
}

/// The masked checksum of chunk `index` of the record whose stored header checksum is
/// `header_crc`.
pub(crate) fn chunk_crc(header_crc: u32, index: u32, chunk: &[u8]) -> u32 {
    let mut seed = [0u8; 8];
    seed[..4].copy_from_slice(&header_crc.to_le_bytes());
    seed[4..].copy_from_slice(&index.to_le_bytes());
    Checksum::of(&seed).extend(chunk).masked()
}

/// The masked header checksum of a record: file id, record offset, header bytes 4..16, key.
fn header_crc(file_id: u64, offset: u64, fields: &[u8; 12], key: &[u8]) -> u32 {
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&file_id.to_le_bytes());
    seed[8..].copy_from_slice(&offset.to_le_bytes());
    Checksum::of(&seed).extend(fields).extend(key).masked()
}

/// The 12 checksummed fixed fields of a record header (bytes 4..16).
fn header_fields(keyspace: u32, value_len: u32, key_len: u16) -> [u8; 12] {
    let mut f = [0u8; 12];
    f[..4].copy_from_slice(&keyspace.to_le_bytes());
    f[4..8].copy_from_slice(&value_len.to_le_bytes());
    f[8..10].copy_from_slice(&key_len.to_le_bytes());
    // f[10] flags = 0, f[11] reserved = 0
    f
}

/// A record's place and shape: everything needed to find and check its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordRef {
    /// The blob file's id.
    pub(crate) file_id: u64,
    /// File offset of the record's first byte.
    pub(crate) offset: u64,
    /// The keyspace id of the entry the value belongs to.
    pub(crate) keyspace: u32,
    /// Bytes of the user key.
    pub(crate) key_len: u16,
    /// Bytes of the value.
    pub(crate) value_len: u32,
    /// The record's header checksum, as stored (masked).
    pub(crate) header_crc: u32,
}

impl RecordRef {
    /// The record header of a new record, with its checksum in bytes 0..4.
    ///
    /// Requires: `key.len() <= u16::MAX` (checked by the writer).
    pub(crate) fn new(
        file_id: u64,
        offset: u64,
        keyspace: u32,
        key: &[u8],
        value_len: u32,
    ) -> (RecordRef, [u8; RECORD_HEADER_LEN as usize]) {
        debug_assert!(key.len() <= usize::from(u16::MAX));
        let key_len = key.len() as u16;
        let fields = header_fields(keyspace, value_len, key_len);
        let crc = header_crc(file_id, offset, &fields, key);
        let mut raw = [0u8; RECORD_HEADER_LEN as usize];
        raw[..4].copy_from_slice(&crc.to_le_bytes());
        raw[4..].copy_from_slice(&fields);
        let r = RecordRef {
            file_id,
            offset,
            keyspace,
            key_len,
            value_len,
            header_crc: crc,
        };
        (r, raw)
    }

    /// Reads the fields of the 16-byte record header `raw` found at `offset` of file
    /// `file_id`, trusting nothing yet: call [`RecordRef::check`] with the key before using
    /// any field but `key_len` (which is at most 65,535 and safe to read that many bytes by).
    pub(crate) fn parse(file_id: u64, offset: u64, raw: &[u8]) -> Result<RecordRef, Reason> {
        let (Some(crc), Some(keyspace), Some(value_len), Some(k0), Some(k1)) = (
            get_u32_le(raw, 0),
            get_u32_le(raw, 4),
            get_u32_le(raw, 8),
            raw.get(12),
            raw.get(13),
        ) else {
            return Err(Reason::Truncated);
        };
        Ok(RecordRef {
            file_id,
            offset,
            keyspace,
            key_len: u16::from_le_bytes([*k0, *k1]),
            value_len,
            header_crc: crc,
        })
    }

    /// Checks the header checksum against `raw` (the 16 header bytes) and `key`, then the
    /// reserved bits.
    ///
    /// # Errors
    /// `Checksum` if the header does not check out at this place; `BadEntry` if the flags or
    /// reserved byte are not zero.
    pub(crate) fn check(&self, raw: &[u8], key: &[u8]) -> Result<(), Reason> {
        let Some(fields) = raw.get(4..16).and_then(|f| <&[u8; 12]>::try_from(f).ok()) else {
            return Err(Reason::Truncated);
        };
        if key.len() != usize::from(self.key_len) {
            return Err(Reason::Truncated);
        }
        let computed = header_crc(self.file_id, self.offset, fields, key);
        if computed != self.header_crc {
            return Err(Reason::Checksum {
                stored: self.header_crc,
                computed,
            });
        }
        if fields[10] != 0 || fields[11] != 0 {
            return Err(Reason::BadEntry("reserved blob record bits are set"));
        }
        Ok(())
    }

    /// File offset of the key.
    pub(crate) fn key_offset(&self) -> u64 {
        self.offset.saturating_add(RECORD_HEADER_LEN)
    }

    /// File offset of the first chunk.
    pub(crate) fn value_offset(&self) -> u64 {
        self.key_offset().saturating_add(u64::from(self.key_len))
    }

    /// Number of chunks.
    pub(crate) fn chunk_count(&self) -> u64 {
        chunk_count(self.value_len)
    }

    /// Bytes of value in chunk `index` (0 past the last chunk).
    pub(crate) fn chunk_len(&self, index: u64) -> u64 {
        let start = index.saturating_mul(CHUNK_LEN);
        u64::from(self.value_len)
            .saturating_sub(start)
            .min(CHUNK_LEN)
    }

    /// File offset of chunk `index`.
    pub(crate) fn chunk_offset(&self, index: u64) -> u64 {
        self.value_offset()
            .saturating_add(index.saturating_mul(CHUNK_LEN + CHUNK_CRC_LEN))
    }

    /// File offset just past the record (saturating: an offset near `u64::MAX` from a
    /// damaged handle gives an end no file reaches).
    pub(crate) fn end(&self) -> u64 {
        self.offset
            .saturating_add(record_len(usize::from(self.key_len), self.value_len))
    }

    /// Checks chunk `index` given as its bytes followed by its 4-byte checksum.
    ///
    /// # Errors
    /// `Truncated` if `framed` is not exactly the chunk and its checksum; `Checksum` if the
    /// checksum is wrong.
    pub(crate) fn check_chunk(&self, index: u64, framed: &[u8]) -> Result<(), Reason> {
        let len = self.chunk_len(index) as usize;
        let (Some(chunk), Some(stored)) = (framed.get(..len), get_u32_le(framed, len)) else {
            return Err(Reason::Truncated);
        };
        if framed.len() != len + CHUNK_CRC_LEN as usize {
            return Err(Reason::Truncated);
        }
        let index = u32::try_from(index).map_err(|_| Reason::LengthOutOfRange)?;
        let computed = chunk_crc(self.header_crc, index, chunk);
        if computed != stored {
            return Err(Reason::Checksum { stored, computed });
        }
        Ok(())
    }
}

/// Appends a whole record (header, key, chunks with checksums) to `out`; returns its shape.
///
/// Requires: `key.len() <= u16::MAX`, `value.len() <= u32::MAX` (checked by the writer).
#[cfg(test)]
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    file_id: u64,
    offset: u64,
    keyspace: u32,
    key: &[u8],
    value: &[u8],
) -> RecordRef {
    debug_assert!(value.len() <= u32::MAX as usize);
    let (r, raw) = RecordRef::new(file_id, offset, keyspace, key, value.len() as u32);
    out.reserve(record_len(key.len(), r.value_len) as usize);
    out.extend_from_slice(&raw);
    out.extend_from_slice(key);
    for (i, chunk) in value.chunks(CHUNK_LEN as usize).enumerate() {
        out.extend_from_slice(chunk);
        out.extend_from_slice(&chunk_crc(r.header_crc, i as u32, chunk).to_le_bytes());
    }
    r
}

/// The footer of a sealed blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    /// File offset of the footer = the end of the last record.
    pub(crate) records_end: u64,
    /// Records in the file.
    pub(crate) record_count: u64,
    /// Sum of the records' value lengths.
    pub(crate) value_bytes: u64,
    /// The file id (as in the header).
    pub(crate) file_id: u64,
}

impl Footer {
    /// The 40 footer bytes.
    pub(crate) fn encode(&self) -> [u8; FOOTER_LEN as usize] {
        let mut f = [0u8; FOOTER_LEN as usize];
        f[..8].copy_from_slice(&self.records_end.to_le_bytes());
        f[8..16].copy_from_slice(&self.record_count.to_le_bytes());
        f[16..24].copy_from_slice(&self.value_bytes.to_le_bytes());
        f[24..32].copy_from_slice(&self.file_id.to_le_bytes());
        let crc = Checksum::of(&f[..32]).masked();
        f[32..36].copy_from_slice(&crc.to_le_bytes());
        f[36..].copy_from_slice(&FOOTER_MAGIC.to_le_bytes());
        f
    }

    /// Decodes a footer; the caller checks that it sits where it says and matches the
    /// records.
    ///
    /// # Errors
    /// `Truncated` unless `raw` is exactly 40 bytes, `BadMagic`, `Checksum`.
    pub(crate) fn decode(raw: &[u8]) -> Result<Footer, Reason> {
        if raw.len() as u64 != FOOTER_LEN {
            return Err(Reason::Truncated);
        }
        let (Some(records_end), Some(record_count), Some(value_bytes), Some(file_id)) = (
            get_u64_le(raw, 0),
            get_u64_le(raw, 8),
            get_u64_le(raw, 16),
            get_u64_le(raw, 24),
        ) else {
            return Err(Reason::Truncated);
        };
        let (Some(stored), Some(magic), Some(covered)) =
            (get_u32_le(raw, 32), get_u32_le(raw, 36), raw.get(..32))
        else {
            return Err(Reason::Truncated);
        };
        if magic != FOOTER_MAGIC {
            return Err(Reason::BadMagic { found: magic });
        }
        let computed = Checksum::of(covered).masked();
        if computed != stored {
            return Err(Reason::Checksum { stored, computed });
        }
        Ok(Footer {
            records_end,
            record_count,
            value_bytes,
            file_id,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::files::BlobId;

    pub(crate) fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The bytes of FORMAT.md §9 (worked example).
    #[test]
    fn encoding_matches_the_worked_example() {
        let header = encode_file_header(7);
        assert_eq!(header.len() as u64, FILE_HEADER_LEN);
        let mut rec = Vec::new();
        let r = encode_record(&mut rec, 7, FILE_HEADER_LEN, 1, b"k", b"hello");
        assert_eq!(rec.len() as u64, record_len(1, 5));
        assert_eq!(rec.len(), 16 + 1 + 5 + 4);
        assert_eq!(r.end(), FILE_HEADER_LEN + 26);
        let footer = Footer {
            records_end: r.end(),
            record_count: 1,
            value_bytes: 5,
            file_id: 7,
        }
        .encode();
        assert_eq!(hex(&header), "43424c42010000000700000000000000c473c781");
        let handle = super::super::ValueHandle {
            file_id: BlobId(7),
            offset: r.offset,
            value_len: r.value_len,
            check: r.header_crc,
        };
        assert_eq!(hex(&handle.encode()), "00071405845ee0db");
        assert_eq!(
            hex(&rec),
            [
                "845ee0db",   // header_crc
                "01000000",   // keyspace 1
                "05000000",   // value_len 5
                "0100",       // key_len 1
                "00",         // flags
                "00",         // reserved
                "6b",         // key "k"
                "68656c6c6f", // chunk 0: "hello"
                "8e1a93c6",   // chunk 0 crc
            ]
            .concat()
        );
        assert_eq!(
            hex(&footer),
            [
                "2e00000000000000", // records_end 46
                "0100000000000000", // record_count 1
                "0500000000000000", // value_bytes 5
                "0700000000000000", // file_id 7
                "9058a5d9",         // footer_crc
                "43424c46",         // "CBLF"
            ]
            .concat()
        );
    }

    #[test]
    fn header_round_trip_and_every_damage() {
        let h = encode_file_header(9);
        assert_eq!(decode_file_header(&h, Some(9)), Ok(9));
        assert_eq!(decode_file_header(&h, None), Ok(9));
        assert!(matches!(
            decode_file_header(&h, Some(8)),
            Err(HeaderError::Damaged(8, Reason::HeaderField { .. }))
        ));
        for cut in 0..h.len() {
            assert_eq!(
                decode_file_header(&h[..cut], None),
                Err(HeaderError::Damaged(0, Reason::Truncated))
            );
        }
        for i in 0..h.len() {
            let mut bad = h.clone();
            bad[i] ^= 0x10;
            assert!(decode_file_header(&bad, Some(9)).is_err(), "byte {i}");
        }
        let v2 = FileHeader {
            magic: MAGIC,
            version: 2,
            id: 9,
        }
        .encode();
        assert_eq!(
            decode_file_header(&v2, None),
            Err(HeaderError::Unsupported(2))
        );
    }

    #[test]
    fn record_shape_and_chunking() {
        assert_eq!(chunk_count(0), 0);
        assert_eq!(chunk_count(1), 1);
        assert_eq!(chunk_count(CHUNK_LEN as u32), 1);
        assert_eq!(chunk_count(CHUNK_LEN as u32 + 1), 2);
        assert_eq!(record_len(3, 0), 19);
        let value: Vec<u8> = (0..(2 * CHUNK_LEN + 10)).map(|i| i as u8).collect();
        let mut out = Vec::new();
        let r = encode_record(&mut out, 3, 100, 4, b"key", &value);
        assert_eq!(out.len() as u64, r.end() - 100);
        assert_eq!(r.chunk_count(), 3);
        assert_eq!(r.chunk_len(2), 10);
        assert_eq!(r.chunk_len(3), 0);
        let raw = &out[..16];
        let parsed = RecordRef::parse(3, 100, raw).unwrap();
        assert_eq!(parsed, r);
        parsed.check(raw, b"key").unwrap();
        for i in 0..3u64 {
            let at = (r.chunk_offset(i) - 100) as usize;
            let framed = &out[at..at + r.chunk_len(i) as usize + 4];
            r.check_chunk(i, framed).unwrap();
            // The chunk does not check out at another index or in another record.
            assert!(r.check_chunk(i + 3, framed).is_err());
            let (other, _) = RecordRef::new(3, 101, 4, b"key", r.value_len);
            assert!(other.check_chunk(i, framed).is_err());
        }
        // The header is bound to its file id and offset, and to the key.
        assert!(RecordRef::parse(3, 99, raw)
            .unwrap()
            .check(raw, b"key")
            .is_err());
        assert!(RecordRef::parse(4, 100, raw)
            .unwrap()
            .check(raw, b"key")
            .is_err());
        assert!(parsed.check(raw, b"kez").is_err());
    }

    #[test]
    fn reserved_bits_are_refused_even_with_a_right_checksum() {
        let (r, mut raw) = RecordRef::new(1, 20, 0, b"k", 3);
        raw[14] = 1;
        let mut fields = [0u8; 12];
        fields.copy_from_slice(&raw[4..]);
        let crc = header_crc(1, 20, &fields, b"k");
        raw[..4].copy_from_slice(&crc.to_le_bytes());
        let parsed = RecordRef::parse(1, 20, &raw).unwrap();
        assert_eq!(parsed.key_len, r.key_len);
        assert_eq!(
            parsed.check(&raw, b"k"),
            Err(Reason::BadEntry("reserved blob record bits are set"))
        );
    }

    #[test]
    fn footer_round_trip_and_any_flipped_byte_is_refused() {
        let f = Footer {
            records_end: 12345,
            record_count: 17,
            value_bytes: 99999,
            file_id: 5,
        };
        let raw = f.encode();
        assert_eq!(Footer::decode(&raw), Ok(f));
        for i in 0..raw.len() {
            let mut bad = raw;
            bad[i] ^= 0x40;
            assert!(Footer::decode(&bad).is_err(), "byte {i}");
        }
        for cut in 0..raw.len() {
            assert_eq!(Footer::decode(&raw[..cut]), Err(Reason::Truncated));
        }
    }
}
