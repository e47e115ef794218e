//! The properties block (FORMAT.md §4.5): what a table holds, recorded by the writer so a
//! reader can rebuild [`TableMeta`] without scanning the data.
//!
//! Encoding: a sequence of fields `tag: VLQ, len: VLQ, value[len]` with strictly
//! increasing tags. Integer fields hold exactly one VLQ filling `value`; key fields hold
//! an encoded internal key. Unknown tags are skipped, so a later writer may add
//! informational fields without a version bump; every known tag up to 10 is required.
//!
//! Tags 11 and 12 (entries with an expiry, the earliest expiry) are optional: a table
//! with no expiring entry leaves them out, and a reader that predates them skips them.
//! Tag 13 locates the range-tombstone block; it is present exactly in format-version-2
//! tables (the version bump, not the tag, keeps older builds from ignoring the deletes).
//! Tag 14 (`blob_refs`, [`BlobRefs`]) is written only by a table that references blob
//! files (absent means none). Tag 15 (`repeats`) counts the entries whose user key is the
//! previous entry's; absent means unknown (a table written before it existed, or in the
//! version-1 layout), so only a present 0 promises one entry per user key.
//!
//! Invariants checked by [`Properties::decode`]: every required field present once, tags
//! increasing, `1 <= entries`, `tombstones <= entries`, `expiring <= entries`, the
//! earliest expiry present exactly when `expiring > 0`, `1 <= data_blocks <= entries`,
//! `min_seqno <= max_seqno <= SeqNo::MAX`, both keys decode as internal keys with
//! `smallest <= largest`, a known compression, a creation version equal to the
//! footer's (2 with a range-tombstone handle, else 1), no more blob references than
//! entries, and `repeats < entries`.
//!
//! Thread-safety: plain values and pure functions.

use std::cmp::Ordering;

use super::blob_refs::BlobRefs;
use super::footer::BlockHandle;
use super::{Compression, TableMeta, FORMAT_VERSION, FORMAT_VERSION_PLAIN, FORMAT_VERSION_RANGES};
use crate::coding::{put_vlq, Cursor};
use crate::error::Reason;
use crate::files::TableId;
use crate::key::{compare_encoded, InternalKey, SeqNo};

/// Field tags. On-disk values; never renumbered, retired tags stay listed.
mod tag {
    pub(super) const ENTRIES: u64 = 1;
    pub(super) const TOMBSTONES: u64 = 2;
    pub(super) const RAW_BYTES: u64 = 3;
    pub(super) const MIN_SEQNO: u64 = 4;
    pub(super) const MAX_SEQNO: u64 = 5;
    pub(super) const SMALLEST: u64 = 6;
    pub(super) const LARGEST: u64 = 7;
    pub(super) const DATA_BLOCKS: u64 = 8;
    pub(super) const COMPRESSION: u64 = 9;
    pub(super) const FORMAT_VERSION: u64 = 10;
    // Tags 1..=10 are required; the ones below are optional.
    /// Optional (absent means 0): entries that carry an expiry.
    pub(super) const EXPIRING: u64 = 11;
    /// Optional (present exactly when `EXPIRING` is non-zero): the earliest expiry.
    pub(super) const EARLIEST_EXPIRY: u64 = 12;
    /// Highest integer tag this build knows.
    pub(super) const KNOWN: u64 = 12;
    /// The range-tombstone block's handle (`offset: VLQ, size: VLQ`): present exactly in
    /// format-version-2 tables.
    pub(super) const RANGE_TOMBSTONES: u64 = 13;
    /// Optional: the table's references into the value log.
    pub(super) const BLOB_REFS: u64 = 14;
    /// Optional (absent means unknown): entries whose user key equals the previous
    /// entry's.
    pub(super) const REPEATS: u64 = 15;
}

/// The contents of a properties block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Properties {
    /// Number of entries (all kinds).
    pub(crate) entries: u64,
    /// Number of `Kind::Delete` entries.
    pub(crate) tombstones: u64,
    /// Sum of user-key and value lengths, before compression.
    pub(crate) raw_bytes: u64,
    /// Smallest entry seqno.
    pub(crate) min_seqno: SeqNo,
    /// Largest entry seqno.
    pub(crate) max_seqno: SeqNo,
    /// Encoded internal key of the first entry.
    pub(crate) smallest: Vec<u8>,
    /// Encoded internal key of the last entry.
    pub(crate) largest: Vec<u8>,
    /// Number of data blocks.
    pub(crate) data_blocks: u64,
    /// The compression the writer was asked for (a block that did not shrink enough is
    /// stored uncompressed regardless; its trailer says so).
    pub(crate) compression: Compression,
    /// The format version the table was created with: 2 if it holds range tombstones,
    /// else 1.
    pub(crate) format_version: u32,
    /// Entries that carry an expiry (expired or not).
    pub(crate) expiring: u64,
    /// The earliest expiry (Unix milliseconds) of any entry; `Some` exactly when
    /// `expiring > 0`.
    pub(crate) earliest_expiry: Option<u64>,
    /// Where the range-tombstone block is (format version 2 only).
    pub(crate) range_tombstones: Option<BlockHandle>,
    /// Per blob file, the value handles of this table that point into it and their bytes.
    pub(crate) blob_refs: BlobRefs,
    /// Entries whose user key equals the previous entry's (older versions of a key);
    /// `None` when the writer did not record it. `Some(0)`: one entry per user key.
    pub(crate) repeats: Option<u64>,
}

impl Properties {
    /// The raw properties block.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut field = |tag: u64, value: &[u8]| {
            put_vlq(&mut out, tag);
            put_vlq(&mut out, value.len() as u64);
            out.extend_from_slice(value);
        };
        let vlq = |v: u64| {
            let mut b = Vec::new();
            put_vlq(&mut b, v);
            b
        };
        field(tag::ENTRIES, &vlq(self.entries));
        field(tag::TOMBSTONES, &vlq(self.tombstones));
        field(tag::RAW_BYTES, &vlq(self.raw_bytes));
        field(tag::MIN_SEQNO, &vlq(self.min_seqno.0));
        field(tag::MAX_SEQNO, &vlq(self.max_seqno.0));
        field(tag::SMALLEST, &self.smallest);
        field(tag::LARGEST, &self.largest);
        field(tag::DATA_BLOCKS, &vlq(self.data_blocks));
        field(tag::COMPRESSION, &vlq(u64::from(self.compression.as_u8())));
        field(tag::FORMAT_VERSION, &vlq(u64::from(self.format_version)));
        if let Some(earliest) = self.earliest_expiry {
            field(tag::EXPIRING, &vlq(self.expiring));
            field(tag::EARLIEST_EXPIRY, &vlq(earliest));
        }
        if let Some(h) = self.range_tombstones {
            let mut b = Vec::new();
            h.encode_into(&mut b);
            field(tag::RANGE_TOMBSTONES, &b);
        }
        if !self.blob_refs.is_empty() {
            field(tag::BLOB_REFS, &self.blob_refs.encode());
        }
        if let Some(repeats) = self.repeats {
            field(tag::REPEATS, &vlq(repeats));
        }
        out
    }

    /// Parses and validates a raw properties block (see the module documentation).
    ///
    /// # Errors
    /// `Truncated`/`BadVarint` for framing, `BadEntry` for a missing, repeated or
    /// out-of-order field or an inconsistent value, `BadTag` for an unknown compression.
    pub(crate) fn decode(raw: &[u8]) -> Result<Properties, Reason> {
        let mut ints = [None::<u64>; tag::KNOWN as usize + 1];
        let (mut smallest, mut largest) = (None, None);
        let mut range_tombstones = None;
        let mut blob_refs = BlobRefs::default();
        let mut repeats = None;
        let mut cur = Cursor::new(raw);
        let mut last_tag = 0u64;
        while !cur.is_empty() {
            let t = cur.vlq()?;
            let len = usize::try_from(cur.vlq()?).map_err(|_| Reason::Truncated)?;
            let value = cur.take(len)?;
            if t <= last_tag {
                return Err(Reason::BadEntry("properties tags do not increase"));
            }
            last_tag = t;
            match t {
                tag::SMALLEST => smallest = Some(value.to_vec()),
                tag::LARGEST => largest = Some(value.to_vec()),
                tag::RANGE_TOMBSTONES => range_tombstones = Some(BlockHandle::decode(value)?),
                tag::BLOB_REFS => blob_refs = BlobRefs::decode(value)?,
                tag::REPEATS => repeats = Some(integer(value)?),
                t if t <= tag::KNOWN => {
                    if let Some(slot) = ints.get_mut(t as usize) {
                        *slot = Some(integer(value)?);
                    }
                }
                _ => {} // a later writer's informational field
            }
        }
        let int = |t: u64| {
            ints.get(t as usize)
                .copied()
                .flatten()
                .ok_or(Reason::BadEntry("a required property is missing"))
        };
        let missing = Reason::BadEntry("a required property is missing");
        let props = Properties {
            entries: int(tag::ENTRIES)?,
            tombstones: int(tag::TOMBSTONES)?,
            raw_bytes: int(tag::RAW_BYTES)?,
            min_seqno: SeqNo(int(tag::MIN_SEQNO)?),
            max_seqno: SeqNo(int(tag::MAX_SEQNO)?),
            smallest: smallest.ok_or_else(|| missing.clone())?,
            largest: largest.ok_or(missing)?,
            data_blocks: int(tag::DATA_BLOCKS)?,
            compression: {
                let c = int(tag::COMPRESSION)?;
                u8::try_from(c)
                    .ok()
                    .and_then(Compression::from_u8)
                    .ok_or(Reason::BadTag(c.min(255) as u8))?
            },
            format_version: u32::try_from(int(tag::FORMAT_VERSION)?)
                .map_err(|_| Reason::BadEntry("properties format version is out of range"))?,
            expiring: int(tag::EXPIRING).unwrap_or(0),
            earliest_expiry: int(tag::EARLIEST_EXPIRY).ok(),
            range_tombstones,
            blob_refs,
            repeats,
        };
        props.check()?;
        Ok(props)
    }

    fn check(&self) -> Result<(), Reason> {
        let ok = self.entries >= 1
            && self.tombstones <= self.entries
            && self.expiring <= self.entries
            && (self.expiring > 0) == self.earliest_expiry.is_some()
            && self.data_blocks >= 1
            && self.data_blocks <= self.entries
            && self.min_seqno <= self.max_seqno
            && self.max_seqno <= SeqNo::MAX
            && compare_encoded(&self.smallest, &self.largest) != Ordering::Greater
            && self.blob_refs.handle_count() <= self.entries
            && self.repeats.is_none_or(|r| r < self.entries);
        if !ok {
            return Err(Reason::BadEntry("table properties are inconsistent"));
        }
        InternalKey::decode(&self.smallest)?;
        InternalKey::decode(&self.largest)?;
        // Version 3 tables may have a range-tombstone block or not; version 2 tables have
        // one and version 1 tables none.
        let expected = if self.format_version == FORMAT_VERSION {
            FORMAT_VERSION
        } else if self.range_tombstones.is_some() {
            FORMAT_VERSION_RANGES
        } else {
            FORMAT_VERSION_PLAIN
        };
        if self.format_version != expected {
            return Err(Reason::BadEntry(
                "properties format version does not match the range-tombstone block",
            ));
        }
        Ok(())
    }

    /// True if the writer recorded that no two entries share a user key (`repeats` is
    /// `Some(0)`): every entry is the only version of its key in the table.
    pub(crate) fn distinct_keys(&self) -> bool {
        self.repeats == Some(0)
    }

    /// The table summary for table `id` whose file is `file_size` bytes.
    pub(crate) fn meta(&self, id: TableId, file_size: u64) -> TableMeta {
        TableMeta {
            id,
            file_size,
            smallest: self.smallest.clone(),
            largest: self.largest.clone(),
            min_seqno: self.min_seqno,
            max_seqno: self.max_seqno,
            entries: self.entries,
            tombstones: self.tombstones,
            raw_bytes: self.raw_bytes,
        }
    }
}

/// The value of an integer property: exactly one VLQ.
fn integer(value: &[u8]) -> Result<u64, Reason> {
    let mut v = Cursor::new(value);
    let n = v.vlq()?;
    if !v.is_empty() {
        return Err(Reason::BadEntry("bytes follow a property's integer"));
    }
    Ok(n)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::key::Kind;

    fn sample() -> Properties {
        let key = |k: &[u8], s| InternalKey::new(k, SeqNo(s), Kind::Put).encode().unwrap();
        Properties {
            entries: 3,
            tombstones: 1,
            raw_bytes: 30,
            min_seqno: SeqNo(4),
            max_seqno: SeqNo(9),
            smallest: key(b"a", 9),
            largest: key(b"c", 4),
            data_blocks: 2,
            compression: Compression::Lz4,
            format_version: FORMAT_VERSION_PLAIN,
            expiring: 0,
            earliest_expiry: None,
            range_tombstones: None,
            blob_refs: BlobRefs::default(),
            repeats: None,
        }
    }

    #[test]
    fn a_range_tombstone_handle_means_version_2() {
        let mut p = sample();
        p.format_version = FORMAT_VERSION_RANGES;
        p.range_tombstones = Some(BlockHandle { offset: 7, size: 9 });
        let raw = p.encode();
        assert_eq!(Properties::decode(&raw), Ok(p.clone()));
        // The handle is field 13, right after the required fields (which end with the
        // format version, tag 10: `0a 01 02`).
        let plain = sample().encode();
        let n = plain.len();
        assert_eq!(&raw[..n - 1], &plain[..n - 1]);
        assert_eq!(&raw[n - 3..], &[10, 1, 2, 13, 2, 7, 9]);
        // With every optional field, tags stay increasing: 11, 12, 13, 14.
        p.expiring = 1;
        p.earliest_expiry = Some(5);
        p.blob_refs.add(3, 10);
        let raw = p.encode();
        assert_eq!(Properties::decode(&raw), Ok(p));
    }

    /// Version 3 allows a range-tombstone block or none; version 2 needs one and version 1
    /// refuses one.
    #[test]
    fn versions_agree_with_the_range_tombstone_block() {
        let handle = Some(BlockHandle { offset: 7, size: 9 });
        for (version, ranges, ok) in [
            (FORMAT_VERSION, None, true),
            (FORMAT_VERSION, handle, true),
            (FORMAT_VERSION_RANGES, handle, true),
            (FORMAT_VERSION_RANGES, None, false),
            (FORMAT_VERSION_PLAIN, None, true),
            (FORMAT_VERSION_PLAIN, handle, false),
        ] {
            let p = Properties {
                format_version: version,
                range_tombstones: ranges,
                ..sample()
            };
            assert_eq!(
                Properties::decode(&p.encode()).is_ok(),
                ok,
                "v{version} {ranges:?}"
            );
        }
    }

    #[test]
    fn round_trip_and_unknown_tags_are_skipped() {
        let p = sample();
        let mut raw = p.encode();
        assert_eq!(Properties::decode(&raw), Ok(p.clone()));
        raw.extend_from_slice(&[42, 2, 0xaa, 0xbb]); // a later writer's tag 42
        assert_eq!(Properties::decode(&raw), Ok(p));
        // The optional expiry fields round-trip, and a table without them reads as
        // holding no expiring entry.
        let with_expiry = Properties {
            expiring: 2,
            earliest_expiry: Some(1_700_000_000_000),
            ..sample()
        };
        let raw = with_expiry.encode();
        assert!(raw.len() > sample().encode().len());
        assert_eq!(Properties::decode(&raw), Ok(with_expiry));
    }

    /// `repeats` (tag 15) round-trips after every other field, only a present 0 promises
    /// distinct keys, and a count that reaches `entries` is refused (the first entry
    /// cannot repeat).
    #[test]
    fn repeats_round_trip_and_absent_means_unknown() {
        let absent = sample();
        assert!(!absent.distinct_keys());
        for (repeats, distinct) in [(0, true), (2, false)] {
            let mut p = sample();
            p.blob_refs.add(3, 10);
            p.repeats = Some(repeats);
            let raw = p.encode();
            assert_eq!(&raw[raw.len() - 3..], &[15, 1, repeats as u8]);
            let back = Properties::decode(&raw).unwrap();
            assert_eq!(back.distinct_keys(), distinct);
            assert_eq!(back, p);
        }
        let too_many = Properties {
            repeats: Some(3),
            ..sample()
        };
        assert!(Properties::decode(&too_many.encode()).is_err());
        let mut trailing = sample().encode();
        trailing.extend_from_slice(&[15, 2, 0, 0]);
        assert!(Properties::decode(&trailing).is_err());
    }

    #[test]
    fn blob_references_round_trip_and_are_checked_against_entries() {
        let mut p = sample();
        p.blob_refs.add(40, 70_000);
        p.blob_refs.add(41, 5_000);
        let raw = p.encode();
        assert_eq!(Properties::decode(&raw), Ok(p.clone()));
        // Without references the field is absent, so tables without blobs are unchanged.
        assert_eq!(
            sample().encode().len() + 2 + p.blob_refs.encode().len(),
            raw.len()
        );
        // More handles than entries.
        p.blob_refs.add(41, 1);
        p.blob_refs.add(41, 1);
        assert!(Properties::decode(&p.encode()).is_err());
        // A malformed reference list.
        let mut bad = sample().encode();
        bad.extend_from_slice(&[14, 2, 0x01, 0x07]);
        assert!(Properties::decode(&bad).is_err());
    }

    #[test]
    fn inconsistent_or_malformed_properties_are_refused() {
        let mut bad = Vec::new();
        let edits: [fn(&mut Properties); 12] = [
            |p| {
                p.expiring = 4;
                p.earliest_expiry = Some(1);
            },
            |p| {
                p.expiring = 1;
                p.earliest_expiry = Some(1);
                p.entries = 0;
            },
            |p| p.entries = 0,
            |p| p.tombstones = 4,
            |p| p.data_blocks = 0,
            |p| p.min_seqno = SeqNo(10),
            |p| std::mem::swap(&mut p.smallest, &mut p.largest),
            |p| p.smallest = vec![1, 2],
            |p| p.format_version = 2,
            |p| p.format_version = 4,
            |p| p.range_tombstones = Some(BlockHandle::default()),
            |p| {
                p.format_version = 2;
                p.range_tombstones = Some(BlockHandle { offset: 1, size: 2 });
                p.entries = 0;
            },
        ];
        for edit in edits {
            let mut p = sample();
            edit(&mut p);
            bad.push(p.encode());
        }
        let good = sample().encode();
        bad.push(good[3..].to_vec()); // ENTRIES missing
        let mut repeated = good.clone();
        repeated.extend_from_slice(&good[..3]);
        bad.push(repeated);
        for (i, raw) in bad.iter().enumerate() {
            assert!(Properties::decode(raw).is_err(), "case {i}");
        }
        for cut in 0..good.len() {
            assert!(Properties::decode(&good[..cut]).is_err(), "cut {cut}");
        }
    }
}
