//! Read-only, documented access to the raw files of the ordered store, for tools: the
//! CLI's dump commands and the fuzz targets decode a file image here (write-ahead logs,
//! write batches, tables, manifests, blob files) without opening a store. Nothing in this
//! module writes, and every decoder is the one the engine itself uses, so what a tool shows
//! is what recovery sees.
//!
//! Stability: the functions are supported, but what they return mirrors the on-disk
//! formats (`FORMAT.md` beside each format module), so it changes when a format does.
//! Every returned type is `#[non_exhaustive]`: a release may add a field or an operation
//! kind, and code matching on them needs a wildcard. The summaries expose what a file
//! records (counts, seqnos, keys, offsets and the reason for damage), never the engine's
//! internal types or arithmetic: keyspace ids, file ids and seqnos are plain integers. The
//! constant store's raw structures are in [`crate::hash::raw`], not here.
//!
//! Thread-safety: free functions over byte slices; no shared state.

use std::path::Path;
use std::sync::Arc;

use crate::batch::{Op, WriteBatch};
use crate::cursor::Cursor;
use crate::entry;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::FileType;
use crate::files::TableId;
use crate::fs::{FileSystem, MemFs};
use crate::key::{split_encoded, Kind};
use crate::version::{self, NUM_LEVELS};
use crate::{table, vlog, wal};

/// One operation of a write batch, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchOp {
    /// Set `key` to `value` in keyspace `keyspace`.
    Put {
        /// Keyspace id.
        keyspace: u32,
        /// User key.
        key: Vec<u8>,
        /// Value.
        value: Vec<u8>,
    },
    /// Set `key` to `value` with attributes in keyspace `keyspace`.
    PutAttrs {
        /// Keyspace id.
        keyspace: u32,
        /// User key.
        key: Vec<u8>,
        /// Value (without the attributes).
        value: Vec<u8>,
        /// Type tag (0 if none).
        tag: u32,
        /// Metadata (empty if none).
        meta: Vec<u8>,
        /// Expiry in Unix milliseconds, if any.
        expires_at: Option<u64>,
    },
    /// Set `key` to a value separated into the value log (a blob file), with attributes.
    ValueHandle {
        /// Keyspace id.
        keyspace: u32,
        /// User key.
        key: Vec<u8>,
        /// The blob file's id.
        file_id: u64,
        /// File offset of the value's record in the blob file.
        offset: u64,
        /// Bytes of the value.
        value_len: u32,
        /// Type tag (0 if none).
        tag: u32,
        /// Metadata (empty if none).
        meta: Vec<u8>,
        /// Expiry in Unix milliseconds, if any.
        expires_at: Option<u64>,
    },
    /// Merge `operand` into `key` with the keyspace's merge operator.
    Merge {
        /// Keyspace id.
        keyspace: u32,
        /// User key.
        key: Vec<u8>,
        /// The operand.
        operand: Vec<u8>,
    },
    /// Remove `key` from keyspace `keyspace`.
    Delete {
        /// Keyspace id.
        keyspace: u32,
        /// User key.
        key: Vec<u8>,
    },
    /// Remove every key in `[start, end)` from keyspace `keyspace`.
    RangeDelete {
        /// Keyspace id.
        keyspace: u32,
        /// First key removed.
        start: Vec<u8>,
        /// First key kept after the range; empty: unbounded.
        end: Vec<u8>,
    },
}

/// One record of a write-ahead log: the batch it carries and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalRecord {
    /// Sequence number of the batch's first operation.
    pub seqno: u64,
    /// File offset of the record.
    pub offset: u64,
    /// The batch's operations, in order (operation `i` has seqno `seqno + i`).
    pub ops: Vec<BatchOp>,
}

/// A byte range recovery ignores or skips, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// First byte of the range.
    pub offset: u64,
    /// Length of the range.
    pub len: u64,
    /// What was wrong at `offset`.
    pub reason: Reason,
}

/// Everything recovery would find in a write-ahead log image.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct WalImage {
    /// The valid records, in file order.
    pub records: Vec<WalRecord>,
    /// Offset just past the last valid record.
    pub valid_end: u64,
    /// A torn tail (damage with nothing valid after it), ignored by recovery.
    pub torn_tail: Option<Skipped>,
    /// Damaged ranges skipped because `salvage` was asked for.
    pub dropped: Vec<Skipped>,
}

fn batch_ops(batch: &WriteBatch, path: &Path) -> Result<Vec<BatchOp>> {
    batch
        .ops()
        .map(|op| {
            Ok(match op {
                Op::Put {
                    keyspace,
                    key,
                    value,
                } => BatchOp::Put {
                    keyspace: keyspace.0,
                    key: key.to_vec(),
                    value: value.to_vec(),
                },
                Op::PutAttrs {
                    keyspace,
                    key,
                    stored,
                } => {
                    let view = entry::view(Kind::PutAttrs, stored)
                        .map_err(|r| Error::corruption(FileKind::Wal, path, 0, r))?
                        .ok_or_else(|| Error::invalid("a PutAttrs op always has a value"))?;
                    BatchOp::PutAttrs {
                        keyspace: keyspace.0,
                        key: key.to_vec(),
                        value: view.body.inline().unwrap_or_default().to_vec(),
                        tag: view.attrs.tag,
                        meta: view.attrs.meta.to_vec(),
                        expires_at: view.attrs.expires_at,
                    }
                }
                Op::ValueHandle {
                    keyspace,
                    key,
                    stored,
                } => {
                    let view = entry::view(Kind::ValueHandle, stored)
                        .map_err(|r| Error::corruption(FileKind::Wal, path, 0, r))?
                        .ok_or_else(|| Error::invalid("a ValueHandle op always has a value"))?;
                    let crate::entry::Body::Handle(h) = view.body else {
                        return Err(Error::invalid("a ValueHandle op always has a handle"));
                    };
                    BatchOp::ValueHandle {
                        keyspace: keyspace.0,
                        key: key.to_vec(),
                        file_id: h.file_id.0,
                        offset: h.offset,
                        value_len: h.value_len,
                        tag: view.attrs.tag,
                        meta: view.attrs.meta.to_vec(),
                        expires_at: view.attrs.expires_at,
                    }
                }
                Op::Merge {
                    keyspace,
                    key,
                    operand,
                } => BatchOp::Merge {
                    keyspace: keyspace.0,
                    key: key.to_vec(),
                    operand: operand.to_vec(),
                },
                Op::Delete { keyspace, key } => BatchOp::Delete {
                    keyspace: keyspace.0,
                    key: key.to_vec(),
                },
                Op::RangeDelete {
                    keyspace,
                    start,
                    end,
                } => BatchOp::RangeDelete {
                    keyspace: keyspace.0,
                    start: start.to_vec(),
                    end: end.to_vec(),
                },
            })
        })
        .collect()
}

/// Decodes an encoded write batch (a WAL record's payload). `path` names the file in
/// errors.
///
/// # Errors
/// `Error::Corruption` for any malformed payload (see `BATCH_FORMAT.md`).
pub fn decode_batch(payload: &[u8], path: &Path) -> Result<Vec<BatchOp>> {
    batch_ops(&WriteBatch::decode(payload, path, 0)?, path)
}

/// Decodes a whole write-ahead log image as recovery would, including every batch it
/// carries. With `salvage`, damaged records followed by valid ones are skipped and
/// reported instead of failing.
///
/// # Errors
/// `Error::Corruption` naming `path` and the offset for a damaged header, damage followed
/// by valid records (without `salvage`), or a record whose payload is not a valid batch.
pub fn decode_wal(bytes: &[u8], path: &Path, salvage: bool) -> Result<WalImage> {
    let options = wal::ReadOptions {
        salvage,
        expected_id: None,
    };
    let recovered = wal::decode_all(bytes, path, options)?;
    let mut records = Vec::with_capacity(recovered.records.len());
    for r in recovered.records {
        let payload_offset = r.offset + wal::RECORD_HEADER_LEN as u64;
        let batch = WriteBatch::decode(&r.payload, path, payload_offset)?;
        records.push(WalRecord {
            seqno: r.seqno,
            offset: r.offset,
            ops: batch_ops(&batch, path)?,
        });
    }
    let skipped = |offset, len, reason| Skipped {
        offset,
        len,
        reason,
    };
    Ok(WalImage {
        records,
        valid_end: recovered.valid_end,
        torn_tail: recovered
            .torn_tail
            .map(|t| skipped(t.offset, t.len, t.reason)),
        dropped: recovered
            .dropped
            .into_iter()
            .map(|d| skipped(d.offset, d.len, d.reason))
            .collect(),
    })
}

/// One keyspace of the version a manifest replays to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestKeyspace {
    /// Keyspace id.
    pub id: u32,
    /// Keyspace name.
    pub name: String,
    /// Number of tables per level, L0 first (one entry per level).
    pub tables: Vec<usize>,
    /// Bytes of table files per level, L0 first.
    pub level_bytes: Vec<u64>,
}

/// What recovery would find in a manifest image: the replayed version, summarized.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestImage {
    /// The file id in the header.
    pub file_id: u64,
    /// Records replayed, the first (snapshot) one included.
    pub edits: usize,
    /// Offset just past the last complete record.
    pub valid_end: u64,
    /// A torn tail (a record cut short with nothing valid after it), ignored by recovery.
    pub torn_tail: Option<Skipped>,
    /// Every keyspace of the replayed version, by id.
    pub keyspaces: Vec<ManifestKeyspace>,
    /// The next unused file id.
    pub next_file_id: u64,
    /// WAL files with an id below this hold only data already in tables.
    pub wal_min_id: u64,
    /// Every write with a seqno at or below this is in tables.
    pub flushed_seqno: u64,
    /// The next unused keyspace id.
    pub next_keyspace_id: u32,
}

/// Decodes a whole manifest file image and replays its edits as recovery does (see
/// `version/FORMAT.md`). The header's file id is not compared with `path`, so renamed
/// copies decode too; `path` names the file in errors.
///
/// # Errors
/// `Error::Corruption` naming `path` and the offset for a damaged header or first record,
/// damage followed by a valid record, or a record whose edit does not decode or does not
/// apply; `Error::UnsupportedVersion` for a newer format.
pub fn decode_manifest(bytes: &[u8], path: &Path) -> Result<ManifestImage> {
    let r = version::decode_image(bytes, path, None)?;
    let v = &r.version;
    let keyspaces = v
        .keyspaces()
        .map(|(id, ks)| ManifestKeyspace {
            id: id.0,
            name: ks.name.clone(),
            tables: (0..NUM_LEVELS).map(|l| ks.level(l).len()).collect(),
            level_bytes: (0..NUM_LEVELS).map(|l| ks.level_size(l)).collect(),
        })
        .collect();
    Ok(ManifestImage {
        file_id: r.file_id,
        edits: r.edits,
        valid_end: r.valid_end,
        torn_tail: r.torn_tail.map(|(offset, reason)| Skipped {
            offset,
            len: (bytes.len() as u64).saturating_sub(offset),
            reason,
        }),
        keyspaces,
        next_file_id: v.next_file_id(),
        wal_min_id: v.wal_min_id(),
        flushed_seqno: v.flushed_seqno().0,
        next_keyspace_id: v.next_keyspace_id(),
    })
}

/// Decodes the content of a `CURRENT` file: the id of the manifest file it names
/// (`MANIFEST-<id as 20 digits>`).
///
/// # Errors
/// `Error::Corruption` naming `path` if the content is not a checksummed manifest name
/// (see `version/FORMAT.md` §4).
pub fn decode_current(bytes: &[u8], path: &Path) -> Result<u64> {
    version::decode_current(bytes, path)
}

/// What a table file holds, as its properties record it and as reading it confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableSummary {
    /// Bytes of the file.
    pub file_size: u64,
    /// Entries (all kinds), as the properties record them; [`decode_table`] checked that
    /// the data blocks hold exactly these.
    pub entries: u64,
    /// Tombstone entries.
    pub tombstones: u64,
    /// Sum of user-key and value lengths, before compression.
    pub raw_bytes: u64,
    /// Smallest seqno of any entry.
    pub min_seqno: u64,
    /// Largest seqno of any entry.
    pub max_seqno: u64,
    /// User key of the first entry.
    pub smallest_key: Vec<u8>,
    /// User key of the last entry.
    pub largest_key: Vec<u8>,
    /// Entries a forward scan of the table's cursor visited.
    pub forward_entries: u64,
    /// Entries a backward scan of the table's cursor visited.
    pub backward_entries: u64,
}

/// The file name table images are placed at inside [`decode_table`]'s in-memory file system.
const TABLE_IMAGE: &str = "/image.sst";

/// Rewrites the path in an error about the in-memory image to `path`.
fn with_path(err: Error, path: &Path) -> Error {
    match err {
        Error::Corruption(mut c) => {
            c.path = path.to_path_buf();
            Error::Corruption(c)
        }
        Error::UnsupportedVersion {
            file, major, minor, ..
        } => Error::UnsupportedVersion {
            file,
            path: path.to_path_buf(),
            major,
            minor,
        },
        Error::Io { op, source, .. } => Error::Io {
            path: path.to_path_buf(),
            op,
            source,
        },
        other => other,
    }
}

/// Decodes a whole table image as the store's reader would: opens it (footer, properties,
/// index, filter), checks every block and entry (`verify`: checksums, key order, filter,
/// properties), then walks its cursor forwards and backwards. `path` names the file in
/// errors.
///
/// # Errors
/// `Error::Corruption` naming `path` and the offset of the damaged block (or footer), or
/// `Error::UnsupportedVersion`, for any image that does not follow `table/FORMAT.md`.
pub fn decode_table(bytes: &[u8], path: &Path) -> Result<TableSummary> {
    let fs = MemFs::new();
    let image = Path::new(TABLE_IMAGE);
    let summarize = || -> Result<TableSummary> {
        fs.create(image)?.append(bytes)?;
        let cache = Arc::new(table::BlockCache::new(0));
        let reader = Arc::new(table::Reader::open(&fs, image, TableId(0), cache)?);
        reader.verify()?;
        let mut it = reader.iter_no_fill();
        let mut forward_entries = 0u64;
        it.seek_to_first()?;
        while it.valid() {
            forward_entries += 1;
            it.next()?;
        }
        let mut backward_entries = 0u64;
        it.seek_to_last()?;
        while it.valid() {
            backward_entries += 1;
            it.prev()?;
        }
        let meta = reader.meta();
        let user_key = |k: &[u8]| {
            split_encoded(k)
                .map(|(u, _)| u.to_vec())
                .unwrap_or_default()
        };
        Ok(TableSummary {
            file_size: meta.file_size,
            entries: meta.entries,
            tombstones: meta.tombstones,
            raw_bytes: meta.raw_bytes,
            min_seqno: meta.min_seqno.0,
            max_seqno: meta.max_seqno.0,
            smallest_key: user_key(&meta.smallest),
            largest_key: user_key(&meta.largest),
            forward_entries,
            backward_entries,
        })
    };
    summarize().map_err(|e| with_path(e, path))
}

/// One record of a blob file: which key its value belongs to, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlobRecord {
    /// File offset of the record.
    pub offset: u64,
    /// Keyspace id of the entry the value belongs to.
    pub keyspace: u32,
    /// The user key.
    pub key: Vec<u8>,
    /// Bytes of the value.
    pub value_len: u32,
}

/// What a blob file (value log) image holds, as a scan and reads by handle found it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlobFileImage {
    /// The id in the file header (`None` if the header is torn).
    pub file_id: Option<u64>,
    /// The valid records, in file order.
    pub records: Vec<BlobRecord>,
    /// Offset just past the last valid record.
    pub valid_end: u64,
    /// Sum of the records' value lengths.
    pub value_bytes: u64,
    /// True if the file ends with a footer that agrees with the records (sealed).
    pub sealed: bool,
    /// The ignored tail of an unsealed file (a crash or an abandoned record).
    pub torn_tail: Option<Skipped>,
    /// Records whose value was read back by its handle, every chunk verified, with the
    /// length the record gives (all of them when decoding succeeds).
    pub values_verified: u64,
}

/// Decodes a whole blob file image as the store would: scans every record (header, key and
/// every chunk checksum), classifies the end (footer, torn tail or corruption), then reads
/// every value back through its value handle. The header's file id is not compared with
/// `path`, which only names the file in errors.
///
/// # Errors
/// `Error::Corruption` naming `path` and the offset, or `Error::UnsupportedVersion`, for an
/// image that does not follow `vlog/FORMAT.md`.
pub fn decode_blob_file(bytes: &[u8], path: &Path) -> Result<BlobFileImage> {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/image");
    let decode = || -> Result<BlobFileImage> {
        fs.create_dir(dir)?;
        let header_id = vlog::format::decode_file_header(bytes, None).unwrap_or(0);
        let image = dir.join(FileType::Blob.name(header_id));
        fs.create(&image)?.append(bytes)?;
        let scanned = vlog::scan_path(fs.as_ref(), &image, true)?;
        let reader = vlog::Reader::new(fs.clone(), dir, 1);
        let mut values_verified = 0u64;
        if let Some(id) = scanned.file_id {
            for r in &scanned.records {
                if reader.read(&r.handle(crate::files::BlobId(id)))?.len() == r.value_len as usize {
                    values_verified += 1;
                }
            }
        }
        Ok(BlobFileImage {
            file_id: scanned.file_id,
            records: scanned
                .records
                .into_iter()
                .map(|r| BlobRecord {
                    offset: r.offset,
                    keyspace: r.keyspace,
                    key: r.key,
                    value_len: r.value_len,
                })
                .collect(),
            valid_end: scanned.valid_end,
            value_bytes: scanned.value_bytes,
            sealed: scanned.footer.is_some(),
            torn_tail: scanned.torn_tail.map(|(offset, reason)| Skipped {
                offset,
                len: (bytes.len() as u64).saturating_sub(offset),
                reason,
            }),
            values_verified,
        })
    };
    decode().map_err(|e| with_path(e, path))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::key::KeyspaceId;

    fn image(batches: &[(u64, WriteBatch)]) -> Vec<u8> {
        let mut out = wal::encode_file_header(7);
        for (seqno, b) in batches {
            wal::encode_record(&mut out, *seqno, b.encoded());
        }
        out
    }

    #[test]
    fn a_log_decodes_to_its_batches_and_a_torn_tail_is_reported() {
        let mut a = WriteBatch::default();
        a.put(KeyspaceId(0), b"k1", b"v1").unwrap();
        a.remove(KeyspaceId(3), b"k2").unwrap();
        let mut b = WriteBatch::default();
        b.put(KeyspaceId(1), b"", b"").unwrap();
        let bytes = image(&[(1, a), (3, b)]);
        let path = Path::new("000007.wal");
        let img = decode_wal(&bytes, path, false).unwrap();
        assert_eq!(img.records.len(), 2);
        assert_eq!(img.records[0].seqno, 1);
        assert_eq!(
            img.records[0].ops,
            vec![
                BatchOp::Put {
                    keyspace: 0,
                    key: b"k1".to_vec(),
                    value: b"v1".to_vec()
                },
                BatchOp::Delete {
                    keyspace: 3,
                    key: b"k2".to_vec()
                },
            ]
        );
        assert_eq!(
            img.records[1].ops,
            vec![BatchOp::Put {
                keyspace: 1,
                key: vec![],
                value: vec![]
            }]
        );
        assert_eq!(img.valid_end, bytes.len() as u64);
        assert!(img.torn_tail.is_none());

        // Cut the last record short: recovery keeps the first batch and reports the tail.
        let cut = &bytes[..bytes.len() - 3];
        let img = decode_wal(cut, path, false).unwrap();
        assert_eq!(img.records.len(), 1);
        let tail = img.torn_tail.unwrap();
        assert_eq!(tail.offset, img.valid_end);
        assert_eq!(tail.offset + tail.len, cut.len() as u64);
    }

    #[test]
    fn a_record_whose_payload_is_not_a_batch_is_corruption() {
        let mut bytes = wal::encode_file_header(7);
        wal::encode_record(&mut bytes, 1, &[0xFF, 0xFF, 0xFF, 0xFF, 9]);
        let err = decode_wal(&bytes, Path::new("000007.wal"), false).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(decode_batch(&[1, 0, 0, 0, 0x77], Path::new("x"))
            .unwrap_err()
            .is_corruption());
    }

    #[test]
    fn a_manifest_decodes_to_its_summary_and_a_torn_tail_is_reported() {
        use crate::version::{encode_current, encode_file_header, encode_record, Edit};
        let snapshot = Edit {
            created_keyspaces: vec![(KeyspaceId(0), "default".into())],
            next_file_id: Some(10),
            next_keyspace_id: Some(1),
            ..Edit::default()
        };
        let later = Edit {
            created_keyspaces: vec![(KeyspaceId(1), "users".into())],
            next_keyspace_id: Some(2),
            wal_min_id: Some(9),
            ..Edit::default()
        };
        let mut bytes = encode_file_header(4);
        encode_record(&mut bytes, &snapshot.encode());
        encode_record(&mut bytes, &later.encode());
        let path = Path::new("MANIFEST-00000000000000000004");
        let img = decode_manifest(&bytes, path).unwrap();
        assert_eq!(img.file_id, 4);
        assert_eq!(img.edits, 2);
        assert_eq!(img.valid_end, bytes.len() as u64);
        assert!(img.torn_tail.is_none());
        assert_eq!(img.next_file_id, 10);
        assert_eq!(img.wal_min_id, 9);
        assert_eq!(img.next_keyspace_id, 2);
        let names: Vec<&str> = img.keyspaces.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["default", "users"]);
        assert_eq!(img.keyspaces[1].tables, vec![0; NUM_LEVELS]);

        let cut = &bytes[..bytes.len() - 2];
        let img = decode_manifest(cut, path).unwrap();
        assert_eq!(img.edits, 1);
        let tail = img.torn_tail.unwrap();
        assert_eq!(tail.offset, img.valid_end);
        assert_eq!(tail.offset + tail.len, cut.len() as u64);

        assert!(decode_manifest(&bytes[..30], path)
            .unwrap_err()
            .is_corruption());
        assert_eq!(
            decode_current(&encode_current(4), Path::new("CURRENT")).unwrap(),
            4
        );
        assert_eq!(FileType::Manifest.name(4), path.to_str().unwrap());
        assert!(decode_current(b"MANIFEST-4\n", Path::new("CURRENT"))
            .unwrap_err()
            .is_corruption());
    }

    #[test]
    fn a_table_decodes_to_its_summary_and_damage_names_the_path() {
        use crate::fs::read_all;
        use crate::key::{InternalKey, Kind, SeqNo};
        let fs = MemFs::new();
        let image = Path::new("/t.sst");
        let options = table::TableOptions {
            block_size: 64,
            ..table::TableOptions::default()
        };
        let mut w = table::Writer::create(&fs, image, TableId(3), &options).unwrap();
        for i in 0..50u64 {
            let kind = if i % 10 == 0 { Kind::Delete } else { Kind::Put };
            let key = InternalKey::new(format!("k{i:02}"), SeqNo(100 - i), kind);
            w.add(&key.encode().unwrap(), b"value").unwrap();
        }
        w.finish().unwrap();
        let bytes = read_all(&fs, image).unwrap();
        let path = Path::new("00000000000000000003.sst");
        let t = decode_table(&bytes, path).unwrap();
        assert_eq!(
            (t.entries, t.forward_entries, t.backward_entries),
            (50, 50, 50)
        );
        assert_eq!((t.tombstones, t.min_seqno, t.max_seqno), (5, 51, 100));
        assert_eq!(
            (t.smallest_key, t.largest_key),
            (b"k00".to_vec(), b"k49".to_vec())
        );
        assert_eq!(t.file_size, bytes.len() as u64);

        let mut bad = bytes.clone();
        bad[10] ^= 1;
        let err = decode_table(&bad, path).unwrap_err();
        let c = err.as_corruption().unwrap();
        assert_eq!((c.path.as_path(), c.offset), (path, 0));
        assert!(decode_table(&bytes[..20], path)
            .unwrap_err()
            .is_corruption());
    }

    #[test]
    fn a_blob_file_decodes_to_its_records() {
        let mut bytes = vlog::format::encode_file_header(9);
        let at = bytes.len() as u64;
        vlog::format::encode_record(&mut bytes, 9, at, 2, b"key", &[7u8; 100_000]);
        let end = bytes.len();
        bytes.extend_from_slice(&[1, 2, 3]); // a torn tail
        let img = decode_blob_file(&bytes, Path::new("x.blob")).unwrap();
        assert_eq!(img.file_id, Some(9));
        assert_eq!(
            img.records,
            vec![BlobRecord {
                offset: 20,
                keyspace: 2,
                key: b"key".to_vec(),
                value_len: 100_000
            }]
        );
        assert_eq!(img.values_verified, 1);
        assert_eq!(img.valid_end, end as u64);
        assert!(!img.sealed);
        assert_eq!(img.torn_tail.as_ref().map(|t| t.len), Some(3));
        bytes[30] ^= 1;
        bytes.truncate(end);
        let footer = vlog::format::Footer {
            records_end: end as u64,
            record_count: 1,
            value_bytes: 100_000,
            file_id: 9,
        };
        bytes.extend_from_slice(&footer.encode());
        let err = decode_blob_file(&bytes, Path::new("x.blob")).unwrap_err();
        assert_eq!(err.as_corruption().unwrap().path, Path::new("x.blob"));
    }
}
