//! [`Reader`]: reads separated values by [`ValueHandle`] (FORMAT.md §6), with every byte
//! verified before it is returned, and keeps a bounded cache of open blob files.
//!
//! A read locates the record at the handle's offset, checks its header checksum (which
//! binds it to the file id, the offset, the keyspace and the key), checks that the stored
//! checksum and value length are the ones the handle recorded, then checks each chunk's
//! checksum as it reads it. So a read returns exactly the bytes written for that handle or
//! an error, whatever the file holds.
//!
//! [`Reader::validate_handle`] is the recovery check: it answers `false` instead of an
//! error when the file is missing or the record is absent, torn or does not check out,
//! which for a WAL record being replayed means the log ends before it (module `vlog`,
//! invariant 3; FORMAT.md §7).
//!
//! Open files: at most `max_open_files` stay open, the least recently used is closed
//! first, in O(1) (`crate::cache::OpenFiles`, which the table cache uses too); a read
//! holds its file's `Arc`, so closing the cache's handle never cuts a read short. The `Db`
//! calls [`Reader::forget`] when it deletes a blob file. Each open file
//! keeps the length last learned from the file system; blob files only grow, so a record
//! that ends within it is within the file, and only a record that seems to end past it
//! makes the reader ask the file system again (the active file grows while it is read).
//!
//! Thread-safety: `Send + Sync`; reads take the cache lock only to find the file.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::format::RecordRef;
use super::scan::{read_chunk, read_record};
use super::value_reader::ValueReader;
use super::ValueHandle;
use crate::cache::OpenFiles;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::BlobId;
use crate::fs::{FileSystem, ReadableFile};

/// Default number of blob files kept open.
#[cfg(test)]
pub(crate) const DEFAULT_OPEN_FILES: usize = 64;

/// An open blob file and its length when last asked.
struct Open {
    file: Arc<dyn ReadableFile>,
    len: u64,
}

/// Reads values from the blob files of one directory; see the module documentation.
pub(crate) struct Reader {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    cache: Mutex<OpenFiles<BlobId, Open>>,
    /// Records located by handle (reads, streams, validations) since creation: how tests
    /// prove that heads and key scans never touch the value log.
    reads: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("dir", &self.dir)
            .field("open_files", &self.open_files())
            .finish()
    }
}

impl Reader {
    /// A reader of the blob files in `dir`, keeping at most `max_open_files` (at least 1)
    /// open.
    pub(crate) fn new(fs: Arc<dyn FileSystem>, dir: &Path, max_open_files: usize) -> Reader {
        Reader {
            fs,
            dir: dir.to_path_buf(),
            cache: Mutex::new(OpenFiles::new(max_open_files)),
            reads: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The path of blob file `id`.
    pub(crate) fn path(&self, id: BlobId) -> PathBuf {
        self.dir.join(id.file_name())
    }

    /// Blob file `id`, opened if it is not in the cache, and its known length.
    fn file(&self, id: BlobId) -> Result<(Arc<dyn ReadableFile>, u64)> {
        if let Some(open) = self.cache.lock().get(&id) {
            return Ok((Arc::clone(&open.file), open.len));
        }
        // Open outside the lock; two racing opens of one file are harmless.
        let file: Arc<dyn ReadableFile> = Arc::from(self.fs.open_read(&self.path(id))?);
        let len = file.len()?;
        let closed = self.cache.lock().insert(
            id,
            Open {
                file: Arc::clone(&file),
                len,
            },
        );
        // The least recently used file, closed outside the lock unless a read holds it.
        drop(closed);
        Ok((file, len))
    }

    /// Opens blob file `id` now and keeps it open (with a capacity that never evicts, for
    /// as long as the reader lives): a read-only store holds every file its view needs,
    /// so a writer deleting one later does not take it away.
    ///
    /// # Errors
    /// `Error::Io` if the file cannot be opened.
    pub(crate) fn hold(&self, id: BlobId) -> Result<()> {
        self.file(id).map(|_| ())
    }

    /// Records that blob file `id` is now `len` bytes long (it only grows).
    fn note_len(&self, id: BlobId, len: u64) {
        if let Some(open) = self.cache.lock().peek(&id) {
            open.len = open.len.max(len);
        }
    }

    /// Reopens blob file `id` if it is open, so its length is read afresh: a file another
    /// process appends to grows (a follower reading the writer's active blob file). The
    /// old handle stays valid for reads already under way.
    ///
    /// # Errors
    /// `Error::Io` if the file cannot be opened or its length read.
    pub(crate) fn refresh_len(&self, id: BlobId) -> Result<()> {
        if !self.cache.lock().contains(&id) {
            return Ok(());
        }
        let file: Arc<dyn ReadableFile> = Arc::from(self.fs.open_read(&self.path(id))?);
        let len = file.len()?;
        if let Some(open) = self.cache.lock().peek(&id) {
            open.file = file;
            open.len = open.len.max(len);
        }
        Ok(())
    }

    /// Closes every open blob file whose id `keep` refuses.
    pub(crate) fn retain(&self, keep: impl Fn(BlobId) -> bool) {
        let closed = self.cache.lock().retain(keep);
        drop(closed);
    }

    /// Closes blob file `id` if it is open (before it is deleted, or after a GC).
    pub(crate) fn forget(&self, id: BlobId) {
        let closed = self.cache.lock().remove(&id);
        drop(closed);
    }

    /// Records located by handle so far (see `reads`).
    #[cfg(test)]
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Number of blob files currently open.
    pub(crate) fn open_files(&self) -> usize {
        self.cache.lock().len()
    }

    /// The file and the checked record of `handle`, or why the record is not there.
    fn locate(
        &self,
        handle: &ValueHandle,
    ) -> Result<(
        Arc<dyn ReadableFile>,
        std::result::Result<RecordRef, Reason>,
    )> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (file, known_len) = self.file(handle.file_id)?;
        let mut found = read_record(file.as_ref(), handle.file_id.0, handle.offset, known_len)?;
        if matches!(found, Err(Reason::Truncated)) {
            // Past the length last seen: the file may have grown since.
            let file_len = file.len()?;
            if file_len > known_len {
                self.note_len(handle.file_id, file_len);
                found = read_record(file.as_ref(), handle.file_id.0, handle.offset, file_len)?;
            }
        }
        let checked = found.and_then(|(r, _key)| {
            if r.header_crc == handle.check && r.value_len == handle.value_len {
                Ok(r)
            } else {
                Err(Reason::BadEntry(
                    "blob record does not match its value handle",
                ))
            }
        });
        Ok((file, checked))
    }

    fn corrupt(&self, handle: &ValueHandle, offset: u64, reason: Reason) -> Error {
        Error::corruption(FileKind::Blob, &self.path(handle.file_id), offset, reason)
    }

    /// An error of [`Reader::locate`] for a value the store references: its blob file must
    /// exist, so a missing one is damage to the store (a deleted file), not an I/O failure.
    fn referenced(&self, handle: &ValueHandle, e: Error) -> Error {
        match e {
            Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => self.corrupt(
                handle,
                0,
                Reason::BadEntry("the blob file holding a referenced value is missing"),
            ),
            other => other,
        }
    }

    /// The value `handle` points at, verified.
    ///
    /// # Errors
    /// `Error::Io` if a read fails; `Error::Corruption` (`FileKind::Blob`, at the record or
    /// chunk offset) if the file is missing, or the record is short, does not check out,
    /// or is not the one the handle was made for.
    pub(crate) fn read(&self, handle: &ValueHandle) -> Result<Vec<u8>> {
        let mut value = Vec::new();
        self.read_into(handle, &mut value)?;
        Ok(value)
    }

    /// As [`Reader::read`], into `value` (cleared first, its allocation reused).
    ///
    /// # Errors
    /// As [`Reader::read`]; `value` then holds no complete value.
    pub(crate) fn read_into(&self, handle: &ValueHandle, value: &mut Vec<u8>) -> Result<()> {
        value.clear();
        let (file, record) = self
            .locate(handle)
            .map_err(|e| self.referenced(handle, e))?;
        let r = record.map_err(|reason| self.corrupt(handle, handle.offset, reason))?;
        // The record lies within the file (checked by read_record), so this allocation is
        // backed by bytes that exist.
        value.reserve(r.value_len as usize);
        let mut chunk = Vec::new();
        for index in 0..r.chunk_count() {
            read_chunk(file.as_ref(), &r, index, &mut chunk)?
                .map_err(|(at, reason)| self.corrupt(handle, at, reason))?;
            value.extend_from_slice(chunk.get(..r.chunk_len(index) as usize).unwrap_or_default());
        }
        Ok(())
    }

    /// A streaming reader of the value `handle` points at: the header is checked now, each
    /// 64 KiB chunk as it is read, so memory stays at one chunk whatever the value's size.
    ///
    /// # Errors
    /// As [`Reader::read`] for the record header; chunk damage is reported by the
    /// [`ValueReader`]'s reads.
    pub(crate) fn open_value(&self, handle: &ValueHandle) -> Result<ValueReader> {
        let (file, record) = self
            .locate(handle)
            .map_err(|e| self.referenced(handle, e))?;
        let r = record.map_err(|reason| self.corrupt(handle, handle.offset, reason))?;
        Ok(ValueReader::new(file, r))
    }

    /// True if the whole record of `handle` is present and checks out; false if the file
    /// is missing or the record is short, torn, damaged or another record. Used when
    /// replaying WAL records that reference blobs (FORMAT.md §7): false means the log ends
    /// before that record.
    ///
    /// # Errors
    /// `Error::Io` for a failure other than the file being absent.
    pub(crate) fn validate_handle(&self, handle: &ValueHandle) -> Result<bool> {
        let located = match self.locate(handle) {
            Ok(l) => l,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(false)
            }
            Err(e) => return Err(e),
        };
        let (file, Ok(r)) = located else {
            return Ok(false);
        };
        let mut chunk = Vec::new();
        for index in 0..r.chunk_count() {
            if read_chunk(file.as_ref(), &r, index, &mut chunk)?.is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::format::{encode_file_header, encode_record, CHUNK_LEN};
    use super::*;
    use crate::fs::MemFs;
    use std::io::{Read, Seek, SeekFrom};

    fn setup(values: &[(u64, Vec<u8>)]) -> (MemFs, Vec<ValueHandle>) {
        let fs = MemFs::new();
        fs.create_dir(Path::new("/db")).unwrap();
        let mut handles = Vec::new();
        for (id, v) in values {
            let mut bytes = encode_file_header(*id);
            let at = bytes.len() as u64;
            let r = encode_record(&mut bytes, *id, at, 0, b"key", v);
            let p = Path::new("/db").join(BlobId(*id).file_name());
            fs.create(&p).unwrap().append(&bytes).unwrap();
            handles.push(ValueHandle {
                file_id: BlobId(*id),
                offset: at,
                value_len: r.value_len,
                check: r.header_crc,
            });
        }
        (fs, handles)
    }

    fn value(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn reads_stream_and_seek() {
        let v = value(3 * CHUNK_LEN as usize + 123);
        let (fs, h) = setup(&[(1, v.clone()), (2, Vec::new())]);
        let r = Reader::new(Arc::new(fs), Path::new("/db"), DEFAULT_OPEN_FILES);
        assert_eq!(r.read(&h[0]).unwrap(), v);
        assert_eq!(r.read(&h[1]).unwrap(), Vec::<u8>::new());
        assert!(r.validate_handle(&h[0]).unwrap());
        let mut s = r.open_value(&h[0]).unwrap();
        assert_eq!(s.len(), v.len() as u64);
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        assert_eq!(got, v);
        for at in [
            0u64,
            5,
            CHUNK_LEN - 1,
            CHUNK_LEN,
            2 * CHUNK_LEN + 7,
            v.len() as u64 - 1,
        ] {
            s.seek(SeekFrom::Start(at)).unwrap();
            let mut buf = [0u8; 100];
            let n = s.read(&mut buf).unwrap();
            assert!(n >= 1);
            assert_eq!(&buf[..n], &v[at as usize..at as usize + n], "at {at}");
        }
        assert_eq!(s.seek(SeekFrom::End(-3)).unwrap(), v.len() as u64 - 3);
        assert_eq!(s.position(), v.len() as u64 - 3);
        assert_eq!(s.seek(SeekFrom::Current(1)).unwrap(), v.len() as u64 - 2);
        assert!(s.seek(SeekFrom::Current(-(v.len() as i64))).is_err());
        s.seek(SeekFrom::Start(v.len() as u64 + 10)).unwrap();
        assert_eq!(s.read(&mut [0u8; 4]).unwrap(), 0);
    }

    #[test]
    fn wrong_or_damaged_handles_are_errors_and_not_valid() {
        let v = value(70_000);
        let (fs, h) = setup(&[(1, v.clone())]);
        let r = Reader::new(Arc::new(fs.clone()), Path::new("/db"), 4);
        let bad = [
            ValueHandle {
                check: h[0].check ^ 1,
                ..h[0]
            },
            ValueHandle {
                value_len: 69_999,
                ..h[0]
            },
            ValueHandle { offset: 21, ..h[0] },
            ValueHandle {
                offset: u64::MAX,
                ..h[0]
            },
        ];
        for b in &bad {
            assert!(r.read(b).unwrap_err().is_corruption(), "{b:?}");
            assert!(!r.validate_handle(b).unwrap(), "{b:?}");
        }
        let missing = ValueHandle {
            file_id: BlobId(9),
            ..h[0]
        };
        // The store references every value it reads: a missing file is damage.
        assert!(r.read(&missing).unwrap_err().is_corruption());
        assert!(r.open_value(&missing).unwrap_err().is_corruption());
        assert!(!r.validate_handle(&missing).unwrap());
        // Damage in the second chunk: the read names the chunk's offset; a stream yields
        // the whole first chunk, then fails.
        let p = r.path(BlobId(1));
        let second_chunk = h[0].offset + 16 + 3 + CHUNK_LEN + 4;
        fs.corrupt(&p, second_chunk as usize + 10, 0x20).unwrap();
        let err = r.read(&h[0]).unwrap_err();
        assert_eq!(err.as_corruption().unwrap().offset, second_chunk);
        assert!(!r.validate_handle(&h[0]).unwrap());
        let mut s = r.open_value(&h[0]).unwrap();
        let mut buf = vec![0u8; CHUNK_LEN as usize];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(buf, v[..CHUNK_LEN as usize]);
        let e = s.read(&mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn records_appended_after_the_file_was_opened_are_read() {
        let first = value(5_000);
        let (fs, h) = setup(&[(1, first.clone())]);
        let r = Reader::new(Arc::new(fs.clone()), Path::new("/db"), DEFAULT_OPEN_FILES);
        assert_eq!(r.read(&h[0]).unwrap(), first); // opens the file, learns its length
        let path = Path::new("/db").join(BlobId(1).file_name());
        let at = fs.file_len(&path).unwrap();
        let second = value(9_000);
        let mut bytes = Vec::new();
        let rec = encode_record(&mut bytes, 1, at, 0, b"key2", &second);
        let later = ValueHandle {
            file_id: BlobId(1),
            offset: at,
            value_len: rec.value_len,
            check: rec.header_crc,
        };
        // Part of the record reaches the file first: short, whatever length is known.
        let mut file = fs.open_append(&path).unwrap();
        file.append(&bytes[..40]).unwrap();
        assert!(matches!(r.read(&later), Err(Error::Corruption(_))));
        assert!(!r.validate_handle(&later).unwrap());
        file.append(&bytes[40..]).unwrap();
        assert_eq!(r.read(&later).unwrap(), second);
        assert!(r.validate_handle(&later).unwrap());
        assert_eq!(r.read(&h[0]).unwrap(), first);
    }

    #[test]
    fn open_file_cache_is_bounded() {
        let values: Vec<(u64, Vec<u8>)> = (1..=10).map(|id| (id, value(id as usize))).collect();
        let (fs, h) = setup(&values);
        let r = Reader::new(Arc::new(fs), Path::new("/db"), 3);
        for round in 0..3 {
            for (handle, (_, v)) in h.iter().zip(&values) {
                assert_eq!(&r.read(handle).unwrap(), v, "round {round}");
                assert!(r.open_files() <= 3);
            }
        }
        assert_eq!(r.open_files(), 3);
        r.forget(BlobId(10));
        assert_eq!(r.open_files(), 2);
    }

    /// The least recently read file is the one closed, and a value stream whose file the
    /// cache closed keeps reading from the handle it holds.
    #[test]
    fn open_file_cache_closes_the_least_recently_used_and_spares_readers() {
        let values: Vec<(u64, Vec<u8>)> = (1..=6)
            .map(|id| (id, value(2 * CHUNK_LEN as usize + id as usize)))
            .collect();
        let (fs, h) = setup(&values);
        let r = Reader::new(Arc::new(fs), Path::new("/db"), 3);
        let mut stream = r.open_value(&h[0]).unwrap();
        for i in [1, 2, 0, 3] {
            assert_eq!(r.read(&h[i]).unwrap(), values[i].1);
        }
        // Files 1, 3 and 4 are open (2 was the least recently used when 4 was opened):
        // forgetting 2 closes nothing, forgetting 1 closes one.
        assert_eq!(r.open_files(), 3);
        r.forget(BlobId(2));
        assert_eq!(r.open_files(), 3);
        r.forget(BlobId(1));
        assert_eq!(r.open_files(), 2);
        for i in 4..6 {
            assert_eq!(r.read(&h[i]).unwrap(), values[i].1);
            assert!(r.open_files() <= 3);
        }
        // File 1 is closed in the cache; the stream still holds it.
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        assert_eq!(got, values[0].1);
    }
}
