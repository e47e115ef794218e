//! [`StdFs`]: the [`FileSystem`] over real files, through `std::fs`.
//!
//! Syncs map to `fdatasync` / `fsync`; [`FileSystem::sync_dir`] opens the directory and
//! `fsync`s it. The process lock is `flock(LOCK_EX | LOCK_NB)` (through `rustix`, so no
//! `unsafe` here). `flock` locks belong to the *open file description*: a second `open` of
//! the lock file, in this process or another, gets a new description and is refused, while
//! the lock lives as long as the description (it is released when the guard's `File` is
//! closed or the process dies; a forked child sharing the descriptor would share the lock,
//! which Cairn never does). `std::fs::File::try_lock` behaves the same but needs Rust 1.89,
//! above the workspace's `rust-version`. `flock` does not work across NFS clients; a store
//! directory on NFS shared by two machines is not supported.
//!
//! Thread-safety: `StdFs` is a stateless unit struct; handles are `Send` (readers also
//! `Sync`, using `pread`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{lock_held_error, FileLock, FileSystem, ReadableFile, WritableFile};
use crate::error::{Error, Result};
use crate::mmap::Map;

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StdFs;

#[derive(Debug)]
struct StdWritable {
    file: File,
    path: PathBuf,
    len: u64,
}

#[derive(Debug)]
struct StdReadable {
    file: File,
    path: PathBuf,
    /// All of the file, for handles opened with `open_read_mapped` (when the map could be
    /// made).
    map: Option<Arc<Map>>,
}

#[derive(Debug)]
struct StdLock {
    // Held only to keep the open file description, and with it the flock, alive.
    _file: File,
    // Shown by `Debug` only.
    _path: PathBuf,
}

fn metadata_len(file: &File, path: &Path) -> Result<u64> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|e| Error::io(path, "stat", e))
}

impl FileSystem for StdFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(path, "create", e))?;
        Ok(Box::new(StdWritable {
            file,
            path: path.to_path_buf(),
            len: 0,
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, "open", e))?;
        let len = metadata_len(&file, path)?;
        Ok(Box::new(StdWritable {
            file,
            path: path.to_path_buf(),
            len,
        }))
    }

    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        Ok(Box::new(StdReadable {
            file,
            path: path.to_path_buf(),
            map: None,
        }))
    }

    fn open_read_mapped(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let len = metadata_len(&file, path)?;
        // A map is only faster reads: where it cannot be made (no address space left, a
        // file system that does not map), the handle reads with `pread`.
        let map = Map::new(&file, len).ok().map(Arc::new);
        Ok(Box::new(StdReadable {
            file,
            path: path.to_path_buf(),
            map,
        }))
    }

    fn file_len(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(path, "stat", e))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io(path, "stat", e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io(from, "rename", e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(path, "remove", e))
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))? {
            let entry = entry.map_err(|e| Error::io(dir, "list directory", e))?;
            // Names that are not UTF-8 were not written by Cairn; skip them.
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir(&self, dir: &Path) -> Result<()> {
        match fs::create_dir(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
            Err(e) => Err(Error::io(dir, "create directory", e)),
        }
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let handle = File::open(dir).map_err(|e| Error::io(dir, "open directory", e))?;
        handle
            .sync_all()
            .map_err(|e| Error::io(dir, "fsync directory", e))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| Error::io(to, "link", e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        fs::remove_dir(dir).map_err(|e| Error::io(dir, "remove directory", e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, "open lock file", e))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Box::new(StdLock {
                _file: file,
                _path: path.to_path_buf(),
            })),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(lock_held_error(path)),
            Err(e) => Err(Error::io(path, "lock", e.into())),
        }
    }
}

impl WritableFile for StdWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| Error::io(&self.path, "write", e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        let mut slices: Vec<IoSlice<'_>> = parts
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| IoSlice::new(p))
            .collect();
        let total: usize = slices.iter().map(|s| s.len()).sum();
        // `write_vectored` takes at most IOV_MAX slices per call and may write part of
        // them; go on from where each call stopped.
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match self.file.write_vectored(rest) {
                Ok(0) => {
                    return Err(Error::io(
                        &self.path,
                        "write",
                        io::Error::from(io::ErrorKind::WriteZero),
                    ))
                }
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.path, "write", e)),
            }
        }
        self.len += total as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, "fsync", e))
    }

    fn sync_all(&mut self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(&self.path, "fsync", e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl ReadableFile for StdReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.file.read_at(buf, offset) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, "read", e)),
            }
        }
    }

    fn len(&self) -> Result<u64> {
        metadata_len(&self.file, &self.path)
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn mapped(&self) -> Option<&Arc<Map>> {
        self.map.as_ref()
    }
}

impl FileLock for StdLock {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `flock` is per open file description, so a plain second `open` in the same process
    /// stands in for a second process; this checks that assumption directly, without the
    /// guard type in between.
    #[test]
    fn flock_conflicts_between_two_opens_in_one_process() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("LOCK");
        let _held = StdFs.lock(&path).unwrap();
        let other = File::open(&path).unwrap();
        let res = rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive);
        assert_eq!(res, Err(rustix::io::Errno::WOULDBLOCK));
    }

    #[test]
    fn appended_parts_reach_the_file_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let mut w = StdFs.create(&path).unwrap();
        w.append(b"<").unwrap();
        // More parts than one `writev` takes (IOV_MAX is 1024 on Linux), some empty.
        let owned: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| vec![(i % 251) as u8; (i % 7) as usize])
            .collect();
        let parts: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        w.append_parts(&parts).unwrap();
        w.append_parts(&[]).unwrap();
        w.append(b">").unwrap();
        let mut want = b"<".to_vec();
        want.extend(owned.concat());
        want.push(b'>');
        assert_eq!(w.len(), want.len() as u64);
        assert_eq!(fs::read(&path).unwrap(), want);
    }

    #[test]
    fn appended_bytes_reach_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let mut w = StdFs.create(&path).unwrap();
        w.append(b"abc").unwrap();
        w.sync_data().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"abc");
        assert_eq!(StdFs.file_len(&path).unwrap(), 3);
    }
}
