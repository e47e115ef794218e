//! [`LossyFs`]: real files whose unsynced appends live only in process memory, so that
//! killing the process loses exactly what a power loss would (reliability plan, layer T3).
//!
//! Model: every file keeps its *synced length* (the bytes on the real file) and a *tail*
//! of bytes appended since its last [`WritableFile::sync_data`] or `sync_all`. A sync
//! writes the tail to the real file and fsyncs it. Reads, lengths and
//! [`FileSystem::file_len`] see the synced bytes followed by the tail, so while the
//! process runs the engine behaves exactly as on [`StdFs`]; after `kill -9` the real file
//! holds only what was synced (or was being synced), which is what the next process
//! opens.
//!
//! What it does not model: directory operations (create, rename, remove, `sync_dir`) go
//! straight to the real file system and are durable at once, so losing unsynced directory
//! entries is not simulated here; [`MemFs`](super::MemFs) crash images cover that. Nor
//! does it tear writes or reorder them: the tail is lost whole.
//!
//! Identity: tails are keyed by the real file's (device, inode), so a rename carries the
//! tail with the file and every handle to a file shares one tail. `create` starts a fresh
//! tail (the inode may reuse a removed file's number), and `remove` or being replaced by
//! a rename drops it.
//!
//! Thread-safety: a `LossyFs` is a cheap `Arc` handle; the map of tails is behind one
//! mutex and each tail behind its own, held across a read so a concurrent sync cannot move
//! bytes from the tail to the file between the two halves of a read.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, FileSystem, ReadableFile, StdFs, WritableFile};
use crate::error::{Error, Result};

/// (device, inode) of a real file.
type FileKey = (u64, u64);

/// The in-memory state of one file.
#[derive(Debug, Default)]
struct Tail {
    /// Bytes of the real file (written by a sync, or there before the file was first seen).
    synced_len: u64,
    /// Bytes appended since the last sync, following `synced_len`.
    bytes: Vec<u8>,
}

type SharedTail = Arc<Mutex<Tail>>;

/// The real file system with unsynced appends held in memory; see the module docs.
#[derive(Debug, Clone, Default)]
pub(crate) struct LossyFs {
    tails: Arc<Mutex<HashMap<FileKey, SharedTail>>>,
}

#[derive(Debug)]
struct LossyWritable {
    file: File,
    path: PathBuf,
    tail: SharedTail,
}

#[derive(Debug)]
struct LossyReadable {
    file: File,
    path: PathBuf,
    tail: SharedTail,
}

fn key_of(meta: &fs::Metadata) -> FileKey {
    (meta.dev(), meta.ino())
}

fn stat_file(file: &File, path: &Path) -> Result<fs::Metadata> {
    file.metadata().map_err(|e| Error::io(path, "stat", e))
}

impl LossyFs {
    /// A file system with no tails yet.
    pub(crate) fn new() -> LossyFs {
        LossyFs::default()
    }

    /// The tail of an open file, made from the real file's length on first sight.
    fn tail_of(&self, file: &File, path: &Path) -> Result<SharedTail> {
        let meta = stat_file(file, path)?;
        let mut tails = self.tails.lock();
        let tail = tails.entry(key_of(&meta)).or_insert_with(|| {
            Arc::new(Mutex::new(Tail {
                synced_len: meta.len(),
                bytes: Vec::new(),
            }))
        });
        Ok(Arc::clone(tail))
    }

    /// Forgets the tail of the file at `path`, if the path names one.
    fn forget(&self, path: &Path) {
        if let Ok(meta) = fs::metadata(path) {
            self.tails.lock().remove(&key_of(&meta));
        }
    }

    /// Total bytes held in memory and not yet written to real files.
    #[cfg(test)]
    fn unsynced_len(&self) -> usize {
        self.tails
            .lock()
            .values()
            .map(|t| t.lock().bytes.len())
            .sum()
    }
}

impl FileSystem for LossyFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(path, "create", e))?;
        let meta = stat_file(&file, path)?;
        let tail = Arc::new(Mutex::new(Tail::default()));
        self.tails.lock().insert(key_of(&meta), Arc::clone(&tail));
        Ok(Box::new(LossyWritable {
            file,
            path: path.to_path_buf(),
            tail,
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, "open", e))?;
        let tail = self.tail_of(&file, path)?;
        Ok(Box::new(LossyWritable {
            file,
            path: path.to_path_buf(),
            tail,
        }))
    }

    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let tail = self.tail_of(&file, path)?;
        Ok(Box::new(LossyReadable {
            file,
            path: path.to_path_buf(),
            tail,
        }))
    }

    fn file_len(&self, path: &Path) -> Result<u64> {
        let meta = fs::metadata(path).map_err(|e| Error::io(path, "stat", e))?;
        let tail = self.tails.lock().get(&key_of(&meta)).map(Arc::clone);
        Ok(match tail {
            Some(tail) => {
                let t = tail.lock();
                t.synced_len + t.bytes.len() as u64
            }
            None => meta.len(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        StdFs.exists(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        // The file at `to`, if any, is replaced: its tail goes with it.
        self.forget(to);
        StdFs.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.forget(path);
        StdFs.remove(path)
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        StdFs.list_dir(dir)
    }

    fn create_dir(&self, dir: &Path) -> Result<()> {
        StdFs.create_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        StdFs.sync_dir(dir)
    }

    // `hard_link` keeps the default (unsupported): a second name would not share the
    // in-memory tail, so callers copy through `open_read` instead.

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        StdFs.remove_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        StdFs.lock(path)
    }
}

impl LossyWritable {
    /// Writes the tail to the real file. On a failed write the tail keeps what did not
    /// reach the file, so reads stay consistent with the real file plus the tail.
    fn write_tail(&mut self) -> Result<()> {
        let mut tail = self.tail.lock();
        if tail.bytes.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all(&tail.bytes);
        if let Err(e) = result {
            if let Ok(meta) = self.file.metadata() {
                let written = meta.len().saturating_sub(tail.synced_len);
                let written = usize::try_from(written)
                    .unwrap_or(usize::MAX)
                    .min(tail.bytes.len());
                tail.bytes.drain(..written);
                tail.synced_len = meta.len();
            }
            return Err(Error::io(&self.path, "write", e));
        }
        tail.synced_len += tail.bytes.len() as u64;
        tail.bytes.clear();
        Ok(())
    }
}

impl WritableFile for LossyWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.tail.lock().bytes.extend_from_slice(data);
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        self.write_tail()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, "fsync", e))
    }

    fn sync_all(&mut self) -> Result<()> {
        self.write_tail()?;
        self.file
            .sync_all()
            .map_err(|e| Error::io(&self.path, "fsync", e))
    }

    fn len(&self) -> u64 {
        let t = self.tail.lock();
        t.synced_len + t.bytes.len() as u64
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl ReadableFile for LossyReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let tail = self.tail.lock();
        let mut done = 0usize;
        // The synced part, from the real file.
        while offset + (done as u64) < tail.synced_len {
            let pos = offset + done as u64;
            let room = usize::try_from(tail.synced_len - pos).unwrap_or(usize::MAX);
            let Some(rest) = buf.get_mut(done..) else {
                break;
            };
            let want = rest.len().min(room);
            let Some(dst) = rest.get_mut(..want) else {
                break;
            };
            if dst.is_empty() {
                break;
            }
            match self.file.read_at(dst, pos) {
                Ok(0) => break, // shorter than recorded: the file was changed behind us
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, "read", e)),
            }
        }
        // The unsynced part, from memory.
        let pos = offset + done as u64;
        if pos >= tail.synced_len {
            let start = usize::try_from(pos - tail.synced_len).unwrap_or(usize::MAX);
            if let (Some(src), Some(dst)) = (tail.bytes.get(start..), buf.get_mut(done..)) {
                let n = src.len().min(dst.len());
                if let (Some(s), Some(d)) = (src.get(..n), dst.get_mut(..n)) {
                    d.copy_from_slice(s);
                    done += n;
                }
            }
        }
        Ok(done)
    }

    fn len(&self) -> Result<u64> {
        let t = self.tail.lock();
        Ok(t.synced_len + t.bytes.len() as u64)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::read_all;
    use super::*;

    #[test]
    fn unsynced_bytes_are_readable_but_never_reach_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = LossyFs::new();
        let p = tmp.path().join("f");
        let mut w = fs.create(&p).unwrap();
        w.append(b"durable").unwrap();
        w.sync_data().unwrap();
        w.append(b" lost").unwrap();
        assert_eq!(w.len(), 12);
        assert_eq!(fs.file_len(&p).unwrap(), 12);
        assert_eq!(read_all(&fs, &p).unwrap(), b"durable lost");
        // What another process (or the machine after a power loss) sees:
        assert_eq!(std::fs::read(&p).unwrap(), b"durable");
        assert_eq!(fs.unsynced_len(), 5);
        // Dropping every handle loses nothing in memory while the process lives...
        drop(w);
        assert_eq!(read_all(&fs, &p).unwrap(), b"durable lost");
        // ...and a fresh LossyFs (a new process) sees only the synced bytes.
        assert_eq!(read_all(&LossyFs::new(), &p).unwrap(), b"durable");
    }

    #[test]
    fn a_read_spanning_file_and_tail_is_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = LossyFs::new();
        let p = tmp.path().join("f");
        let mut w = fs.create(&p).unwrap();
        w.append(b"0123456789").unwrap();
        w.sync_all().unwrap();
        w.append(b"abcdef").unwrap();
        let r = fs.open_read(&p).unwrap();
        assert_eq!(r.len().unwrap(), 16);
        let mut buf = [0u8; 8];
        assert_eq!(r.read_at(6, &mut buf).unwrap(), 8);
        assert_eq!(&buf, b"6789abcd");
        assert_eq!(r.read_at(12, &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"cdef");
        assert_eq!(r.read_at(16, &mut buf).unwrap(), 0);
        assert_eq!(r.read_at(99, &mut buf).unwrap(), 0);
        // A reader opened before later appends sees them too (one tail per file).
        w.append(b"gh").unwrap();
        assert_eq!(r.len().unwrap(), 18);
        assert_eq!(r.read_at(14, &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"efgh");
        w.sync_data().unwrap();
        assert_eq!(r.read_at(14, &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"efgh");
        assert_eq!(std::fs::read(&p).unwrap(), b"0123456789abcdefgh");
    }

    #[test]
    fn reopening_for_append_continues_after_the_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = LossyFs::new();
        let p = tmp.path().join("f");
        let mut w = fs.create(&p).unwrap();
        w.append(b"one ").unwrap();
        drop(w);
        let mut w = fs.open_append(&p).unwrap();
        assert_eq!(w.len(), 4);
        w.append(b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"");
        w.sync_data().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one two");
        assert_eq!(fs.unsynced_len(), 0);
    }

    #[test]
    fn existing_files_start_with_their_real_length() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, b"left by an earlier process").unwrap();
        let fs = LossyFs::new();
        assert_eq!(fs.file_len(&p).unwrap(), 26);
        let mut w = fs.open_append(&p).unwrap();
        w.append(b"!").unwrap();
        assert_eq!(read_all(&fs, &p).unwrap(), b"left by an earlier process!");
        w.sync_data().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"left by an earlier process!");
    }

    #[test]
    fn rename_carries_the_tail_and_remove_drops_it() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = LossyFs::new();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        let mut w = fs.create(&a).unwrap();
        w.append(b"moving").unwrap();
        drop(w);
        let mut old = fs.create(&b).unwrap();
        old.append(b"replaced").unwrap();
        drop(old);
        fs.rename(&a, &b).unwrap();
        assert_eq!(read_all(&fs, &b).unwrap(), b"moving");
        assert_eq!(fs.unsynced_len(), 6, "the replaced file's tail is gone");
        fs.remove(&b).unwrap();
        assert_eq!(fs.unsynced_len(), 0);
        // A new file (which may get the removed inode's number) starts empty.
        let w = fs.create(&b).unwrap();
        assert_eq!(w.len(), 0);
        assert_eq!(read_all(&fs, &b).unwrap(), b"");
    }

    #[test]
    fn directory_operations_are_real_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = LossyFs::new();
        let dir = tmp.path().join("db");
        fs.create_dir(&dir).unwrap();
        fs.create(&dir.join("x")).unwrap();
        assert!(dir.join("x").exists());
        assert_eq!(fs.list_dir(&dir).unwrap(), vec!["x"]);
        fs.sync_dir(&dir).unwrap();
        let _held = fs.lock(&dir.join("LOCK")).unwrap();
        assert!(StdFs.lock(&dir.join("LOCK")).is_err(), "the lock is real");
    }
}
