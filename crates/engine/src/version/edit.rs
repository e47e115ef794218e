//! [`Edit`]: one change to the table set, and its encoding as the payload of a manifest
//! record (FORMAT.md §5).
//!
//! Grammar of the payload:
//!
//! ```text
//! edit   := field*
//! field  := tag:vlq body                  (any order; scalar tags at most once)
//!   1 CreateKeyspace  id:vlq name_len:vlq name[name_len]      (UTF-8, 1..=255 bytes)
//!   2 DropKeyspace    id:vlq
//!   3 AddTable        keyspace:vlq level:vlq table
//!   4 RemoveTable     keyspace:vlq level:vlq table_id:vlq
//!   5 WalMinId        id:vlq
//!   6 NextFileId      id:vlq
//!   7 FlushedSeqno    seqno:vlq                               (<= 2^56 - 1)
//!   8 NextKeyspaceId  id:vlq                                  (<= 2^32 - 1)
//!   9 AddBlobFile     id:vlq file_size:vlq record_count:vlq value_bytes:vlq
//!  10 RemoveBlobFile  id:vlq
//!  11 BlobThreshold   keyspace:vlq threshold_plus_one:vlq       (0 = separation off)
//! table  := id:vlq file_size:vlq smallest_len:vlq smallest largest_len:vlq largest
//!           min_seqno:vlq max_seqno:vlq entries:vlq tombstones:vlq raw_bytes:vlq
//! ```
//!
//! Decoding checks the shape of each field (lengths, ranges, UTF-8, key order within a
//! table); whether an edit makes sense against a version is [`super::Version::apply`]'s job.
//! Nothing here allocates from an unchecked length: every length is compared with the
//! bytes that remain before it is used.

use std::cmp::Ordering;
use std::path::Path;

use super::NUM_LEVELS;
use crate::coding::{put_vlq, Cursor};
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{BlobId, TableId};
use crate::key::{compare_encoded, split_encoded, KeyspaceId, SeqNo, MAX_KEY_LEN, TRAILER_LEN};
use crate::table::TableMeta;
use crate::vlog::format::{FILE_HEADER_LEN as BLOB_HEADER_LEN, RECORD_HEADER_LEN};
use crate::vlog::BlobFileMeta;

/// Longest keyspace name, in bytes.
pub(crate) const MAX_KEYSPACE_NAME_LEN: usize = 255;

/// Longest encoded internal key a table boundary may hold.
const MAX_BOUNDARY_LEN: usize = MAX_KEY_LEN + TRAILER_LEN;

/// Field tags. On-disk values; never renumbered, retired values stay listed (FORMAT.md §5).
mod tag {
    pub(super) const CREATE_KEYSPACE: u64 = 1;
    pub(super) const DROP_KEYSPACE: u64 = 2;
    pub(super) const ADD_TABLE: u64 = 3;
    pub(super) const REMOVE_TABLE: u64 = 4;
    pub(super) const WAL_MIN_ID: u64 = 5;
    pub(super) const NEXT_FILE_ID: u64 = 6;
    pub(super) const FLUSHED_SEQNO: u64 = 7;
    pub(super) const NEXT_KEYSPACE_ID: u64 = 8;
    pub(super) const ADD_BLOB_FILE: u64 = 9;
    pub(super) const REMOVE_BLOB_FILE: u64 = 10;
    pub(super) const BLOB_THRESHOLD: u64 = 11;
    pub(super) const STORE_OPTIONS: u64 = 12;
    pub(super) const MERGE_OPERATOR: u64 = 13;
}

/// Most entries a `StoreOptions` field may hold (FORMAT.md §5).
pub(crate) const MAX_STORE_OPTIONS: usize = 64;

/// The store's file-shaping options as the manifest records them: option key -> value
/// (FORMAT.md §5, tag 12; the keys are `db/stored_options.rs`'s registry). Keys this build
/// does not know are kept as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StoreOptions(pub(crate) std::collections::BTreeMap<u64, u64>);

/// One change to the table set: what a flush, a compaction, a keyspace creation or drop,
/// or a manifest rotation (a snapshot of a whole version) records. Applied with
/// [`super::Version::apply`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Edit {
    /// The store's file-shaping options, replacing the recorded ones.
    pub(crate) store_options: Option<StoreOptions>,
    /// Keyspaces created, with their names.
    pub(crate) created_keyspaces: Vec<(KeyspaceId, String)>,
    /// Keyspaces dropped, with all their tables.
    pub(crate) dropped_keyspaces: Vec<KeyspaceId>,
    /// Tables added: keyspace, level, table.
    pub(crate) added_tables: Vec<(KeyspaceId, usize, TableMeta)>,
    /// Tables removed: keyspace, level, table id.
    pub(crate) removed_tables: Vec<(KeyspaceId, usize, TableId)>,
    /// Value-separation thresholds set: keyspace, threshold (`None`: separation off).
    /// Applied after keyspace creations.
    pub(crate) blob_thresholds: Vec<(KeyspaceId, Option<u64>)>,
    /// Merge operator names recorded: keyspace, name (`merge.rs` invariant 2). Applied
    /// after keyspace creations.
    pub(crate) merge_operators: Vec<(KeyspaceId, String)>,
    /// WAL files with an id below this hold only data already in tables.
    pub(crate) wal_min_id: Option<u64>,
    /// The next unused file id (tables, WAL files and manifest files share one counter).
    pub(crate) next_file_id: Option<u64>,
    /// Every write with seqno <= this is in tables (recovery replays WAL records above it).
    pub(crate) flushed_seqno: Option<SeqNo>,
    /// The next unused keyspace id.
    pub(crate) next_keyspace_id: Option<u32>,
    /// Blob files added to the value log (sealed or recovered, with their sizes).
    pub(crate) added_blob_files: Vec<BlobFileMeta>,
    /// Blob files removed from the value log (by id; deleted by the `Db` afterwards).
    pub(crate) removed_blob_files: Vec<BlobId>,
}

/// Longest merge operator name recorded, in bytes.
pub(crate) const MAX_MERGE_OPERATOR_NAME_LEN: usize = 255;

/// True if `name` is a valid keyspace name: 1..=255 bytes of UTF-8 (any `&str` is UTF-8).
pub(crate) fn keyspace_name_ok(name: &str) -> bool {
    (1..=MAX_KEYSPACE_NAME_LEN).contains(&name.len())
}

/// Checks a keyspace name a caller asked for.
///
/// # Errors
/// `InvalidArgument` if it is empty or longer than [`MAX_KEYSPACE_NAME_LEN`] bytes.
pub(crate) fn check_keyspace_name(name: &str) -> Result<()> {
    if keyspace_name_ok(name) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "keyspace names must be 1 to {MAX_KEYSPACE_NAME_LEN} bytes, got {} bytes",
            name.len()
        )))
    }
}

/// Checks the invariants of `TableMeta` (see `table/meta.rs`) that the manifest relies on:
/// both boundaries are encoded internal keys with user keys of at most [`MAX_KEY_LEN`]
/// bytes, `smallest <= largest`, and `min_seqno <= max_seqno <= SeqNo::MAX`.
pub(crate) fn check_table(meta: &TableMeta) -> std::result::Result<(), Reason> {
    for key in [&meta.smallest, &meta.largest] {
        if !(TRAILER_LEN..=MAX_BOUNDARY_LEN).contains(&key.len()) || split_encoded(key).is_none() {
            return Err(Reason::BadEntry(
                "table boundary is not an encoded internal key",
            ));
        }
    }
    if compare_encoded(&meta.smallest, &meta.largest) == Ordering::Greater {
        return Err(Reason::BadEntry(
            "table's smallest key sorts after its largest",
        ));
    }
    if meta.min_seqno > meta.max_seqno || meta.max_seqno > SeqNo::MAX {
        return Err(Reason::BadEntry("table seqno range is invalid"));
    }
    Ok(())
}

/// Checks the invariants of a [`BlobFileMeta`] the manifest relies on: the file holds at
/// least its header, its values fit in it, and each record takes at least a record header.
pub(crate) fn check_blob_file(meta: &BlobFileMeta) -> std::result::Result<(), Reason> {
    let records_fit = meta
        .record_count
        .checked_mul(RECORD_HEADER_LEN)
        .and_then(|r| r.checked_add(meta.value_bytes))
        .and_then(|r| r.checked_add(BLOB_HEADER_LEN))
        .is_some_and(|needed| needed <= meta.file_size);
    if !records_fit {
        return Err(Reason::BadEntry(
            "blob file is too small for its records and values",
        ));
    }
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_vlq(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_table(out: &mut Vec<u8>, t: &TableMeta) {
    put_vlq(out, t.id.0);
    put_vlq(out, t.file_size);
    put_bytes(out, &t.smallest);
    put_bytes(out, &t.largest);
    put_vlq(out, t.min_seqno.0);
    put_vlq(out, t.max_seqno.0);
    put_vlq(out, t.entries);
    put_vlq(out, t.tombstones);
    put_vlq(out, t.raw_bytes);
}

impl Edit {
    /// True if the edit changes nothing.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        *self == Edit::default()
    }

    /// The encoded payload (FORMAT.md §5): scalars first, then drops, creations, table
    /// removals and additions, blob file removals and additions, each list in order. [`Edit::decode`] returns an equal edit for any
    /// edit whose fields are in range (names of 1..=255 bytes, levels below
    /// [`NUM_LEVELS`], tables that pass [`check_table`], blob files that pass
    /// [`check_blob_file`]); the manifest writer checks that
    /// before it writes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let scalars = [
            (tag::WAL_MIN_ID, self.wal_min_id),
            (tag::NEXT_FILE_ID, self.next_file_id),
            (tag::FLUSHED_SEQNO, self.flushed_seqno.map(|s| s.0)),
            (tag::NEXT_KEYSPACE_ID, self.next_keyspace_id.map(u64::from)),
        ];
        for (t, value) in scalars {
            if let Some(v) = value {
                put_vlq(&mut out, t);
                put_vlq(&mut out, v);
            }
        }
        for id in &self.dropped_keyspaces {
            put_vlq(&mut out, tag::DROP_KEYSPACE);
            put_vlq(&mut out, u64::from(id.0));
        }
        for (id, name) in &self.created_keyspaces {
            put_vlq(&mut out, tag::CREATE_KEYSPACE);
            put_vlq(&mut out, u64::from(id.0));
            put_bytes(&mut out, name.as_bytes());
        }
        if let Some(StoreOptions(map)) = &self.store_options {
            put_vlq(&mut out, tag::STORE_OPTIONS);
            put_vlq(&mut out, map.len() as u64);
            for (k, v) in map {
                put_vlq(&mut out, *k);
                put_vlq(&mut out, *v);
            }
        }
        for (ks, threshold) in &self.blob_thresholds {
            put_vlq(&mut out, tag::BLOB_THRESHOLD);
            put_vlq(&mut out, u64::from(ks.0));
            put_vlq(&mut out, threshold.map_or(0, |t| t.saturating_add(1)));
        }
        for (ks, name) in &self.merge_operators {
            put_vlq(&mut out, tag::MERGE_OPERATOR);
            put_vlq(&mut out, u64::from(ks.0));
            put_bytes(&mut out, name.as_bytes());
        }
        for (ks, level, table_id) in &self.removed_tables {
            put_vlq(&mut out, tag::REMOVE_TABLE);
            put_vlq(&mut out, u64::from(ks.0));
            put_vlq(&mut out, *level as u64);
            put_vlq(&mut out, table_id.0);
        }
        for (ks, level, meta) in &self.added_tables {
            put_vlq(&mut out, tag::ADD_TABLE);
            put_vlq(&mut out, u64::from(ks.0));
            put_vlq(&mut out, *level as u64);
            put_table(&mut out, meta);
        }
        for id in &self.removed_blob_files {
            put_vlq(&mut out, tag::REMOVE_BLOB_FILE);
            put_vlq(&mut out, id.0);
        }
        for b in &self.added_blob_files {
            put_vlq(&mut out, tag::ADD_BLOB_FILE);
            put_vlq(&mut out, b.id.0);
            put_vlq(&mut out, b.file_size);
            put_vlq(&mut out, b.record_count);
            put_vlq(&mut out, b.value_bytes);
        }
        out
    }

    /// Decodes an edit payload. `path` and `offset` (the file offset of the payload's
    /// first byte) locate errors.
    ///
    /// # Errors
    /// `Error::Corruption` (`FileKind::Manifest`) at the offset of the offending field:
    /// `Truncated` or `BadVarint` for a field cut short, `BadTag` for an unknown tag,
    /// `LengthOutOfRange` for a length or id out of range, `BadEntry` for a repeated
    /// scalar field, a level out of range, a name that is not UTF-8, a table that fails
    /// [`check_table`] or a blob file that fails [`check_blob_file`].
    pub(crate) fn decode(payload: &[u8], path: &Path, offset: u64) -> Result<Edit> {
        let mut dec = Decoder {
            cur: Cursor::new(payload),
            path,
            base: offset,
        };
        let mut edit = Edit::default();
        while !dec.cur.is_empty() {
            let at = dec.cur.position();
            let t = dec.vlq()?;
            match t {
                tag::CREATE_KEYSPACE => {
                    let id = dec.keyspace()?;
                    let name_at = dec.cur.position();
                    let bytes = dec.bytes(MAX_KEYSPACE_NAME_LEN)?;
                    let name = std::str::from_utf8(bytes)
                        .ok()
                        .filter(|n| keyspace_name_ok(n))
                        .ok_or_else(|| {
                            dec.err(
                                name_at,
                                Reason::BadEntry("keyspace name is not 1..=255 bytes of UTF-8"),
                            )
                        })?;
                    edit.created_keyspaces.push((id, name.to_owned()));
                }
                tag::DROP_KEYSPACE => edit.dropped_keyspaces.push(dec.keyspace()?),
                tag::BLOB_THRESHOLD => {
                    let ks = dec.keyspace()?;
                    let raw = dec.vlq()?;
                    edit.blob_thresholds.push((ks, raw.checked_sub(1)));
                }
                tag::MERGE_OPERATOR => {
                    let ks = dec.keyspace()?;
                    let name_at = dec.cur.position();
                    let bytes = dec.bytes(MAX_MERGE_OPERATOR_NAME_LEN)?;
                    let name = std::str::from_utf8(bytes)
                        .ok()
                        .filter(|n| !n.is_empty())
                        .ok_or_else(|| {
                            dec.err(
                                name_at,
                                Reason::BadEntry(
                                    "merge operator name is not 1..=255 bytes of UTF-8",
                                ),
                            )
                        })?;
                    edit.merge_operators.push((ks, name.to_owned()));
                }
                tag::ADD_TABLE => {
                    let ks = dec.keyspace()?;
                    let level = dec.level()?;
                    let table_at = dec.cur.position();
                    let meta = dec.table()?;
                    check_table(&meta).map_err(|r| dec.err(table_at, r))?;
                    edit.added_tables.push((ks, level, meta));
                }
                tag::REMOVE_TABLE => {
                    let ks = dec.keyspace()?;
                    let level = dec.level()?;
                    let id = TableId(dec.vlq()?);
                    edit.removed_tables.push((ks, level, id));
                }
                tag::ADD_BLOB_FILE => {
                    let meta = BlobFileMeta {
                        id: BlobId(dec.vlq()?),
                        file_size: dec.vlq()?,
                        record_count: dec.vlq()?,
                        value_bytes: dec.vlq()?,
                    };
                    check_blob_file(&meta).map_err(|r| dec.err(at, r))?;
                    edit.added_blob_files.push(meta);
                }
                tag::REMOVE_BLOB_FILE => edit.removed_blob_files.push(BlobId(dec.vlq()?)),
                tag::WAL_MIN_ID => {
                    let v = dec.vlq()?;
                    dec.set_once(&mut edit.wal_min_id, v, at)?;
                }
                tag::NEXT_FILE_ID => {
                    let v = dec.vlq()?;
                    dec.set_once(&mut edit.next_file_id, v, at)?;
                }
                tag::FLUSHED_SEQNO => {
                    let v = dec.seqno()?;
                    dec.set_once(&mut edit.flushed_seqno, v, at)?;
                }
                tag::NEXT_KEYSPACE_ID => {
                    let v = dec.keyspace()?.0;
                    dec.set_once(&mut edit.next_keyspace_id, v, at)?;
                }
                tag::STORE_OPTIONS => {
                    let v = dec.store_options()?;
                    dec.set_once(&mut edit.store_options, v, at)?;
                }
                other => {
                    let reason = u8::try_from(other)
                        .map_or(Reason::BadEntry("edit field tag above 255"), Reason::BadTag);
                    return Err(dec.err(at, reason));
                }
            }
        }
        Ok(edit)
    }
}

/// A cursor over one payload that turns every failure into a located corruption error.
struct Decoder<'a> {
    cur: Cursor<'a>,
    path: &'a Path,
    /// File offset of the payload's first byte.
    base: u64,
}

impl<'a> Decoder<'a> {
    fn err(&self, at: usize, reason: Reason) -> Error {
        Error::corruption(
            FileKind::Manifest,
            self.path,
            self.base.saturating_add(at as u64),
            reason,
        )
    }

    fn vlq(&mut self) -> Result<u64> {
        let at = self.cur.position();
        self.cur.vlq().map_err(|r| self.err(at, r))
    }

    /// A length-prefixed byte string of at most `max` bytes.
    fn bytes(&mut self, max: usize) -> Result<&'a [u8]> {
        let at = self.cur.position();
        let len = self.vlq()?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| self.err(at, Reason::LengthOutOfRange))?;
        let start = self.cur.position();
        self.cur.take(len).map_err(|r| self.err(start, r))
    }

    /// A 32-bit id (keyspace ids and the keyspace counter).
    fn keyspace(&mut self) -> Result<KeyspaceId> {
        let at = self.cur.position();
        let v = self.vlq()?;
        u32::try_from(v)
            .map(KeyspaceId)
            .map_err(|_| self.err(at, Reason::LengthOutOfRange))
    }

    /// A `StoreOptions` body: a count, then that many (key, value) pairs with strictly
    /// increasing keys.
    fn store_options(&mut self) -> Result<StoreOptions> {
        let at = self.cur.position();
        let count = usize::try_from(self.vlq()?)
            .ok()
            .filter(|&n| n <= MAX_STORE_OPTIONS)
            .ok_or_else(|| self.err(at, Reason::LengthOutOfRange))?;
        let mut map = std::collections::BTreeMap::new();
        let mut last: Option<u64> = None;
        for _ in 0..count {
            let key_at = self.cur.position();
            let key = self.vlq()?;
            if last.is_some_and(|l| key <= l) {
                return Err(self.err(
                    key_at,
                    Reason::BadEntry("store option keys are not strictly increasing"),
                ));
            }
            last = Some(key);
            map.insert(key, self.vlq()?);
        }
        Ok(StoreOptions(map))
    }

    fn level(&mut self) -> Result<usize> {
        let at = self.cur.position();
        let v = self.vlq()?;
        usize::try_from(v)
            .ok()
            .filter(|&l| l < NUM_LEVELS)
            .ok_or_else(|| self.err(at, Reason::BadEntry("table level out of range")))
    }

    fn seqno(&mut self) -> Result<SeqNo> {
        let at = self.cur.position();
        let v = self.vlq()?;
        if v > SeqNo::MAX.0 {
            return Err(self.err(at, Reason::LengthOutOfRange));
        }
        Ok(SeqNo(v))
    }

    fn set_once<T>(&self, slot: &mut Option<T>, value: T, at: usize) -> Result<()> {
        if slot.is_some() {
            return Err(self.err(at, Reason::BadEntry("edit repeats a single-valued field")));
        }
        *slot = Some(value);
        Ok(())
    }

    fn table(&mut self) -> Result<TableMeta> {
        let id = TableId(self.vlq()?);
        let file_size = self.vlq()?;
        let smallest = self.bytes(MAX_BOUNDARY_LEN)?.to_vec();
        let largest = self.bytes(MAX_BOUNDARY_LEN)?.to_vec();
        Ok(TableMeta {
            id,
            file_size,
            smallest,
            largest,
            min_seqno: self.seqno()?,
            max_seqno: self.seqno()?,
            entries: self.vlq()?,
            tombstones: self.vlq()?,
            raw_bytes: self.vlq()?,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, Kind};
    use proptest::prelude::*;

    const PATH: &str = "/db/MANIFEST-00000000000000000007";

    fn decode(bytes: &[u8]) -> Result<Edit> {
        Edit::decode(bytes, Path::new(PATH), 100)
    }

    fn corruption(res: Result<Edit>) -> (u64, Reason) {
        match res {
            Err(Error::Corruption(c)) => {
                assert_eq!(c.file, FileKind::Manifest);
                assert_eq!(c.path, Path::new(PATH));
                (c.offset, c.reason)
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    fn ikey(user: &[u8], seqno: u64) -> Vec<u8> {
        InternalKey::new(user, SeqNo(seqno), Kind::Put)
            .encode()
            .unwrap()
    }

    fn table(id: u64) -> TableMeta {
        TableMeta {
            id: TableId(id),
            file_size: 4096,
            smallest: ikey(b"a", 9),
            largest: ikey(b"z", 3),
            min_seqno: SeqNo(3),
            max_seqno: SeqNo(9),
            entries: 10,
            tombstones: 1,
            raw_bytes: 300,
        }
    }

    fn sample() -> Edit {
        Edit {
            created_keyspaces: vec![(KeyspaceId(1), "users".into())],
            dropped_keyspaces: vec![KeyspaceId(5)],
            added_tables: vec![(KeyspaceId(1), 0, table(12))],
            removed_tables: vec![(KeyspaceId(1), 2, TableId(7))],
            wal_min_id: Some(11),
            next_file_id: Some(13),
            flushed_seqno: Some(SeqNo(9)),
            next_keyspace_id: Some(2),
            added_blob_files: vec![blob(10)],
            removed_blob_files: vec![BlobId(4)],
            blob_thresholds: Vec::new(),
            merge_operators: vec![(KeyspaceId(1), "cairn.add_i64".into())],
            store_options: Some(StoreOptions([(1, 3), (2, 18), (300, u64::MAX)].into())),
        }
    }

    fn blob(id: u64) -> BlobFileMeta {
        BlobFileMeta {
            id: BlobId(id),
            file_size: 1 << 20,
            record_count: 10,
            value_bytes: 900_000,
        }
    }

    #[test]
    fn encoding_of_each_field_matches_the_format() {
        let e = Edit {
            created_keyspaces: vec![(KeyspaceId(0), "default".into())],
            next_file_id: Some(300),
            ..Edit::default()
        };
        #[rustfmt::skip]
        let expected = [
            0x06, 0xac, 0x02,                                  // NextFileId 300
            0x01, 0x00, 0x07, b'd', b'e', b'f', b'a', b'u', b'l', b't', // CreateKeyspace 0
        ];
        assert_eq!(e.encode(), expected);
        assert_eq!(decode(&expected).unwrap(), e);
        assert!(Edit::default().encode().is_empty());
        assert!(Edit::default().is_empty() && !e.is_empty());
    }

    #[test]
    fn round_trip_of_every_field() {
        let e = sample();
        assert_eq!(decode(&e.encode()).unwrap(), e);
    }

    #[test]
    fn fields_decode_in_any_order() {
        // Additions before the scalar: order on disk carries no meaning.
        let mut bytes = Vec::new();
        put_vlq(&mut bytes, tag::ADD_TABLE);
        put_vlq(&mut bytes, 1);
        put_vlq(&mut bytes, 0);
        put_table(&mut bytes, &table(4));
        put_vlq(&mut bytes, tag::NEXT_FILE_ID);
        put_vlq(&mut bytes, 5);
        let e = decode(&bytes).unwrap();
        assert_eq!(e.next_file_id, Some(5));
        assert_eq!(e.added_tables, vec![(KeyspaceId(1), 0, table(4))]);
    }

    #[test]
    fn truncation_at_every_length_is_an_error_or_a_shorter_edit() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            // A cut on a field boundary is a valid (shorter) edit; anywhere else it fails.
            match decode(&bytes[..cut]) {
                Ok(e) => assert_ne!(e, sample(), "cut {cut}"),
                Err(err) => assert!(err.is_corruption(), "cut {cut}: {err}"),
            }
        }
    }

    #[test]
    fn flipped_bytes_never_panic() {
        let good = sample().encode();
        for i in 0..good.len() {
            for mask in [0x01, 0x40, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                if let Err(e) = decode(&bad) {
                    assert!(e.is_corruption(), "byte {i}: {e}");
                }
            }
        }
    }

    #[test]
    fn store_options_are_bounded_ordered_and_single() {
        let mut bytes = Vec::new();
        put_vlq(&mut bytes, tag::STORE_OPTIONS);
        put_vlq(&mut bytes, 2);
        for (k, v) in [(5u64, 1u64), (5, 2)] {
            put_vlq(&mut bytes, k);
            put_vlq(&mut bytes, v);
        }
        assert_eq!(
            corruption(decode(&bytes)).1,
            Reason::BadEntry("store option keys are not strictly increasing")
        );
        let mut bytes = Vec::new();
        put_vlq(&mut bytes, tag::STORE_OPTIONS);
        put_vlq(&mut bytes, MAX_STORE_OPTIONS as u64 + 1);
        assert_eq!(corruption(decode(&bytes)).1, Reason::LengthOutOfRange);
        let one = Edit {
            store_options: Some(StoreOptions([(1, 1)].into())),
            ..Edit::default()
        }
        .encode();
        let twice = [one.clone(), one].concat();
        assert_eq!(
            corruption(decode(&twice)).1,
            Reason::BadEntry("edit repeats a single-valued field")
        );
    }

    #[test]
    fn unknown_and_reserved_tags_are_rejected() {
        assert_eq!(corruption(decode(&[0x00])), (100, Reason::BadTag(0)));
        assert_eq!(corruption(decode(&[0x0e, 0x00])), (100, Reason::BadTag(14)));
        // A merge operator name must be 1..=255 bytes of UTF-8.
        assert!(matches!(
            corruption(decode(&[0x0d, 0x01, 0x00])).1,
            Reason::BadEntry(_)
        ));
        assert!(matches!(
            corruption(decode(&[0x0d, 0x01, 0x01, 0xff])).1,
            Reason::BadEntry(_)
        ));
        let (at, reason) = corruption(decode(&[0x06, 0x01, 0x80, 0x02]));
        assert_eq!(at, 102);
        assert_eq!(reason, Reason::BadEntry("edit field tag above 255"));
    }

    #[test]
    fn lengths_and_ranges_are_validated() {
        // Keyspace name: empty, too long, not UTF-8, longer than the payload.
        for (name, reason) in [
            (
                &b""[..],
                Reason::BadEntry("keyspace name is not 1..=255 bytes of UTF-8"),
            ),
            (
                &[0xff, 0xfe][..],
                Reason::BadEntry("keyspace name is not 1..=255 bytes of UTF-8"),
            ),
        ] {
            let mut b = vec![0x01, 0x00];
            put_bytes(&mut b, name);
            assert_eq!(corruption(decode(&b)), (102, reason));
        }
        let mut b = vec![0x01, 0x00];
        put_bytes(&mut b, &[b'x'; 256]);
        assert_eq!(corruption(decode(&b)), (102, Reason::LengthOutOfRange));
        assert_eq!(
            corruption(decode(&[0x01, 0x00, 0x05, b'a'])),
            (103, Reason::Truncated)
        );
        // A length that would overflow an allocation is refused before allocating.
        let mut b = vec![0x01, 0x00];
        put_vlq(&mut b, u64::MAX);
        assert_eq!(corruption(decode(&b)), (102, Reason::LengthOutOfRange));
        // Keyspace id over 32 bits.
        let mut b = vec![0x02];
        put_vlq(&mut b, 1 << 32);
        assert_eq!(corruption(decode(&b)), (101, Reason::LengthOutOfRange));
        // Level out of range.
        assert_eq!(
            corruption(decode(&[0x04, 0x00, 0x07, 0x01])),
            (102, Reason::BadEntry("table level out of range"))
        );
        // Seqno over 56 bits.
        let mut b = vec![0x07];
        put_vlq(&mut b, SeqNo::MAX.0 + 1);
        assert_eq!(corruption(decode(&b)), (101, Reason::LengthOutOfRange));
        // A repeated scalar.
        assert_eq!(
            corruption(decode(&[0x05, 0x01, 0x05, 0x02])),
            (102, Reason::BadEntry("edit repeats a single-valued field"))
        );
        // Overlong varint.
        let mut b = vec![0x06];
        b.extend_from_slice(&[0xff; 11]);
        assert_eq!(corruption(decode(&b)), (101, Reason::BadVarint));
    }

    #[test]
    fn table_boundaries_and_seqnos_are_validated() {
        let mut cases = Vec::new();
        let mut t = table(1);
        t.smallest = b"short".to_vec(); // shorter than a trailer
        cases.push(t);
        let mut t = table(1);
        std::mem::swap(&mut t.smallest, &mut t.largest);
        cases.push(t);
        let mut t = table(1);
        t.min_seqno = SeqNo(10);
        cases.push(t);
        let mut t = table(1);
        // Same user key: the larger seqno must come first.
        t.smallest = ikey(b"k", 1);
        t.largest = ikey(b"k", 2);
        cases.push(t);
        for t in cases {
            assert!(check_table(&t).is_err(), "{t:?}");
            let e = Edit {
                added_tables: vec![(KeyspaceId(0), 1, t)],
                ..Edit::default()
            };
            let (at, reason) = corruption(decode(&e.encode()));
            assert_eq!(at, 103, "reported at the table's first byte");
            assert!(matches!(reason, Reason::BadEntry(_)));
        }
        // A boundary longer than any internal key is refused by length.
        let mut t = table(1);
        t.largest = vec![0; MAX_BOUNDARY_LEN + 1];
        let e = Edit {
            added_tables: vec![(KeyspaceId(0), 1, t)],
            ..Edit::default()
        };
        assert_eq!(corruption(decode(&e.encode())).1, Reason::LengthOutOfRange);
        // Equal boundaries are fine (a table of one entry).
        let mut t = table(1);
        t.largest = t.smallest.clone();
        assert!(check_table(&t).is_ok());
    }

    #[test]
    fn blob_thresholds_round_trip() {
        let edit = Edit {
            blob_thresholds: vec![
                (KeyspaceId(3), Some(4096)),
                (KeyspaceId(0), None),
                (KeyspaceId(1), Some(0)),
            ],
            ..Edit::default()
        };
        let enc = edit.encode();
        assert_eq!(&enc[..3], &[11, 3, 0x81]);
        assert_eq!(Edit::decode(&enc, Path::new("m"), 0).unwrap(), edit);
    }

    #[test]
    fn blob_file_fields_encode_as_documented_and_are_validated() {
        let e = Edit {
            added_blob_files: vec![BlobFileMeta {
                id: BlobId(12),
                file_size: 200,
                record_count: 2,
                value_bytes: 100,
            }],
            removed_blob_files: vec![BlobId(3)],
            ..Edit::default()
        };
        #[rustfmt::skip]
        let expected = [
            0x0a, 0x03,                          // RemoveBlobFile 3
            0x09, 0x0c, 0xc8, 0x01, 0x02, 0x64,  // AddBlobFile 12, 200 bytes, 2 records, 100
        ];
        assert_eq!(e.encode(), expected);
        assert_eq!(decode(&expected).unwrap(), e);
        // Values or records that cannot fit in the file.
        for (size, count, bytes) in [
            (200, 2, 149),
            (19, 0, 0),
            (100, 6, 0),
            (u64::MAX, u64::MAX, 1),
        ] {
            let bad = BlobFileMeta {
                id: BlobId(1),
                file_size: size,
                record_count: count,
                value_bytes: bytes,
            };
            assert!(check_blob_file(&bad).is_err(), "{bad:?}");
            let e = Edit {
                added_blob_files: vec![bad],
                ..Edit::default()
            };
            let (at, reason) = corruption(decode(&e.encode()));
            assert_eq!(at, 100, "reported at the field's tag");
            assert!(matches!(reason, Reason::BadEntry(_)));
        }
        // Exactly full is fine: header, record headers and values.
        assert!(check_blob_file(&BlobFileMeta {
            id: BlobId(1),
            file_size: 20 + 2 * 16 + 100,
            record_count: 2,
            value_bytes: 100,
        })
        .is_ok());
    }

    #[test]
    fn keyspace_name_rule() {
        assert!(check_keyspace_name("default").is_ok());
        assert!(check_keyspace_name(&"é".repeat(127)).is_ok()); // 254 bytes
        assert!(check_keyspace_name("").is_err());
        assert!(matches!(
            check_keyspace_name(&"x".repeat(256)),
            Err(Error::InvalidArgument(_))
        ));
    }

    fn arb_table() -> impl Strategy<Value = TableMeta> {
        (
            any::<u64>(),
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..12),
            prop::collection::vec(any::<u8>(), 0..12),
            0..=SeqNo::MAX.0,
            0..=SeqNo::MAX.0,
            (any::<u64>(), any::<u64>(), any::<u64>()),
        )
            .prop_map(
                |(id, file_size, a, b, s1, s2, (entries, tombstones, raw))| {
                    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                    let (min, max) = (s1.min(s2), s1.max(s2));
                    TableMeta {
                        id: TableId(id),
                        file_size,
                        smallest: ikey(&lo, max),
                        largest: ikey(&hi, min),
                        min_seqno: SeqNo(min),
                        max_seqno: SeqNo(max),
                        entries,
                        tombstones,
                        raw_bytes: raw,
                    }
                },
            )
    }

    fn arb_edit() -> impl Strategy<Value = Edit> {
        let ks = any::<u32>().prop_map(KeyspaceId);
        (
            prop::collection::vec((ks.clone(), "\\PC{1,40}"), 0..4),
            prop::collection::vec(ks.clone(), 0..4),
            prop::collection::vec((ks.clone(), 0..NUM_LEVELS, arb_table()), 0..5),
            prop::collection::vec((ks, 0..NUM_LEVELS, any::<u64>().prop_map(TableId)), 0..5),
            (
                prop::collection::vec(
                    (any::<u64>(), 0u64..1 << 40, 0u64..1 << 20, 0u64..1 << 30).prop_map(
                        |(id, size, count, bytes)| BlobFileMeta {
                            id: BlobId(id),
                            file_size: 20 + count * 16 + bytes + size,
                            record_count: count,
                            value_bytes: bytes,
                        },
                    ),
                    0..4,
                ),
                prop::collection::vec(any::<u64>().prop_map(BlobId), 0..4),
            ),
            (
                any::<Option<u64>>(),
                any::<Option<u64>>(),
                prop::option::of((0..=SeqNo::MAX.0).prop_map(SeqNo)),
                any::<Option<u32>>(),
            ),
            prop::option::of(
                prop::collection::btree_map(any::<u64>(), any::<u64>(), 0..=MAX_STORE_OPTIONS)
                    .prop_map(StoreOptions),
            ),
        )
            .prop_map(
                |(created, dropped, added, removed, (blobs, unblobs), (w, n, f, k), opts)| Edit {
                    // Operator names as long as keyspace names, inside their limit.
                    merge_operators: created.iter().take(2).cloned().collect(),
                    // "\PC{1,40}" is at most 160 bytes, inside the name limit.
                    created_keyspaces: created,
                    dropped_keyspaces: dropped,
                    added_tables: added,
                    removed_tables: removed,
                    wal_min_id: w,
                    next_file_id: n,
                    flushed_seqno: f,
                    next_keyspace_id: k,
                    added_blob_files: blobs,
                    removed_blob_files: unblobs,
                    blob_thresholds: Vec::new(),
                    store_options: opts,
                },
            )
    }

    proptest! {
        #[test]
        fn random_edits_round_trip(e in arb_edit()) {
            let bytes = e.encode();
            prop_assert_eq!(decode(&bytes).unwrap(), e);
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Err(e) = decode(&bytes) {
                prop_assert!(e.is_corruption());
            }
        }
    }
}
