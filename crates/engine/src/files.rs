//! File identity of the ordered store: the name of every file a store directory holds,
//! and the 20-byte header its WAL, manifest and blob files (and packs) begin with.
//!
//! Names. A numbered file is its id as exactly 20 decimal digits and an extension:
//! `.sst` (a table), `.blob` (a value-log file), `.wal` (a log file); a manifest is
//! `MANIFEST-` and the 20 digits. [`CURRENT`] names the live manifest, [`CURRENT_TMP`] is
//! its replacement being written, [`LOCK`] is the directory lock. Ids of numbered files
//! come from one counter per store, so no two share an id.
//!
//! Invariants:
//! 1. [`FileType::name`] and [`FileType::parse`] are inverse: a name parses only if it is
//!    exactly what `name` makes for some id (no sign, no shorter or longer digit run, no
//!    other extension), so a file the store did not make is never taken for one of its own.
//! 2. [`FileHeader::decode`] reads no byte past the 20 of the header and accepts a header
//!    only if its magic is the one asked for and its checksum (masked CRC32C of the first
//!    16 bytes) matches; each format then checks the version and id against what it
//!    expects.

use crate::checksum::Checksum;
use crate::coding::{get_u32_le, get_u64_le};
use crate::error::Reason;

/// The file naming the live manifest.
pub(crate) const CURRENT: &str = "CURRENT";

/// The temporary name a new [`CURRENT`] is written under before it is renamed.
pub(crate) const CURRENT_TMP: &str = "CURRENT.tmp";

/// The directory lock of a store opened for writing.
pub(crate) const LOCK: &str = "LOCK";

/// The kinds of numbered file a store directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileType {
    /// A table (`table/FORMAT.md`).
    Table,
    /// A value-log file (`vlog/FORMAT.md`).
    Blob,
    /// A write-ahead log file (`wal/FORMAT.md`).
    Wal,
    /// A manifest (`version/FORMAT.md`).
    Manifest,
}

/// Every numbered file type, for classifying a name.
const ALL: [FileType; 4] = [
    FileType::Table,
    FileType::Blob,
    FileType::Wal,
    FileType::Manifest,
];

impl FileType {
    /// The name of this type's file number `id`.
    pub(crate) fn name(self, id: u64) -> String {
        match self {
            FileType::Table => format!("{id:020}.sst"),
            FileType::Blob => format!("{id:020}.blob"),
            FileType::Wal => format!("{id:020}.wal"),
            FileType::Manifest => format!("MANIFEST-{id:020}"),
        }
    }

    /// The id in `name` if it names a file of this type (invariant 1).
    pub(crate) fn parse(self, name: &str) -> Option<u64> {
        let digits = match self {
            FileType::Table => name.strip_suffix(".sst"),
            FileType::Blob => name.strip_suffix(".blob"),
            FileType::Wal => name.strip_suffix(".wal"),
            FileType::Manifest => name.strip_prefix("MANIFEST-"),
        }?;
        if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }

    /// The type and id of `name`, if it names a numbered file of a store.
    pub(crate) fn of(name: &str) -> Option<(FileType, u64)> {
        ALL.into_iter()
            .find_map(|t| t.parse(name).map(|id| (t, id)))
    }
}

/// The id of a table file (`FileType::Table`), kept apart from a blob file's id by type:
/// both come from the store's one file counter, and a table id given where a blob id is
/// meant (or the other way round) would name a file that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TableId(pub(crate) u64);

/// The id of a value-log file (`FileType::Blob`); see [`TableId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct BlobId(pub(crate) u64);

impl TableId {
    /// The table's file name.
    pub(crate) fn file_name(self) -> String {
        FileType::Table.name(self.0)
    }

    /// The id of the table `name` names, if it names one.
    pub(crate) fn parse(name: &str) -> Option<TableId> {
        FileType::Table.parse(name).map(TableId)
    }
}

impl BlobId {
    /// The blob file's name.
    pub(crate) fn file_name(self) -> String {
        FileType::Blob.name(self.0)
    }

    /// The id of the blob file `name` names, if it names one.
    pub(crate) fn parse(name: &str) -> Option<BlobId> {
        FileType::Blob.parse(name).map(BlobId)
    }
}

impl std::fmt::Display for TableId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for BlobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Bytes of a file header.
pub(crate) const FILE_HEADER_LEN: usize = 20;

/// The header `magic:u32 version:u32 file_id:u64 header_crc:u32` (little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileHeader {
    pub(crate) magic: u32,
    pub(crate) version: u32,
    pub(crate) id: u64,
}

impl FileHeader {
    /// The header's 20 bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(FILE_HEADER_LEN);
        h.extend_from_slice(&self.magic.to_le_bytes());
        h.extend_from_slice(&self.version.to_le_bytes());
        h.extend_from_slice(&self.id.to_le_bytes());
        let crc = Checksum::of(&h).masked();
        h.extend_from_slice(&crc.to_le_bytes());
        h
    }

    /// Decodes the header at the start of `bytes`, which must carry `magic` (invariant 2).
    ///
    /// # Errors
    /// The offset and reason of the damage: `(0, Truncated)` for fewer than 20 bytes,
    /// `(0, BadMagic)`, `(16, Checksum)`.
    pub(crate) fn decode(bytes: &[u8], magic: u32) -> Result<FileHeader, (u64, Reason)> {
        let (Some(found), Some(version), Some(id), Some(stored), Some(fields)) = (
            get_u32_le(bytes, 0),
            get_u32_le(bytes, 4),
            get_u64_le(bytes, 8),
            get_u32_le(bytes, 16),
            bytes.get(..16),
        ) else {
            return Err((0, Reason::Truncated));
        };
        if found != magic {
            return Err((0, Reason::BadMagic { found }));
        }
        let computed = Checksum::of(fields).masked();
        if computed != stored {
            return Err((16, Reason::Checksum { stored, computed }));
        }
        Ok(FileHeader { magic, version, id })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for t in ALL {
            for id in [0, 7, 42, u64::MAX] {
                let name = t.name(id);
                assert_eq!(t.parse(&name), Some(id), "{name}");
                assert_eq!(FileType::of(&name), Some((t, id)), "{name}");
            }
        }
        assert_eq!(FileType::Table.name(42), "00000000000000000042.sst");
        assert_eq!(FileType::Manifest.name(42), "MANIFEST-00000000000000000042");
        for bad in [
            "42.sst",
            "0000000000000000042.sst",
            "000000000000000000042.sst",
            "0000000000000000004x.sst",
            "99999999999999999999.sst",
            "+0000000000000000042.wal",
            "00000000000000000042.sst.tmp",
            "00000000000000000042.SST",
            "MANIFEST-42",
            "CURRENT",
            "CURRENT.tmp",
            "LOCK",
            "",
        ] {
            assert_eq!(FileType::of(bad), None, "{bad}");
        }
    }

    #[test]
    fn headers_round_trip_and_any_damage_is_found() {
        let h = FileHeader {
            magic: 0x1234_5678,
            version: 3,
            id: 99,
        };
        let bytes = h.encode();
        assert_eq!(bytes.len(), FILE_HEADER_LEN);
        assert_eq!(FileHeader::decode(&bytes, h.magic), Ok(h));
        for cut in 0..FILE_HEADER_LEN {
            assert_eq!(
                FileHeader::decode(&bytes[..cut], h.magic),
                Err((0, Reason::Truncated))
            );
        }
        for i in 0..FILE_HEADER_LEN {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(FileHeader::decode(&bad, h.magic).is_err(), "byte {i}");
        }
        assert!(matches!(
            FileHeader::decode(&bytes, 0x8765_4321),
            Err((0, Reason::BadMagic { found: 0x1234_5678 }))
        ));
    }
}
