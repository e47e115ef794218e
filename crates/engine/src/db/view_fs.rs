//! [`ViewFs`]: the files of a read-only view (`ReadPoint`) as a read-only directory, so a
//! check written against a store directory (`verify`) reads exactly the view: the handles
//! the view opened, each up to the length the view read, whatever the writer in another
//! process has appended, replaced or deleted since.
//!
//! Invariants:
//! 1. The directory lists only the view's files and a `CURRENT` naming the view's
//!    manifest; the manifest is read up to the end of the last record the view applied,
//!    a log file up to the length the view replayed, every other file whole through the
//!    handle the view holds (tables and sealed blob files never change; an active blob
//!    file only grows by records the view's log does not reference).
//! 2. Every mutating call fails with an I/O error of kind `ReadOnlyFilesystem`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::inner::ReadPoint;
use crate::error::{Error, Result};
use crate::files::{self, FileType};
use crate::fs::{FileLock, FileSystem, ReadableFile, WritableFile};
use crate::version;

/// A view's files as a directory; see the module documentation.
#[derive(Debug)]
pub(crate) struct ViewFs {
    dir: PathBuf,
    files: BTreeMap<String, (Arc<dyn ReadableFile>, u64)>,
    current: Vec<u8>,
}

impl ViewFs {
    /// The files of `point`, a view of the store in `dir`.
    ///
    /// # Errors
    /// `Io` reading a held file's length.
    pub(crate) fn new(dir: &Path, point: &ReadPoint) -> Result<ViewFs> {
        let mut files = BTreeMap::new();
        for (name, handle) in &point.files {
            let len = match FileType::of(name) {
                Some((FileType::Wal, id)) => point
                    .wal_lens
                    .iter()
                    .find(|(w, _)| *w == id)
                    .map_or(0, |(_, len)| *len),
                Some((FileType::Manifest, _)) => point.manifest_end,
                _ => handle.len()?,
            };
            files.insert(name.clone(), (Arc::clone(handle), len));
        }
        Ok(ViewFs {
            dir: dir.to_path_buf(),
            files,
            current: version::encode_current(point.manifest_id),
        })
    }

    /// The names of the view's files (and `CURRENT`), sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.files.keys().cloned().collect();
        names.push(files::CURRENT.to_string());
        names.sort();
        names
    }

    fn entry<'p>(&self, path: &'p Path) -> Option<&'p str> {
        if path.parent() != Some(self.dir.as_path()) {
            return None;
        }
        path.file_name()?.to_str()
    }

    fn read_only(path: &Path, op: &'static str) -> Error {
        Error::io(
            path,
            op,
            io::Error::new(
                io::ErrorKind::ReadOnlyFilesystem,
                "a read-only view is checked in place",
            ),
        )
    }

    fn not_found(path: &Path, op: &'static str) -> Error {
        Error::io(path, op, io::Error::from(io::ErrorKind::NotFound))
    }
}

impl FileSystem for ViewFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(ViewFs::read_only(path, "create"))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(ViewFs::read_only(path, "open for append"))
    }

    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        let name = self
            .entry(path)
            .ok_or_else(|| ViewFs::not_found(path, "open"))?;
        if name == files::CURRENT {
            return Ok(Box::new(Bytes {
                bytes: self.current.clone(),
                path: path.to_path_buf(),
            }));
        }
        let (file, len) = self
            .files
            .get(name)
            .ok_or_else(|| ViewFs::not_found(path, "open"))?;
        Ok(Box::new(Prefix {
            file: Arc::clone(file),
            len: *len,
            path: path.to_path_buf(),
        }))
    }

    fn file_len(&self, path: &Path) -> Result<u64> {
        match self.entry(path) {
            Some(n) if n == files::CURRENT => Ok(self.current.len() as u64),
            Some(n) => self
                .files
                .get(n)
                .map(|(_, len)| *len)
                .ok_or_else(|| ViewFs::not_found(path, "stat")),
            None => Err(ViewFs::not_found(path, "stat")),
        }
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(path == self.dir
            || self
                .entry(path)
                .is_some_and(|n| n == files::CURRENT || self.files.contains_key(n)))
    }

    fn rename(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(ViewFs::read_only(from, "rename"))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        Err(ViewFs::read_only(path, "remove"))
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        if dir != self.dir {
            return Err(ViewFs::not_found(dir, "list directory"));
        }
        Ok(self.names())
    }

    fn create_dir(&self, dir: &Path) -> Result<()> {
        Err(ViewFs::read_only(dir, "create directory"))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        Err(ViewFs::read_only(dir, "fsync directory"))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        Err(ViewFs::read_only(path, "lock"))
    }
}

/// A held file, read up to `len` bytes.
#[derive(Debug)]
struct Prefix {
    file: Arc<dyn ReadableFile>,
    len: u64,
    path: PathBuf,
}

impl ReadableFile for Prefix {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if offset >= self.len {
            return Ok(0);
        }
        let room = usize::try_from(self.len - offset).unwrap_or(usize::MAX);
        let n = buf.len().min(room);
        let Some(part) = buf.get_mut(..n) else {
            return Ok(0);
        };
        self.file.read_at(offset, part)
    }

    fn len(&self) -> Result<u64> {
        Ok(self.len)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Bytes made in memory (the view's `CURRENT`).
#[derive(Debug)]
struct Bytes {
    bytes: Vec<u8>,
    path: PathBuf,
}

impl ReadableFile for Bytes {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let Some(rest) = self.bytes.get(start..) else {
            return Ok(0);
        };
        let n = rest.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), rest.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    fn len(&self) -> Result<u64> {
        Ok(self.bytes.len() as u64)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
