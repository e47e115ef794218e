//! The write-ahead log of the ordered store: every write batch is appended here, as one
//! checksummed record, before it reaches the memtable. Byte layout: [`FORMAT.md`](FORMAT.md).
//!
//! Owns: the file naming (`<id:020>.wal`), the file header and record framing
//! ([`Writer`] encodes, [`reader`] decodes), torn-tail and corruption classification, and
//! the writer's poisoning after a failed write or sync. It does not interpret payloads
//! (they are encoded write batches, see `batch`), choose when to rotate (the `Db` does, by
//! [`Writer::len`]) or decide durability modes (the `Db` decides when to call
//! [`Writer::flush`] and [`Writer::sync`]).
//!
//! Invariants:
//! 1. One record carries exactly one batch, so a batch is recovered whole or not at all.
//! 2. Record seqnos strictly increase within a file; the writer refuses otherwise and the
//!    reader reports a decreasing or repeated seqno as corruption.
//! 3. A file is written by one [`Writer`] from creation to rotation and never appended to
//!    after a crash: recovery reads old files and the `Db` starts a new file with a higher
//!    id, so bytes of a torn tail never end up followed by valid records.
//! 4. Nothing in this module panics or allocates from an unchecked length on any input.
//!
//! Thread-safety: a [`Writer`] has one owner (`&mut self`); the `Db` serializes appends
//! (group commit happens above it). Decoding is pure and may run on any thread.

pub(crate) mod reader;
mod writer;

pub(crate) use reader::{decode_all, Dropped, ReadOptions, Reader, Record, TornTail};
pub(crate) use writer::Writer;

use crate::checksum::Checksum;
use crate::files::FileHeader;

/// The file magic: the bytes `C W A L` read as a little-endian `u32`.
pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"CWAL");

/// The format version this build writes. Version 2 allows the batch kinds added after
/// version 1 (RangeDelete and PutAttrs, see `BATCH_FORMAT.md`); version 3 adds the
/// `Synced` record (FORMAT.md §5); version 4 allows the batch kind Merge (5). The record
/// framing is unchanged.
pub(crate) const VERSION: u32 = 4;

/// The first version whose files may hold `Synced` records.
pub(crate) const SYNCED_SINCE: u32 = 3;

/// Payload bytes of a `Synced` record: the `u64` end of the synced bytes.
pub(crate) const SYNCED_PAYLOAD_LEN: usize = 8;

/// The oldest format version this build reads (every version up to [`VERSION`] is read:
/// a version-1 log simply holds no op of a later kind).
pub(crate) const MIN_READ_VERSION: u32 = 1;

/// Bytes of the file header: magic, version, file id, header checksum.
pub(crate) const FILE_HEADER_LEN: usize = crate::files::FILE_HEADER_LEN;

/// Bytes of a record header: two checksums, payload length, kind, flags, reserved, seqno.
pub(crate) const RECORD_HEADER_LEN: usize = 24;

/// Largest payload a record may carry (256 MiB); larger batches are refused by the writer
/// and larger lengths are treated as damage by the reader.
pub(crate) const MAX_PAYLOAD_LEN: usize = 1 << 28;

/// Record kinds. On-disk values; never renumbered, retired values stay listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// The payload is one encoded write batch.
    Batch = 1,
    /// A sync mark: the payload is the `u64` file offset up to which the file was fsynced
    /// before this record was written. Evidence for recovery that the records before that
    /// offset were durable (FORMAT.md §7).
    Synced = 2,
}

/// The 20-byte file header of WAL file `id`.
pub(crate) fn encode_file_header(id: u64) -> Vec<u8> {
    FileHeader {
        magic: MAGIC,
        version: VERSION,
        id,
    }
    .encode()
}

/// The 16 checksummed fixed fields of a record header (offsets 8..24).
fn record_fields(kind: Kind, seqno: u64, payload_len: u32) -> [u8; 16] {
    let mut fields = [0u8; 16];
    let parts: [&[u8]; 5] = [
        &payload_len.to_le_bytes(),
        &[kind as u8],
        &[0],    // flags
        &[0, 0], // reserved
        &seqno.to_le_bytes(),
    ];
    for (dst, src) in fields.iter_mut().zip(parts.iter().flat_map(|p| p.iter())) {
        *dst = *src;
    }
    fields
}

/// Appends one record (header then payload) to `out`.
///
/// Requires: `payload.len() <= MAX_PAYLOAD_LEN` (checked by the writer before calling).
pub(crate) fn encode_record(out: &mut Vec<u8>, seqno: u64, payload: &[u8]) {
    encode_framed(out, Kind::Batch, seqno, payload);
}

/// Appends a `Synced` record saying that the file's bytes `0..synced_end` were fsynced
/// before it was written. Its seqno field is 0.
pub(crate) fn encode_synced(out: &mut Vec<u8>, synced_end: u64) {
    encode_framed(out, Kind::Synced, 0, &synced_end.to_le_bytes());
}

fn encode_framed(out: &mut Vec<u8>, kind: Kind, seqno: u64, payload: &[u8]) {
    debug_assert!(payload.len() <= MAX_PAYLOAD_LEN);
    let fields = record_fields(kind, seqno, payload.len() as u32);
    let header_crc = Checksum::of(&fields);
    let record_crc = header_crc.extend(payload);
    out.reserve(RECORD_HEADER_LEN + payload.len());
    out.extend_from_slice(&header_crc.masked().to_le_bytes());
    out.extend_from_slice(&record_crc.masked().to_le_bytes());
    out.extend_from_slice(&fields);
    out.extend_from_slice(payload);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The sizes and bytes of FORMAT.md §9 (worked example).
    #[test]
    fn encoding_matches_the_worked_example() {
        let header = encode_file_header(7);
        assert_eq!(header.len(), FILE_HEADER_LEN);
        assert_eq!(hex(&header), "4357414c0400000007000000000000000c325871");
        let mut rec = Vec::new();
        encode_record(&mut rec, 5, b"hi");
        assert_eq!(rec.len(), RECORD_HEADER_LEN + 2);
        assert_eq!(
            hex(&rec),
            "81e0be5b46c98f1a020000000100000005000000000000006869"
        );
        // The sync mark after it: the file's first 46 bytes were fsynced.
        let mut mark = Vec::new();
        encode_synced(&mut mark, 46);
        assert_eq!(mark.len(), RECORD_HEADER_LEN + SYNCED_PAYLOAD_LEN);
        assert_eq!(
            hex(&mark),
            "c43ddedddb96e6e9080000000200000000000000000000002e00000000000000"
        );
    }
}
