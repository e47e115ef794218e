//! [`Writer`]: appends values to the value log: the active blob file, rotated at a size
//! limit (FORMAT.md §7).
//!
//! Life of a blob file: created on the first append after the previous file was sealed
//! (header written and synced, directory synced, so its name is durable before any record
//! in it can be referenced); records appended; **sealed** on rotation (footer written,
//! `fdatasync`), after which it is never written again. Sealed files are reported through
//! [`Writer::take_sealed`] as [`BlobFileMeta`] for the manifest.
//!
//! [`Writer::append`] and [`Writer::append_from`] hand the whole record to the OS before
//! they return; `append` hands an in-memory value's chunks over in place, between the
//! header and the chunk checksums, with vectored appends (no copy of the value).
//! [`Writer::append_gathered`] instead keeps small records in one bounded buffer (at most
//! `WRITE_BUF_LEN` plus one record) and hands them over together at
//! [`Writer::hand_over`], one write for a whole write group's values instead of one per
//! value. Every other call hands gathered records over first, so records reach the file
//! in handle order. The `Db` calls `hand_over` before writing any WAL record that
//! references a gathered record, so a WAL record never reaches the OS ahead of the value
//! it references. [`Writer::sync`] makes every record durable; the `Db` calls it before
//! the WAL fsync that covers the records' handles (invariant 3 of the module `vlog`).
//!
//! Streaming: [`Writer::append_from`] copies a value of known length from any
//! [`std::io::Read`] through one bounded buffer, so a value of hundreds of MiB never sits
//! in memory whole. If the source fails or ends early after part of the record reached the
//! file, the partial record stays there but the file is **abandoned**: synced and reported
//! as finished without a footer (its records before the partial one stay readable by their
//! handles), and the next append starts a new file. Nothing is appended after a partial
//! record. If the source fails before any byte of the record was written (values under
//! 1 MiB are written in one piece), nothing changes.
//!
//! Poisoning: a failed write or sync leaves the file's tail unknown; the writer then
//! answers every call with `Error::Poisoned` (as the WAL writer does). Refused arguments
//! (a key or value too long) change nothing and do not poison.
//!
//! Thread-safety: `Send`, one owner; the `Db` serializes appends.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{
    chunk_crc, encode_file_header, record_len, Footer, RecordRef, CHUNK_CRC_LEN, CHUNK_LEN,
    FILE_HEADER_LEN, FOOTER_LEN,
};
use super::{BlobFileMeta, ValueHandle};
use crate::error::{Error, Result};
use crate::files::BlobId;
use crate::fs::{FileSystem, WritableFile};
use crate::key::{check_key_len, KeyspaceId};

/// Default size at which the active blob file is sealed (256 MiB).
pub(crate) const DEFAULT_MAX_FILE_LEN: u64 = 256 << 20;

/// Bytes gathered before one `append` to the file while streaming a large value (1 MiB).
const WRITE_BUF_LEN: usize = 1 << 20;

/// Chunks of an in-memory value handed to the OS per vectored append (4 MiB of value in
/// at most 129 slices, well under `IOV_MAX`).
const CHUNKS_PER_APPEND: usize = 64;

/// Bytes of value per vectored append.
const GROUP_LEN: usize = CHUNKS_PER_APPEND * CHUNK_LEN as usize;

/// Bytes of a chunk's checksum.
const CHUNK_CRC_BYTES: usize = CHUNK_CRC_LEN as usize;

/// The value of a record appended whole: in memory, or read from a source.
enum Source<'a> {
    Slice(&'a [u8]),
    Stream(&'a mut dyn Read),
}

/// Options of a [`Writer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WriterOptions {
    /// A file is sealed before an append that would take it past this length (a single
    /// record larger than this gets a file of its own).
    pub(crate) max_file_len: u64,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            max_file_len: DEFAULT_MAX_FILE_LEN,
        }
    }
}

/// The blob file being appended to.
struct Active {
    file: Box<dyn WritableFile>,
    id: BlobId,
    len: u64,
    synced_len: u64,
    record_count: u64,
    value_bytes: u64,
}

impl Active {
    fn meta(&self, file_size: u64) -> BlobFileMeta {
        BlobFileMeta {
            id: self.id,
            file_size,
            record_count: self.record_count,
            value_bytes: self.value_bytes,
        }
    }
}

/// Appends values to the value log; see the module documentation.
pub(crate) struct Writer {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: WriterOptions,
    next_id: Box<dyn FnMut() -> u64 + Send>,
    active: Option<Active>,
    sealed: Vec<BlobFileMeta>,
    buf: Vec<u8>,
    /// Whole records of the active file gathered by [`Writer::append_gathered`] and not
    /// yet handed to the OS; counted in the active file's `len`.
    held: Vec<u8>,
    poisoned: bool,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("dir", &self.dir)
            .field("active", &self.active.as_ref().map(|a| (a.id, a.len)))
            .field("sealed", &self.sealed)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

/// The error for a value source that fails or ends early.
fn source_error(err: io::Error) -> Error {
    Error::io(Path::new("<value source>"), "read value", err)
}

impl Writer {
    /// A writer that creates blob files in `dir`, taking each new file's id from `next_id`
    /// (the store's shared file-id counter). No file is created until the first append.
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: WriterOptions,
        next_id: Box<dyn FnMut() -> u64 + Send>,
    ) -> Writer {
        Writer {
            fs,
            dir: dir.to_path_buf(),
            options,
            next_id,
            active: None,
            sealed: Vec::new(),
            buf: Vec::new(),
            held: Vec::new(),
            poisoned: false,
        }
    }

    /// Appends a record holding `value` for `key` of `keyspace`; returns its handle once
    /// the record is handed to the OS (durable after [`Writer::sync`]).
    ///
    /// # Errors
    /// As [`Writer::append_from`].
    pub(crate) fn append(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        value: &[u8],
    ) -> Result<ValueHandle> {
        let len = u32::try_from(value.len())
            .map_err(|_| Error::invalid(format!("value of {} bytes is too long", value.len())))?;
        self.append_source(keyspace, key, len, Source::Slice(value))
    }

    /// Appends a record whose value is the next `value_len` bytes of `source`, streamed
    /// through a bounded buffer; returns its handle once the record is handed to the OS.
    ///
    /// # Errors
    /// `Error::Poisoned` after an earlier failure; `InvalidArgument` for a key longer than
    /// `MAX_KEY_LEN` (nothing written); `Error::Io` with op `"read value"` if `source`
    /// fails or ends early (the file is abandoned, see the module documentation; the writer
    /// stays usable); `Error::Io` from the file system (the writer is poisoned).
    pub(crate) fn append_from(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        value_len: u32,
        source: &mut dyn Read,
    ) -> Result<ValueHandle> {
        self.append_source(keyspace, key, value_len, Source::Stream(source))
    }

    /// [`Writer::append`] and [`Writer::append_from`]: one record, handed to the OS whole.
    fn append_source(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        value_len: u32,
        source: Source<'_>,
    ) -> Result<ValueHandle> {
        self.check_poisoned()?;
        check_key_len(key)?;
        self.hand_over()?;
        self.make_room(record_len(key.len(), value_len))?;
        let len_before = self.active_len();
        let result = match source {
            Source::Slice(value) => self.write_slice_record(keyspace, key, value_len, value),
            Source::Stream(source) => self.write_record(keyspace, key, value_len, source),
        };
        match result {
            Ok(h) => Ok(h),
            Err(
                e @ Error::Io {
                    op: "read value", ..
                },
            ) => {
                // Part of the record reached the file and can never be completed: finish
                // the file here. If none did, the file goes on as if nothing happened.
                if self.active_len() != len_before {
                    self.abandon()?;
                }
                Err(e)
            }
            Err(e) => {
                self.poisoned = true;
                Err(e)
            }
        }
    }

    /// Appends a record holding `value` for `key` of `keyspace` to the gathered records;
    /// returns its handle, which may be used only after [`Writer::hand_over`] (or any
    /// other call that hands gathered records over). A value of [`WRITE_BUF_LEN`] or more
    /// is handed over at once, as by [`Writer::append`].
    ///
    /// # Errors
    /// As [`Writer::append`]; a failed hand-over poisons the writer.
    pub(crate) fn append_gathered(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        value: &[u8],
    ) -> Result<ValueHandle> {
        self.check_poisoned()?;
        check_key_len(key)?;
        if value.len() >= WRITE_BUF_LEN {
            self.hand_over()?;
            return self.append(keyspace, key, value);
        }
        let value_len = u32::try_from(value.len())
            .map_err(|_| Error::invalid(format!("value of {} bytes is too long", value.len())))?;
        self.make_room(record_len(key.len(), value_len))?;
        let active = self.active_file()?;
        let (id, offset) = (active.id, active.len);
        let (r, raw) = RecordRef::new(id.0, offset, keyspace.0, key, value_len);
        let start = self.held.len();
        self.held.extend_from_slice(&raw);
        self.held.extend_from_slice(key);
        let mut rest = value;
        for index in 0..r.chunk_count() {
            let chunk_len = usize::try_from(r.chunk_len(index)).unwrap_or(usize::MAX);
            let (chunk, after) = rest.split_at(chunk_len.min(rest.len()));
            self.held.extend_from_slice(chunk);
            let crc = chunk_crc(r.header_crc, index as u32, chunk);
            self.held.extend_from_slice(&crc.to_le_bytes());
            rest = after;
        }
        let added = (self.held.len() - start) as u64;
        debug_assert_eq!(added, r.end() - offset);
        if let Some(a) = self.active.as_mut() {
            a.len += added;
            a.record_count += 1;
            a.value_bytes += u64::from(value_len);
        }
        if self.held.len() >= WRITE_BUF_LEN {
            self.hand_over()?;
        }
        Ok(ValueHandle {
            file_id: id,
            offset,
            value_len,
            check: r.header_crc,
        })
    }

    /// Seals the active file if a record of `len` bytes would take it past the size limit
    /// (a file holding no record yet takes any record).
    fn make_room(&mut self, len: u64) -> Result<()> {
        if let Some(a) = &self.active {
            if a.len > FILE_HEADER_LEN && a.len.saturating_add(len) > self.options.max_file_len {
                self.rotate()?;
            }
        }
        Ok(())
    }

    /// Hands every gathered record to the OS (one write); from then on their handles may
    /// be used.
    ///
    /// # Errors
    /// `Error::Poisoned`, or `Error::Io` (and the writer is poisoned).
    pub(crate) fn hand_over(&mut self) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        self.check_poisoned()?;
        let result = match self.active.as_mut() {
            Some(a) => a.file.append(&self.held),
            None => Err(Error::Poisoned),
        };
        self.held.clear();
        self.held.shrink_to(2 * WRITE_BUF_LEN);
        result.inspect_err(|_| self.poisoned = true)
    }

    fn write_record(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        value_len: u32,
        source: &mut dyn Read,
    ) -> Result<ValueHandle> {
        let active = self.active_file()?;
        let (id, offset) = (active.id, active.len);
        let (r, raw) = RecordRef::new(id.0, offset, keyspace.0, key, value_len);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(&raw);
        buf.extend_from_slice(key);
        let mut written = 0u64;
        let result = (|| -> Result<()> {
            for index in 0..r.chunk_count() {
                let chunk_len = r.chunk_len(index) as usize;
                let start = buf.len();
                buf.resize(start + chunk_len, 0);
                let chunk = buf.get_mut(start..).unwrap_or_default();
                source.read_exact(chunk).map_err(source_error)?;
                let crc = chunk_crc(r.header_crc, index as u32, chunk);
                buf.extend_from_slice(&crc.to_le_bytes());
                if buf.len() >= WRITE_BUF_LEN {
                    written += buf.len() as u64;
                    self.append_raw(&buf)?;
                    buf.clear();
                }
            }
            written += buf.len() as u64;
            self.append_raw(&buf)
        })();
        buf.clear();
        buf.shrink_to(WRITE_BUF_LEN + CHUNK_LEN as usize);
        self.buf = buf;
        if let Some(a) = self.active.as_mut() {
            // The bytes that reached the file count even if the record failed, so the
            // reported file size covers everything on disk.
            a.len += written;
        }
        result?;
        debug_assert_eq!(written, r.end() - offset);
        Ok(self.record_written(id, offset, value_len, r.header_crc))
    }

    /// Counts a record written whole to the active file; its handle.
    fn record_written(
        &mut self,
        file_id: BlobId,
        offset: u64,
        value_len: u32,
        check: u32,
    ) -> ValueHandle {
        if let Some(a) = self.active.as_mut() {
            a.record_count += 1;
            a.value_bytes += u64::from(value_len);
        }
        ValueHandle {
            file_id,
            offset,
            value_len,
            check,
        }
    }

    /// Writes a record whose value is in memory: its chunks go to the OS straight from
    /// `value`, between the header and the checksums, in vectored appends of at most
    /// `CHUNKS_PER_APPEND` chunks; the value is never copied into `buf`.
    fn write_slice_record(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        value_len: u32,
        value: &[u8],
    ) -> Result<ValueHandle> {
        debug_assert_eq!(value.len() as u64, u64::from(value_len));
        let active = self.active_file()?;
        let (id, offset) = (active.id, active.len);
        let (r, raw) = RecordRef::new(id.0, offset, keyspace.0, key, value_len);
        let mut head = std::mem::take(&mut self.buf);
        head.clear();
        head.extend_from_slice(&raw);
        head.extend_from_slice(key);
        let mut written = 0u64;
        let result = if value.is_empty() {
            self.append_raw_parts(&[&head], &mut written)
        } else {
            // The first append carries the header with the first group of chunks.
            value
                .chunks(GROUP_LEN)
                .enumerate()
                .try_for_each(|(group_index, group)| {
                    let mut crcs = [[0u8; CHUNK_CRC_BYTES]; CHUNKS_PER_APPEND];
                    let mut parts: Vec<&[u8]> = Vec::with_capacity(1 + 2 * CHUNKS_PER_APPEND);
                    if group_index == 0 {
                        parts.push(&head);
                    }
                    for ((i, chunk), crc) in
                        group.chunks(CHUNK_LEN as usize).enumerate().zip(&mut crcs)
                    {
                        let index = (group_index * CHUNKS_PER_APPEND + i) as u32;
                        *crc = chunk_crc(r.header_crc, index, chunk).to_le_bytes();
                        parts.push(chunk);
                        parts.push(crc);
                    }
                    self.append_raw_parts(&parts, &mut written)
                })
        };
        head.clear();
        self.buf = head;
        if let Some(a) = self.active.as_mut() {
            a.len += written;
        }
        result?;
        debug_assert_eq!(written, r.end() - offset);
        Ok(self.record_written(id, offset, value_len, r.header_crc))
    }

    fn append_raw(&mut self, bytes: &[u8]) -> Result<()> {
        match self.active.as_mut() {
            Some(a) => a.file.append(bytes),
            None => Err(Error::Poisoned),
        }
    }

    /// Appends `parts` to the active file in one vectored append; adds their length to
    /// `written` once they are handed over.
    fn append_raw_parts(&mut self, parts: &[&[u8]], written: &mut u64) -> Result<()> {
        match self.active.as_mut() {
            Some(a) => a.file.append_parts(parts)?,
            None => return Err(Error::Poisoned),
        }
        *written += parts.iter().map(|p| p.len() as u64).sum::<u64>();
        Ok(())
    }

    /// The active file, created if there is none.
    fn active_file(&mut self) -> Result<&mut Active> {
        if self.active.is_none() {
            let id = BlobId((self.next_id)());
            let path = self.dir.join(id.file_name());
            let created = (|| -> Result<Box<dyn WritableFile>> {
                let mut file = self.fs.create(&path)?;
                file.append(&encode_file_header(id.0))?;
                file.sync_data()?;
                self.fs.sync_dir(&self.dir)?;
                Ok(file)
            })();
            let file = created.inspect_err(|_| self.poisoned = true)?;
            self.active = Some(Active {
                file,
                id,
                len: FILE_HEADER_LEN,
                synced_len: FILE_HEADER_LEN,
                record_count: 0,
                value_bytes: 0,
            });
        }
        self.active.as_mut().ok_or(Error::Poisoned)
    }

    /// Makes every appended record durable (`fdatasync` of the active file; sealed files
    /// were synced when sealed).
    ///
    /// # Errors
    /// `Error::Poisoned`, or `Error::Io` (and the writer is poisoned).
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.check_poisoned()?;
        self.hand_over()?;
        if let Some(a) = self.active.as_mut() {
            if a.synced_len < a.len {
                if let Err(e) = a.file.sync_data() {
                    self.poisoned = true;
                    return Err(e);
                }
                a.synced_len = a.len;
            }
        }
        Ok(())
    }

    /// Seals the active file, if any: writes its footer and syncs it. The next append
    /// starts a new file. The `Db` also rotates when it switches memtables, so a flush
    /// references only sealed files (FORMAT.md §12).
    ///
    /// # Errors
    /// `Error::Poisoned`, or `Error::Io` (and the writer is poisoned).
    pub(crate) fn rotate(&mut self) -> Result<()> {
        self.check_poisoned()?;
        self.hand_over()?;
        let Some(mut a) = self.active.take() else {
            return Ok(());
        };
        let footer = Footer {
            records_end: a.len,
            record_count: a.record_count,
            value_bytes: a.value_bytes,
            file_id: a.id.0,
        };
        let result = a
            .file
            .append(&footer.encode())
            .and_then(|()| a.file.sync_data());
        if let Err(e) = result {
            self.poisoned = true;
            return Err(e);
        }
        self.sealed.push(a.meta(a.len + FOOTER_LEN));
        Ok(())
    }

    /// Finishes the active file without a footer after a partial record: syncs it and
    /// reports it with the records completed before.
    fn abandon(&mut self) -> Result<()> {
        let Some(mut a) = self.active.take() else {
            return Ok(());
        };
        if let Err(e) = a.file.sync_data() {
            self.poisoned = true;
            return Err(e);
        }
        self.sealed.push(a.meta(a.len));
        Ok(())
    }

    /// The files finished since the last call (sealed or abandoned), for the manifest.
    pub(crate) fn take_sealed(&mut self) -> Vec<BlobFileMeta> {
        std::mem::take(&mut self.sealed)
    }

    /// The id of the file being appended to, if one is open.
    #[cfg(test)]
    pub(crate) fn active_id(&self) -> Option<BlobId> {
        self.active.as_ref().map(|a| a.id)
    }

    /// Bytes of the active file (0 if none).
    pub(crate) fn active_len(&self) -> u64 {
        self.active.as_ref().map_or(0, |a| a.len)
    }

    /// Capacity of the streaming buffer (bounded by 1 MiB plus one chunk).
    #[cfg(test)]
    pub(crate) fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// True after a failed write or sync.
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    fn check_poisoned(&self) -> Result<()> {
        if self.poisoned {
            Err(Error::Poisoned)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::scan::scan_path;
    use super::super::Reader;
    use super::*;
    use crate::files::FileType;
    use crate::fs::{Fault, FaultKind, MemFs, Op};
    use std::sync::atomic::{AtomicU64, Ordering};

    pub(crate) fn dir() -> PathBuf {
        PathBuf::from("/db")
    }

    pub(crate) fn new_fs() -> MemFs {
        let fs = MemFs::new();
        fs.create_dir(&dir()).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        fs
    }

    pub(crate) fn ids(start: u64) -> Box<dyn FnMut() -> u64 + Send> {
        let next = Arc::new(AtomicU64::new(start));
        Box::new(move || next.fetch_add(1, Ordering::SeqCst))
    }

    pub(crate) fn value(i: u64, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i as usize * 31 + j * 7) as u8).collect()
    }

    /// Makes the next `op` on `fs` fail with `kind`.
    fn fail_next(fs: &MemFs, op: Op, kind: FaultKind) {
        fs.inject(Fault {
            op,
            nth: fs.op_count(op) + 1,
            kind,
            forever: false,
        });
    }

    fn writer(fs: &MemFs, max_file_len: u64) -> Writer {
        Writer::new(
            Arc::new(fs.clone()),
            &dir(),
            WriterOptions { max_file_len },
            ids(10),
        )
    }

    #[test]
    fn appends_read_back_and_files_appear_lazily() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        assert_eq!(w.active_id(), None);
        assert!(
            fs.list_dir(&dir()).unwrap().is_empty(),
            "no file before an append"
        );
        let mut handles = Vec::new();
        for i in 0..20u64 {
            let v = value(i, (i as usize) * 9_000);
            handles.push((w.append(KeyspaceId(2), &i.to_le_bytes(), &v).unwrap(), v));
        }
        assert_eq!(w.active_id(), Some(BlobId(10)));
        assert_eq!(
            w.active_len(),
            FILE_HEADER_LEN
                + handles
                    .iter()
                    .map(|(h, _)| super::super::format::record_len(8, h.value_len))
                    .sum::<u64>()
        );
        w.sync().unwrap();
        let reader = Reader::new(Arc::new(fs.clone()), &dir(), 4);
        for (h, v) in &handles {
            assert_eq!(h.file_id, BlobId(10));
            assert_eq!(&reader.read(h).unwrap(), v);
        }
        w.rotate().unwrap();
        let sealed = w.take_sealed();
        assert_eq!(sealed.len(), 1);
        let meta = sealed[0];
        assert_eq!(meta.record_count, 20);
        assert_eq!(
            meta.value_bytes,
            handles
                .iter()
                .map(|(h, _)| u64::from(h.value_len))
                .sum::<u64>()
        );
        let path = dir().join(FileType::Blob.name(10));
        assert_eq!(fs.file_len(&path).unwrap(), meta.file_size);
        let s = scan_path(&fs, &path, true).unwrap();
        assert!(s.footer.is_some());
        assert_eq!(s.records.len(), 20);
        assert!(w.take_sealed().is_empty());
        w.rotate().unwrap(); // nothing active: no empty file
        assert!(w.take_sealed().is_empty());
    }

    #[test]
    fn rotation_at_the_size_limit() {
        let fs = new_fs();
        let max = 100_000;
        let mut w = writer(&fs, max);
        let mut handles = Vec::new();
        for i in 0..30u64 {
            let v = value(i, 15_000);
            handles.push((w.append(KeyspaceId(0), b"k", &v).unwrap(), v));
        }
        // A value larger than the limit gets a file of its own.
        let big = value(99, 250_000);
        let hb = w.append(KeyspaceId(0), b"big", &big).unwrap();
        let after = w.append(KeyspaceId(0), b"after", b"tiny").unwrap();
        assert_ne!(hb.file_id, after.file_id);
        w.rotate().unwrap();
        let sealed = w.take_sealed();
        let files: Vec<BlobId> = sealed.iter().map(|m| m.id).collect();
        assert_eq!(
            files,
            (10..10 + files.len() as u64)
                .map(BlobId)
                .collect::<Vec<_>>()
        );
        assert!(files.contains(&hb.file_id));
        assert_eq!(sealed.iter().map(|m| m.record_count).sum::<u64>(), 32);
        for m in &sealed {
            if m.id != hb.file_id {
                assert!(m.file_size <= max, "{m:?}");
            }
            let s = scan_path(&fs, &dir().join(m.id.file_name()), true).unwrap();
            assert_eq!(s.records.len() as u64, m.record_count);
            assert_eq!(s.footer.unwrap().value_bytes, m.value_bytes);
        }
        let reader = Reader::new(Arc::new(fs.clone()), &dir(), 2);
        for (h, v) in handles.iter().chain([(hb, big.clone())].iter()) {
            assert_eq!(&reader.read(h).unwrap(), v);
        }
    }

    #[test]
    fn refused_arguments_do_not_poison() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let long_key = vec![0u8; crate::key::MAX_KEY_LEN + 1];
        assert!(matches!(
            w.append(KeyspaceId(0), &long_key, b"v"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(!w.is_poisoned());
        w.append(KeyspaceId(0), b"k", b"v").unwrap();
    }

    /// A source that fails after `ok` bytes.
    struct Failing {
        ok: usize,
    }

    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.ok == 0 {
                return Err(io::Error::other("source broke"));
            }
            let n = buf.len().min(self.ok);
            buf[..n].fill(7);
            self.ok -= n;
            Ok(n)
        }
    }

    #[test]
    fn a_failing_source_abandons_the_file_but_not_the_writer() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let first = w.append(KeyspaceId(0), b"a", &value(1, 5000)).unwrap();
        let err = w
            .append_from(
                KeyspaceId(0),
                b"b",
                3_000_000,
                &mut Failing { ok: 1_500_000 },
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Io {
                    op: "read value",
                    ..
                }
            ),
            "{err}"
        );
        let next = w.append(KeyspaceId(0), b"c", b"after").unwrap();
        assert_ne!(
            next.file_id, first.file_id,
            "a new file after the partial record"
        );
        // A source that ends early before anything reached the file changes nothing: the
        // file goes on.
        let mut short: &[u8] = b"abc";
        let len = w.active_len();
        assert!(matches!(
            w.append_from(KeyspaceId(0), b"d", 10, &mut short),
            Err(Error::Io {
                op: "read value",
                ..
            })
        ));
        assert_eq!(w.active_len(), len);
        let again = w.append(KeyspaceId(0), b"e", b"more").unwrap();
        assert_eq!(again.file_id, next.file_id);
        assert!(!w.is_poisoned());
        w.rotate().unwrap();
        let sealed = w.take_sealed();
        assert_eq!(sealed.len(), 2);
        assert_eq!(sealed[0].record_count, 1);
        assert_eq!(sealed[1].record_count, 2);
        let reader = Reader::new(Arc::new(fs.clone()), &dir(), 2);
        assert_eq!(reader.read(&again).unwrap(), b"more");
        let s = scan_path(&fs, &dir().join(next.file_id.file_name()), true).unwrap();
        assert!(s.footer.is_some() && s.records.len() == 2);
        let path = dir().join(first.file_id.file_name());
        assert_eq!(fs.file_len(&path).unwrap(), sealed[0].file_size);
        // The abandoned file: no footer, the valid prefix ends at the partial record.
        let s = scan_path(&fs, &path, true).unwrap();
        assert!(s.footer.is_none());
        assert_eq!(s.records.len(), 1);
        assert!(s.torn_tail.is_some());
        // Its earlier record is still readable and survives a crash (it was synced).
        let reader = Reader::new(Arc::new(fs.crash()), &dir(), 2);
        assert_eq!(reader.read(&first).unwrap(), value(1, 5000));
    }

    fn poisoned_after(op: Op, kind: FaultKind) {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let h = w.append(KeyspaceId(0), b"k", b"synced").unwrap();
        w.sync().unwrap();
        fail_next(&fs, op, kind);
        let r = w
            .append(KeyspaceId(0), b"k2", b"lost?")
            .and_then(|_| w.sync());
        assert!(matches!(r, Err(Error::Io { .. })), "{op:?} {kind:?}");
        assert!(w.is_poisoned());
        assert!(matches!(
            w.append(KeyspaceId(0), b"x", b"y"),
            Err(Error::Poisoned)
        ));
        assert!(matches!(w.sync(), Err(Error::Poisoned)));
        assert!(matches!(w.rotate(), Err(Error::Poisoned)));
        let reader = Reader::new(Arc::new(fs.crash()), &dir(), 2);
        assert_eq!(reader.read(&h).unwrap(), b"synced");
    }

    #[test]
    fn in_memory_values_are_written_as_streamed_ones_are() {
        // The same records through `append` (vectored, straight from the value) and
        // `append_from` (streamed through the buffer) make byte-identical files, for
        // values around the chunk size and across the vectored-append group boundary.
        let chunk = CHUNK_LEN as usize;
        let lens = [
            0,
            1,
            chunk - 1,
            chunk,
            chunk + 1,
            GROUP_LEN,
            GROUP_LEN + 5,
            2 * GROUP_LEN + chunk,
        ];
        let (direct, streamed) = (new_fs(), new_fs());
        let (mut a, mut b) = (writer(&direct, u64::MAX), writer(&streamed, u64::MAX));
        for (i, len) in lens.into_iter().enumerate() {
            let v = value(i as u64, len);
            let key = format!("key{i}");
            let ha = a.append(KeyspaceId(1), key.as_bytes(), &v).unwrap();
            let hb = b
                .append_from(KeyspaceId(1), key.as_bytes(), len as u32, &mut v.as_slice())
                .unwrap();
            assert_eq!(ha, hb, "value of {len} bytes");
            assert_eq!(a.active_len(), b.active_len());
        }
        a.sync().unwrap();
        b.sync().unwrap();
        let path = dir().join(FileType::Blob.name(10));
        let bytes = crate::fs::read_all(&direct, &path).unwrap();
        assert_eq!(bytes.len() as u64, a.active_len());
        assert_eq!(bytes, crate::fs::read_all(&streamed, &path).unwrap());
        let reader = Reader::new(Arc::new(direct.clone()), &dir(), 2);
        let s = scan_path(&direct, &path, true).unwrap();
        assert_eq!(s.records.len(), lens.len());
        for (i, rec) in s.records.iter().enumerate() {
            assert_eq!(
                reader.read(&rec.handle(BlobId(10))).unwrap(),
                value(i as u64, lens[i])
            );
        }
    }

    #[test]
    fn a_failed_write_in_the_middle_of_a_large_value_poisons() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let h = w.append(KeyspaceId(0), b"k", b"synced").unwrap();
        w.sync().unwrap();
        // The value takes three vectored appends; the second fails.
        fs.inject(Fault {
            op: Op::Write,
            nth: fs.op_count(Op::Write) + 2,
            kind: FaultKind::Eio,
            forever: false,
        });
        let big = value(3, 2 * GROUP_LEN + 1);
        assert!(matches!(
            w.append(KeyspaceId(0), b"big", &big),
            Err(Error::Io { .. })
        ));
        assert!(w.is_poisoned());
        assert!(matches!(w.sync(), Err(Error::Poisoned)));
        let reader = Reader::new(Arc::new(fs.crash()), &dir(), 2);
        assert_eq!(reader.read(&h).unwrap(), b"synced");
    }

    #[test]
    fn failed_write_or_fsync_poisons() {
        poisoned_after(Op::Write, FaultKind::Eio);
        poisoned_after(Op::Write, FaultKind::Enospc);
        poisoned_after(Op::Sync, FaultKind::Eio);
        poisoned_after(Op::Sync, FaultKind::FsyncLost);
    }

    #[test]
    fn gathered_records_reach_the_file_when_handed_over() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let path = dir().join(FileType::Blob.name(10));
        let mut handles = Vec::new();
        for i in 0..10u64 {
            let v = value(i, 4096);
            handles.push((w.append_gathered(KeyspaceId(0), b"k", &v).unwrap(), v));
        }
        // Gathered, not written: the file holds its header only, the writer counts them.
        assert_eq!(fs.file_len(&path).unwrap(), FILE_HEADER_LEN);
        assert!(w.active_len() > FILE_HEADER_LEN + 10 * 4096);
        w.hand_over().unwrap();
        assert_eq!(fs.file_len(&path).unwrap(), w.active_len());
        // A direct append after gathered ones lands after them, where its handle says.
        let v = value(99, 100);
        let gathered = w.append_gathered(KeyspaceId(0), b"g", &v).unwrap();
        let direct = w.append(KeyspaceId(0), b"d", b"direct").unwrap();
        assert!(direct.offset > gathered.offset);
        handles.push((gathered, v));
        handles.push((direct, b"direct".to_vec()));
        let reader = Reader::new(Arc::new(fs.clone()), &dir(), 2);
        for (h, v) in &handles {
            assert_eq!(&reader.read(h).unwrap(), v);
        }
    }

    #[test]
    fn gathered_records_are_bounded_in_memory() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let path = dir().join(FileType::Blob.name(10));
        for i in 0..600u64 {
            w.append_gathered(KeyspaceId(0), b"k", &value(i, 4096))
                .unwrap();
            let held = w.active_len() - fs.file_len(&path).unwrap();
            assert!(held < WRITE_BUF_LEN as u64, "{held} bytes held");
        }
        assert!(fs.file_len(&path).unwrap() > WRITE_BUF_LEN as u64);
        // A value of the buffer's size or more is written at once.
        w.append_gathered(KeyspaceId(0), b"big", &value(1, WRITE_BUF_LEN))
            .unwrap();
        assert_eq!(fs.file_len(&path).unwrap(), w.active_len());
    }

    #[test]
    fn rotation_hands_gathered_records_to_the_sealed_file() {
        let fs = new_fs();
        let mut w = writer(&fs, 50_000);
        let mut handles = Vec::new();
        for i in 0..30u64 {
            let v = value(i, 7_000);
            handles.push((w.append_gathered(KeyspaceId(0), b"k", &v).unwrap(), v));
        }
        w.rotate().unwrap();
        let sealed = w.take_sealed();
        assert!(sealed.len() > 3, "{sealed:?}");
        assert_eq!(sealed.iter().map(|m| m.record_count).sum::<u64>(), 30);
        for m in &sealed {
            let path = dir().join(m.id.file_name());
            assert_eq!(fs.file_len(&path).unwrap(), m.file_size);
            assert!(scan_path(&fs, &path, true).unwrap().footer.is_some());
        }
        let reader = Reader::new(Arc::new(fs.clone()), &dir(), 2);
        for (h, v) in &handles {
            assert_eq!(&reader.read(h).unwrap(), v);
        }
    }

    #[test]
    fn a_failed_hand_over_poisons() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        let h = w.append(KeyspaceId(0), b"k", b"synced").unwrap();
        w.sync().unwrap();
        w.append_gathered(KeyspaceId(0), b"k2", b"gathered")
            .unwrap();
        fail_next(&fs, Op::Write, FaultKind::Eio);
        assert!(matches!(w.hand_over(), Err(Error::Io { .. })));
        assert!(w.is_poisoned());
        assert!(matches!(
            w.append_gathered(KeyspaceId(0), b"x", b"y"),
            Err(Error::Poisoned)
        ));
        assert!(matches!(w.sync(), Err(Error::Poisoned)));
        let reader = Reader::new(Arc::new(fs.crash()), &dir(), 2);
        assert_eq!(reader.read(&h).unwrap(), b"synced");
    }

    #[test]
    fn failed_create_poisons() {
        let fs = new_fs();
        let mut w = writer(&fs, DEFAULT_MAX_FILE_LEN);
        fail_next(&fs, Op::SyncDir, FaultKind::Eio);
        assert!(matches!(
            w.append(KeyspaceId(0), b"k", b"v"),
            Err(Error::Io { .. })
        ));
        assert!(matches!(
            w.append(KeyspaceId(0), b"k", b"v"),
            Err(Error::Poisoned)
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod proptests {
    use super::super::scan::scan_path;
    use super::super::Reader;
    use super::tests::{dir, ids, new_fs};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Random records (empty to multi-chunk values, keys up to 300 bytes, a small file
        /// limit so files rotate), appended directly, gathered, or gathered and handed
        /// over, read back by handle and scan back, file by file, in order.
        #[test]
        fn random_records_round_trip(
            records in prop::collection::vec(
                (any::<u32>(), prop::collection::vec(any::<u8>(), 0..300), 0usize..150_000, any::<u8>(), 0u8..3),
                1..12,
            ),
            max_file_len in 50_000u64..400_000,
        ) {
            let fs = new_fs();
            let mut w = Writer::new(Arc::new(fs.clone()), &dir(), WriterOptions { max_file_len }, ids(1));
            let mut written = Vec::new();
            for (ks, key, len, seed, mode) in &records {
                let value: Vec<u8> = (0..*len).map(|i| (i as u8).wrapping_mul(*seed)).collect();
                let h = if *mode == 0 {
                    w.append(KeyspaceId(*ks), key, &value).unwrap()
                } else {
                    w.append_gathered(KeyspaceId(*ks), key, &value).unwrap()
                };
                if *mode == 2 {
                    w.hand_over().unwrap();
                }
                written.push((h, *ks, key.clone(), value));
            }
            w.rotate().unwrap();
            let reader = Reader::new(Arc::new(fs.clone()), &dir(), 2);
            for (h, _, _, v) in &written {
                prop_assert_eq!(&reader.read(h).unwrap(), v);
            }
            let mut scanned = Vec::new();
            for meta in w.take_sealed() {
                let s = scan_path(&fs, &dir().join(meta.id.file_name()), true).unwrap();
                prop_assert!(s.footer.is_some());
                prop_assert_eq!(s.records.len() as u64, meta.record_count);
                prop_assert_eq!(s.value_bytes, meta.value_bytes);
                scanned.extend(s.records.into_iter().map(|r| (r.handle(meta.id), r.keyspace, r.key)));
            }
            let expected: Vec<_> = written.iter().map(|(h, ks, k, _)| (*h, *ks, k.clone())).collect();
            prop_assert_eq!(scanned, expected);
        }
    }
}
