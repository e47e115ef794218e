//! [`scan`]: decodes a whole blob file record by record (FORMAT.md §6, §7): the records,
//! then either the footer of a sealed file or the end of an unsealed file's valid prefix.
//!
//! Used by recovery (the valid prefix of the file that was active at a crash: its size,
//! record count and value bytes for the manifest), by GC (which keys a file holds), by
//! `inspect` and the fuzz target. Reads go through positioned reads of one chunk at a time,
//! so memory is bounded by one chunk and one key whatever the file holds.
//!
//! Classification at the first offset `p` where no record decodes:
//! * the rest of the file is a footer that agrees with the records: **sealed**;
//! * the file ends with a valid footer of this file that starts at or after `p`: the file
//!   was sealed, so everything before the footer was synced: **corruption** at `p`;
//! * a checksum-valid record with reserved bits set: **corruption** (no crash writes it);
//! * otherwise: **torn tail** at `p` (an unsealed file cut by a crash, or abandoned after
//!   a failed value source). Nothing valid can follow it: a file is never appended to after
//!   a partial record or a crash.
//!
//! A damaged file header with nothing after it is a crash inside file creation (the header
//! is synced before any record is written): an empty file with a torn tail at 0.
//!
//! Thread-safety: pure functions over a shared [`ReadableFile`].

use std::path::Path;

use super::format::{
    decode_file_header, Footer, HeaderError, RecordRef, CHUNK_CRC_LEN, CHUNK_LEN, FILE_HEADER_LEN,
    FOOTER_LEN, RECORD_HEADER_LEN,
};
use super::ValueHandle;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::BlobId;
use crate::files::FileType;
use crate::fs::{FileSystem, ReadableFile};

/// One record found by [`scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScannedRecord {
    /// File offset of the record.
    pub(crate) offset: u64,
    /// Keyspace id of the entry the value belongs to.
    pub(crate) keyspace: u32,
    /// The user key.
    pub(crate) key: Vec<u8>,
    /// Bytes of the value.
    pub(crate) value_len: u32,
    /// The record's stored header checksum.
    pub(crate) check: u32,
}

impl ScannedRecord {
    /// The handle of this record in file `file_id`.
    pub(crate) fn handle(&self, file_id: BlobId) -> ValueHandle {
        ValueHandle {
            file_id,
            offset: self.offset,
            value_len: self.value_len,
            check: self.check,
        }
    }
}

/// Everything [`scan`] found in a blob file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// The id in the file header (`None` if the header itself is torn).
    pub(crate) file_id: Option<u64>,
    /// The valid records, in file order.
    pub(crate) records: Vec<ScannedRecord>,
    /// Offset just past the last valid record (0 if the header is torn).
    pub(crate) valid_end: u64,
    /// Sum of the valid records' value lengths.
    pub(crate) value_bytes: u64,
    /// The footer, if the file is sealed.
    pub(crate) footer: Option<Footer>,
    /// Where an unsealed file's valid prefix ends and why, if bytes follow it.
    pub(crate) torn_tail: Option<(u64, Reason)>,
}

/// Reads up to `buf.len()` bytes at `offset`; returns how many were read.
pub(crate) fn read_up_to(file: &dyn ReadableFile, offset: u64, buf: &mut [u8]) -> Result<usize> {
    let mut done = 0usize;
    while let Some(rest) = buf.get_mut(done..) {
        if rest.is_empty() {
            break;
        }
        let n = file.read_at(offset.saturating_add(done as u64), rest)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// Reads exactly `buf.len()` bytes at `offset`: `Ok(false)` if the file ends first.
pub(crate) fn read_full(file: &dyn ReadableFile, offset: u64, buf: &mut [u8]) -> Result<bool> {
    Ok(read_up_to(file, offset, buf)? == buf.len())
}

/// Reads and checks the record header and key at `offset`: the record and its key, or
/// the reason it is not a valid record there. `file_len` bounds the record's extent.
pub(crate) fn read_record(
    file: &dyn ReadableFile,
    file_id: u64,
    offset: u64,
    file_len: u64,
) -> Result<std::result::Result<(RecordRef, Vec<u8>), Reason>> {
    let mut raw = [0u8; RECORD_HEADER_LEN as usize];
    if !read_full(file, offset, &mut raw)? {
        return Ok(Err(Reason::Truncated));
    }
    let r = match RecordRef::parse(file_id, offset, &raw) {
        Ok(r) => r,
        Err(reason) => return Ok(Err(reason)),
    };
    // key_len is at most 65,535, so reading that many unchecked bytes is safe.
    let mut key = vec![0u8; usize::from(r.key_len)];
    if !read_full(file, r.key_offset(), &mut key)? {
        return Ok(Err(Reason::Truncated));
    }
    if let Err(reason) = r.check(&raw, &key) {
        return Ok(Err(reason));
    }
    if r.end() > file_len {
        return Ok(Err(Reason::Truncated));
    }
    Ok(Ok((r, key)))
}

/// Reads chunk `index` of record `r` with its checksum into `buf` (resized to fit) and
/// checks it: `Ok(Err((offset, reason)))` if it is short or does not check out.
pub(crate) fn read_chunk(
    file: &dyn ReadableFile,
    r: &RecordRef,
    index: u64,
    buf: &mut Vec<u8>,
) -> Result<std::result::Result<(), (u64, Reason)>> {
    let at = r.chunk_offset(index);
    let len = (r.chunk_len(index) + CHUNK_CRC_LEN) as usize;
    debug_assert!(len as u64 <= CHUNK_LEN + CHUNK_CRC_LEN);
    buf.resize(len, 0);
    if !read_full(file, at, buf)? {
        return Ok(Err((at, Reason::Truncated)));
    }
    Ok(r.check_chunk(index, buf).map_err(|reason| (at, reason)))
}

fn corrupt(path: &Path, offset: u64, reason: Reason) -> Error {
    Error::corruption(FileKind::Blob, path, offset, reason)
}

/// The footer at the end of the file, if there is a valid one for file `id`.
fn trailing_footer(file: &dyn ReadableFile, file_len: u64, id: u64) -> Result<Option<Footer>> {
    let Some(at) = file_len.checked_sub(FOOTER_LEN) else {
        return Ok(None);
    };
    let mut raw = [0u8; FOOTER_LEN as usize];
    if at < FILE_HEADER_LEN || !read_full(file, at, &mut raw)? {
        return Ok(None);
    }
    Ok(Footer::decode(&raw)
        .ok()
        .filter(|f| f.file_id == id && f.records_end == at))
}

/// Decodes the blob file `file` (see the module documentation). With `verify_values`,
/// every chunk checksum is checked too; without, only headers and keys are read.
/// `expected_id` (from the file name) must match the header's id when given.
///
/// # Errors
/// `Error::Io` if a read fails; `Error::UnsupportedVersion` for a newer format;
/// `Error::Corruption` (`FileKind::Blob`) for a damaged header followed by more bytes, a
/// header id that differs from `expected_id`, damage before a valid footer, a record with
/// reserved bits set, or a footer that disagrees with the records.
pub(crate) fn scan(
    file: &dyn ReadableFile,
    expected_id: Option<u64>,
    verify_values: bool,
) -> Result<Scanned> {
    let path = file.path();
    let file_len = file.len()?;
    let mut scanned = Scanned {
        file_id: None,
        records: Vec::new(),
        valid_end: 0,
        value_bytes: 0,
        footer: None,
        torn_tail: None,
    };
    let mut raw = [0u8; FILE_HEADER_LEN as usize];
    let got = read_up_to(file, 0, &mut raw)?;
    let id = match decode_file_header(raw.get(..got).unwrap_or_default(), expected_id) {
        Ok(id) => id,
        Err(HeaderError::Unsupported(major)) => {
            return Err(Error::UnsupportedVersion {
                file: FileKind::Blob,
                path: path.to_path_buf(),
                major,
                minor: 0,
            })
        }
        Err(HeaderError::Damaged(at, reason)) => {
            if file_len <= FILE_HEADER_LEN && !matches!(reason, Reason::HeaderField { .. }) {
                if file_len > 0 {
                    scanned.torn_tail = Some((0, reason));
                }
                return Ok(scanned);
            }
            return Err(corrupt(path, at, reason));
        }
    };
    scanned.file_id = Some(id);
    let mut p = FILE_HEADER_LEN;
    let mut chunk = Vec::new();
    loop {
        if p == file_len {
            break;
        }
        if file_len - p == FOOTER_LEN {
            if let Some(f) = trailing_footer(file, file_len, id)? {
                if f.record_count != scanned.records.len() as u64
                    || f.value_bytes != scanned.value_bytes
                {
                    return Err(corrupt(
                        path,
                        p,
                        Reason::BadEntry("blob file footer disagrees with its records"),
                    ));
                }
                scanned.footer = Some(f);
                break;
            }
        }
        let damage = match read_record(file, id, p, file_len)? {
            Err(reason) => Some((p, reason)),
            Ok((r, key)) => {
                let mut bad = None;
                if verify_values {
                    for index in 0..r.chunk_count() {
                        if let Err(d) = read_chunk(file, &r, index, &mut chunk)? {
                            bad = Some(d);
                            break;
                        }
                    }
                }
                if bad.is_none() {
                    scanned.records.push(ScannedRecord {
                        offset: p,
                        keyspace: r.keyspace,
                        key,
                        value_len: r.value_len,
                        check: r.header_crc,
                    });
                    scanned.value_bytes += u64::from(r.value_len);
                    p = r.end();
                }
                bad
            }
        };
        if let Some((at, reason)) = damage {
            let sealed = trailing_footer(file, file_len, id)?.is_some();
            if sealed || matches!(reason, Reason::BadEntry(_)) {
                return Err(corrupt(path, at, reason));
            }
            scanned.torn_tail = Some((p, reason));
            break;
        }
    }
    scanned.valid_end = p;
    Ok(scanned)
}

/// [`scan`] of the file at `path`, checking its header id against the id in its name when
/// the name is a blob file name.
///
/// # Errors
/// As [`scan`], and `Error::Io` if the file cannot be opened.
pub(crate) fn scan_path(fs: &dyn FileSystem, path: &Path, verify_values: bool) -> Result<Scanned> {
    let file = fs.open_read(path)?;
    let expected = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| FileType::Blob.parse(n));
    scan(file.as_ref(), expected, verify_values)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::format::{encode_file_header, encode_record};
    use super::super::Reader;
    use super::*;
    use crate::files::FileType;
    use crate::fs::MemFs;
    use std::sync::Arc;

    const ID: u64 = 7;

    /// A small blob file image: records of several sizes (one spanning two chunks), and
    /// the values, by offset.
    fn image(sealed: bool) -> (Vec<u8>, Vec<(u64, Vec<u8>)>) {
        let mut out = encode_file_header(ID);
        let mut values = Vec::new();
        for (i, len) in [3usize, 0, 40, 70_000, 9].into_iter().enumerate() {
            let v: Vec<u8> = (0..len).map(|j| (i * 13 + j) as u8).collect();
            let at = out.len() as u64;
            encode_record(&mut out, ID, at, i as u32, format!("key{i}").as_bytes(), &v);
            values.push((at, v));
        }
        if sealed {
            let f = Footer {
                records_end: out.len() as u64,
                record_count: values.len() as u64,
                value_bytes: values.iter().map(|(_, v)| v.len() as u64).sum(),
                file_id: ID,
            };
            out.extend_from_slice(&f.encode());
        }
        (out, values)
    }

    fn path() -> std::path::PathBuf {
        Path::new("/db").join(FileType::Blob.name(ID))
    }

    fn put(fs: &MemFs, bytes: &[u8]) {
        let p = path();
        if fs.exists(&p).unwrap() {
            fs.remove(&p).unwrap();
        }
        fs.create(&p).unwrap().append(bytes).unwrap();
    }

    fn fs() -> MemFs {
        let fs = MemFs::new();
        fs.create_dir(Path::new("/db")).unwrap();
        fs
    }

    #[test]
    fn sealed_and_unsealed_files_scan_whole() {
        let fs = fs();
        for sealed in [true, false] {
            let (bytes, values) = image(sealed);
            put(&fs, &bytes);
            let s = scan_path(&fs, &path(), true).unwrap();
            assert_eq!(s.file_id, Some(ID));
            assert_eq!(s.footer.is_some(), sealed);
            assert_eq!(s.torn_tail, None);
            assert_eq!(s.records.len(), values.len());
            for (i, (r, (at, v))) in s.records.iter().zip(&values).enumerate() {
                assert_eq!(r.offset, *at);
                assert_eq!(r.keyspace, i as u32);
                assert_eq!(r.key, format!("key{i}").into_bytes());
                assert_eq!(r.value_len as usize, v.len());
            }
            assert_eq!(s.value_bytes, 70_052);
            let expected_end = bytes.len() as u64 - if sealed { FOOTER_LEN } else { 0 };
            assert_eq!(s.valid_end, expected_end);
        }
    }

    /// Every truncation of an unsealed file gives a prefix of its records, never an error
    /// or a record that was not written (a crash can leave any prefix).
    #[test]
    fn every_truncation_is_a_prefix() {
        let fs = fs();
        let (bytes, values) = image(false);
        let step = |cut: usize| if (200..70_000).contains(&cut) { 997 } else { 1 };
        let mut cut = 0;
        while cut <= bytes.len() {
            put(&fs, &bytes[..cut]);
            let s = scan_path(&fs, &path(), true).unwrap();
            let n = s.records.len();
            assert!(values[..n]
                .iter()
                .zip(&s.records)
                .all(|((at, _), r)| *at == r.offset));
            if cut as u64 >= FILE_HEADER_LEN {
                // The valid prefix ends where record n starts, and the cut lies inside
                // record n: no complete record is dropped.
                let start = values.get(n).map_or(bytes.len() as u64, |(at, _)| *at);
                let next = values.get(n + 1).map_or(u64::MAX, |(at, _)| *at);
                assert_eq!(s.valid_end, start, "cut {cut}");
                assert!(start <= cut as u64 && (cut as u64) < next, "cut {cut}");
            }
            assert_eq!(
                s.torn_tail.is_some(),
                cut as u64 != s.valid_end,
                "cut {cut}"
            );
            cut += step(cut);
        }
    }

    /// Any flipped byte of a small file (sealed or not) is detected (an error, or a shorter
    /// valid prefix) or harmless, and reading any handle of the original file afterwards
    /// returns the original value or an error, never other bytes.
    #[test]
    fn every_flipped_byte_is_detected_or_harmless() {
        let fs = fs();
        for sealed in [true, false] {
            let mut bytes = encode_file_header(ID);
            let mut values = Vec::new();
            for (i, len) in [5usize, 0, 30].into_iter().enumerate() {
                let v: Vec<u8> = (0..len).map(|j| (i + j * 3) as u8).collect();
                let at = bytes.len() as u64;
                let r = encode_record(&mut bytes, ID, at, 1, &[b'k', i as u8], &v);
                values.push((r, v));
            }
            if sealed {
                let f = Footer {
                    records_end: bytes.len() as u64,
                    record_count: 3,
                    value_bytes: 35,
                    file_id: ID,
                };
                bytes.extend_from_slice(&f.encode());
            }
            for i in 0..bytes.len() {
                for mask in [0x01u8, 0x80, 0xff] {
                    let mut bad = bytes.clone();
                    bad[i] ^= mask;
                    put(&fs, &bad);
                    match scan_path(&fs, &path(), true) {
                        Ok(s) => {
                            // A prefix of the records, unchanged; a footer only with
                            // all of them (a damaged footer reads as a torn tail).
                            for (r, (orig, _)) in s.records.iter().zip(&values) {
                                assert_eq!(r.offset, orig.offset, "byte {i}");
                                assert_eq!(r.check, orig.header_crc, "byte {i}");
                            }
                            assert!(s.footer.is_none() || s.records.len() == 3, "byte {i}");
                        }
                        Err(e) => assert!(e.is_corruption(), "byte {i}: {e}"),
                    }
                    let reader = Reader::new(Arc::new(fs.clone()), Path::new("/db"), 1);
                    for (r, v) in &values {
                        let h = ValueHandle {
                            file_id: BlobId(ID),
                            offset: r.offset,
                            value_len: r.value_len,
                            check: r.header_crc,
                        };
                        match reader.read(&h) {
                            Ok(got) => assert_eq!(&got, v, "byte {i} mask {mask:#x}"),
                            Err(e) => assert!(e.is_corruption(), "byte {i}: {e}"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn damage_in_a_sealed_file_is_corruption_not_a_torn_tail() {
        let fs = fs();
        let (mut bytes, values) = image(true);
        let at = values[2].0 as usize + 20; // inside record 2's value
        bytes[at] ^= 1;
        put(&fs, &bytes);
        let err = scan_path(&fs, &path(), true).unwrap_err();
        let c = err.as_corruption().unwrap();
        assert_eq!(c.file, FileKind::Blob);
        assert_eq!(c.offset, values[2].0 + 16 + 4, "at the damaged chunk");
        assert!(matches!(c.reason, Reason::Checksum { .. }));
        // Without value verification the header walk still succeeds.
        let s = scan_path(&fs, &path(), false).unwrap();
        assert!(s.footer.is_some());
        // The same damage in an unsealed file is a torn tail at the record.
        let (mut bytes, _) = image(false);
        bytes[at] ^= 1;
        put(&fs, &bytes);
        let s = scan_path(&fs, &path(), true).unwrap();
        assert_eq!(s.records.len(), 2);
        assert_eq!(s.torn_tail.as_ref().map(|t| t.0), Some(values[2].0));
    }

    #[test]
    fn footer_disagreeing_with_records_and_header_faults() {
        let fs = fs();
        let (mut bytes, values) = image(false);
        let f = Footer {
            records_end: bytes.len() as u64,
            record_count: values.len() as u64 + 1,
            value_bytes: 70_052,
            file_id: ID,
        };
        bytes.extend_from_slice(&f.encode());
        put(&fs, &bytes);
        let err = scan_path(&fs, &path(), true).unwrap_err();
        assert!(matches!(
            err.as_corruption().unwrap().reason,
            Reason::BadEntry("blob file footer disagrees with its records")
        ));
        // A header of another id.
        put(&fs, &encode_file_header(ID + 1));
        let err = scan_path(&fs, &path(), true).unwrap_err();
        assert_eq!(err.as_corruption().unwrap().offset, 8);
        // A torn header with nothing after it: an empty file.
        put(&fs, &[0u8; 20]);
        let s = scan_path(&fs, &path(), true).unwrap();
        assert!(s.records.is_empty() && s.torn_tail.is_some() && s.file_id.is_none());
        put(&fs, &[]);
        let s = scan_path(&fs, &path(), true).unwrap();
        assert!(s.records.is_empty() && s.torn_tail.is_none());
        // A damaged header followed by records: corruption.
        let (mut bytes, _) = image(false);
        bytes[0] ^= 1;
        put(&fs, &bytes);
        assert!(scan_path(&fs, &path(), true).unwrap_err().is_corruption());
        // A newer version.
        put(
            &fs,
            &crate::files::FileHeader {
                magic: super::super::format::MAGIC,
                version: 9,
                id: ID,
            }
            .encode(),
        );
        assert!(matches!(
            scan_path(&fs, &path(), true),
            Err(Error::UnsupportedVersion {
                file: FileKind::Blob,
                major: 9,
                ..
            })
        ));
    }
}
