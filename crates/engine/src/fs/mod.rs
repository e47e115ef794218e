//! The file-system boundary of the ordered store: every byte it reads or writes and every
//! directory entry it creates, renames or removes goes through [`FileSystem`].
//!
//! Owns: the narrow trait ([`FileSystem`], [`WritableFile`], [`ReadableFile`], [`FileLock`])
//! and its implementations: [`StdFs`] (real files); [`MemFs`] (in memory, for tests: it
//! remembers what was synced, can simulate a crash or power loss, and can inject I/O
//! errors at the n-th call of a kind); and [`LossyFs`] (real files whose unsynced appends
//! stay in process memory, so that `kill -9` of a crash-test process acts as a power
//! loss). It does not own file naming or formats; the format modules (`wal`, later
//! `table`, `version`) do.
//!
//! The trait is deliberately small: files are created once and only appended to (every
//! ordered-store file is append-only or written whole and renamed into place), read with
//! positioned reads, and made durable with explicit syncs. Durability follows POSIX, which
//! [`MemFs`] models strictly:
//!
//! 1. Appended bytes are durable only after [`WritableFile::sync_data`] (or `sync_all`) on
//!    that file returns `Ok`.
//! 2. A directory entry (a created file or directory, a rename, a removal) is durable only
//!    after [`FileSystem::sync_dir`] on the directory holding it returns `Ok`. Syncing a
//!    file does not make its name durable.
//! 3. A failed sync leaves the unsynced bytes in an unknown state; callers must not retry
//!    and assume success (the WAL writer poisons itself instead).
//!
//! Errors: every failure is [`crate::Error::Io`] with the path, the operation
//! (`"create"`, `"write"`, `"fsync"`, `"rename"`, ...) and the OS error.
//!
//! Thread-safety: implementations are `Send + Sync` and may be shared through `Arc`; a
//! [`WritableFile`] has one owner (`&mut self` to append), a [`ReadableFile`] may be read
//! from many threads at once (`&self`, positioned reads).

mod lossy_fs;
mod mem_fs;
mod std_fs;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::mmap::Map;

pub(crate) use lossy_fs::LossyFs;
pub(crate) use mem_fs::MemFs;
#[cfg(test)]
pub(crate) use mem_fs::{CrashOptions, Fault, FaultKind, Op};
pub(crate) use std_fs::StdFs;

/// Operations on a directory tree. See the module documentation for the durability rules.
pub(crate) trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates a new, empty file open for appending; fails if `path` already exists.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;

    /// Opens an existing file for appending at its current end.
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>>;

    /// Opens an existing file for positioned reads.
    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>>;

    /// Opens an existing file that nothing writes while it is open (a table) for reads
    /// through a memory map of all of it ([`ReadableFile::mapped`]), where this file
    /// system maps files and the map can be made; otherwise (the default) as
    /// [`FileSystem::open_read`] does.
    fn open_read_mapped(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        self.open_read(path)
    }

    /// The current length of the file in bytes (including bytes not yet synced).
    fn file_len(&self, path: &Path) -> Result<u64>;

    /// True if `path` names an existing file or directory.
    fn exists(&self, path: &Path) -> Result<bool>;

    /// Atomically replaces `to` (if it exists) with `from`. `from` may also be a
    /// directory, renamed with everything in it (`to` must not exist then).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;

    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;

    /// The names (not paths) of the entries of directory `dir`, sorted.
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>>;

    /// Creates directory `dir`; its parent must exist. Succeeds if it already exists.
    fn create_dir(&self, dir: &Path) -> Result<()>;

    /// Makes the entries of directory `dir` durable (creations, renames, removals).
    fn sync_dir(&self, dir: &Path) -> Result<()>;

    /// Makes `to` a second name of the existing file `from` (a hard link); `to` must not
    /// exist. Only used for immutable files (backups link tables instead of copying them).
    ///
    /// # Errors
    /// `Error::Io` with `op` `"link"`; the kind is [`io::ErrorKind::Unsupported`] where the
    /// file system has no hard links (the default), and whatever the OS says otherwise
    /// (`EXDEV` across devices). Callers fall back to copying.
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let _ = from;
        Err(Error::io(
            to,
            "link",
            io::Error::from(io::ErrorKind::Unsupported),
        ))
    }

    /// Removes the empty directory `dir`.
    ///
    /// # Errors
    /// `Error::Io` with `op` `"remove directory"`: it does not exist, is not empty, or (the
    /// default) the file system cannot remove directories.
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        Err(Error::io(
            dir,
            "remove directory",
            io::Error::from(io::ErrorKind::Unsupported),
        ))
    }

    /// Takes an exclusive lock on `path` (created if missing), held until the returned
    /// guard is dropped.
    ///
    /// # Errors
    /// `Error::Io` with `op` `"lock"` and kind [`io::ErrorKind::WouldBlock`] if another
    /// holder has it (see [`lock_held_error`]); never blocks.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}

/// A file open for appending.
pub(crate) trait WritableFile: Send + fmt::Debug {
    /// Appends all of `data` (handed to the OS; not durable until a sync).
    fn append(&mut self, data: &[u8]) -> Result<()>;

    /// Appends the concatenation of `parts`, in order, as one [`WritableFile::append`] of
    /// it would, without first copying the parts together. The default appends them one
    /// by one; a file system that can hand them to the OS in one call (`writev`) does.
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        for part in parts {
            self.append(part)?;
        }
        Ok(())
    }

    /// Makes the file's data (and the length needed to read it) durable: `fdatasync`.
    fn sync_data(&mut self) -> Result<()>;

    /// Makes the file's data and metadata durable: `fsync`.
    fn sync_all(&mut self) -> Result<()>;

    /// The file's length: bytes present before opening plus bytes appended through this
    /// handle.
    fn len(&self) -> u64;

    /// The path the file was opened with.
    fn path(&self) -> &Path;
}

/// A file open for positioned reads.
pub(crate) trait ReadableFile: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (fewer only at
    /// the end of the file, 0 at or past it).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize>;

    /// The file's current length in bytes.
    fn len(&self) -> Result<u64>;

    /// The path the file was opened with.
    fn path(&self) -> &Path;

    /// The file's bytes as they were when it was opened, if this handle reads them through
    /// a memory map ([`FileSystem::open_read_mapped`]); `None` for positioned reads only.
    /// The map may outlive the handle (blocks read in place keep it). Reading a mapped page
    /// that the device cannot return stops the process (`SIGBUS`) where a positioned read
    /// would return `Error::Io`.
    fn mapped(&self) -> Option<&Arc<Map>> {
        None
    }
}

/// An exclusive lock; dropping it releases the lock.
pub(crate) trait FileLock: Send + fmt::Debug {}

/// Reads `len` bytes at `offset`, failing with `UnexpectedEof` if the file is shorter.
pub(crate) fn read_exact_at(file: &dyn ReadableFile, offset: u64, buf: &mut [u8]) -> Result<()> {
    let mut done = 0usize;
    while let Some(rest) = buf.get_mut(done..) {
        if rest.is_empty() {
            break;
        }
        let n = file.read_at(offset + done as u64, rest)?;
        if n == 0 {
            return Err(Error::io(
                file.path(),
                "read",
                io::Error::new(io::ErrorKind::UnexpectedEof, "file ends before the read"),
            ));
        }
        done += n;
    }
    Ok(())
}

/// Reads a whole file into memory.
pub(crate) fn read_all(fs: &dyn FileSystem, path: &Path) -> Result<Vec<u8>> {
    let file = fs.open_read(path)?;
    let len = file.len()?;
    let len = usize::try_from(len).map_err(|_| {
        Error::io(
            path,
            "read",
            io::Error::new(io::ErrorKind::OutOfMemory, "file too large to read whole"),
        )
    })?;
    let mut buf = vec![0u8; len];
    read_exact_at(file.as_ref(), 0, &mut buf)?;
    Ok(buf)
}

/// The error [`FileSystem::lock`] returns when the lock is already held.
pub(crate) fn lock_held_error(path: &Path) -> Error {
    Error::io(
        path,
        "lock",
        io::Error::new(
            io::ErrorKind::WouldBlock,
            "already locked: the store is open in another process (or by another handle in \
             this process); close it first",
        ),
    )
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_of(path: &Path) -> PathBuf {
    crate::atomic::parent_dir(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    /// The same behaviour checks run against both implementations.
    fn exercise(fs: &dyn FileSystem, root: &Path) {
        let dir = root.join("db");
        fs.create_dir(&dir).unwrap();
        fs.create_dir(&dir).unwrap(); // idempotent
        let a = dir.join("a.log");
        let mut w = fs.create(&a).unwrap();
        assert!(
            fs.create(&a).is_err(),
            "create must refuse an existing file"
        );
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.len(), 11);
        w.sync_data().unwrap();
        drop(w);
        let mut w = fs.open_append(&a).unwrap();
        assert_eq!(w.len(), 11);
        w.append(b"!").unwrap();
        w.sync_all().unwrap();
        drop(w);
        assert_eq!(fs.file_len(&a).unwrap(), 12);
        assert_eq!(read_all(fs, &a).unwrap(), b"hello world!");

        let r = fs.open_read(&a).unwrap();
        let mut buf = [0u8; 5];
        assert_eq!(r.read_at(6, &mut buf).unwrap(), 5);
        assert_eq!(&buf, b"world");
        assert_eq!(r.read_at(10, &mut buf).unwrap(), 2);
        assert_eq!(r.read_at(12, &mut buf).unwrap(), 0);
        assert_eq!(r.read_at(100, &mut buf).unwrap(), 0);
        assert!(read_exact_at(r.as_ref(), 10, &mut buf).is_err());
        drop(r);

        let b = dir.join("b.log");
        fs.rename(&a, &b).unwrap();
        assert!(!fs.exists(&a).unwrap());
        assert!(fs.exists(&b).unwrap());
        fs.create(&a).unwrap().append(b"x").unwrap();
        assert_eq!(fs.list_dir(&dir).unwrap(), vec!["a.log", "b.log"]);
        fs.rename(&a, &b).unwrap(); // replaces
        assert_eq!(read_all(fs, &b).unwrap(), b"x");
        fs.remove(&b).unwrap();
        assert!(fs.list_dir(&dir).unwrap().is_empty());
        fs.sync_dir(&dir).unwrap();

        let missing = dir.join("missing");
        for err in [
            fs.open_read(&missing).err(),
            fs.open_append(&missing).err(),
            fs.remove(&missing).err(),
            fs.file_len(&missing).err(),
        ] {
            match err {
                Some(Error::Io { path, .. }) => assert_eq!(path, missing),
                other => panic!("expected Io error naming the path, got {other:?}"),
            }
        }

        let lock_path = dir.join("LOCK");
        let held = fs.lock(&lock_path).unwrap();
        match fs.lock(&lock_path) {
            Err(Error::Io {
                op: "lock",
                source,
                path,
            }) => {
                assert_eq!(source.kind(), io::ErrorKind::WouldBlock);
                assert_eq!(path, lock_path);
            }
            other => panic!("second lock must fail, got {other:?}"),
        }
        drop(held);
        let again = fs.lock(&lock_path).unwrap();
        drop(again);
    }

    #[test]
    fn std_fs_behaves_as_documented() {
        let tmp = tempfile::tempdir().unwrap();
        exercise(&StdFs, tmp.path());
    }

    #[test]
    fn lossy_fs_behaves_as_documented() {
        let tmp = tempfile::tempdir().unwrap();
        exercise(&LossyFs::new(), tmp.path());
    }

    #[test]
    fn mem_fs_behaves_as_documented() {
        exercise(&MemFs::new(), Path::new("/"));
    }

    #[test]
    fn lock_error_reads_as_a_sentence() {
        let msg = lock_held_error(Path::new("/db/LOCK")).to_string();
        assert!(
            msg.starts_with("lock /db/LOCK failed: already locked"),
            "{msg}"
        );
    }
}
