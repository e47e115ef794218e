//! [`PackFs`]: a pack seen as a read-only store directory, so a read-only open reads the
//! packed store in place (`Db::open_pack`), with no unpack step.
//!
//! The directory is the pack's own path; its entries are the members, each file a byte
//! range of the pack. Every mutating call inside it (create, append, rename, remove, lock,
//! sync) fails with an I/O error of kind `ReadOnlyFilesystem`; a read-only open makes
//! none. Paths outside the pack go to the file system the pack lives on, so a backup or a
//! pack of the opened store is written where it is asked to be.
//!
//! Invariants:
//! 1. The frame and the directory are checked when the pack is opened (`format.rs`: magic,
//!    version, checksums, members that tile the data, names that stay inside the
//!    directory), and so is the checksum of every member that is not a table: recovery
//!    forgives damage at the end of a log file or of an unlisted blob file (a crash leaves
//!    such tails), but a pack holds no crash, so a damaged tail must not pass for one.
//!    Tables are checked by their own block, index and footer checksums as they are read,
//!    which forgive nothing; so the open reads every byte of a pack but its tables once.
//! 2. A read never leaves its member's range: positioned reads are clipped to the member,
//!    so a damaged length in a member can only reach bytes of that member.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format;
use crate::checksum::Checksum;
use crate::db::checkpoint::for_each_piece;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::FileType;
use crate::fs::{read_exact_at, FileLock, FileSystem, ReadableFile, WritableFile};

/// A checked pack, read as a directory; see the module documentation.
#[derive(Debug)]
pub(crate) struct PackFs {
    /// The file system the pack lives on: every path outside the pack.
    host: Arc<dyn FileSystem>,
    file: Arc<dyn ReadableFile>,
    /// The pack's path: the directory its members appear in.
    root: PathBuf,
    /// Member name -> (offset, length).
    members: BTreeMap<String, (u64, u64)>,
}

impl PackFs {
    /// Opens the pack at `path` through `fs` and checks its frame and directory.
    ///
    /// # Errors
    /// `Corruption` (`FileKind::Pack`) for a damaged frame or directory;
    /// `UnsupportedVersion`; `Io`.
    pub(crate) fn open(fs: Arc<dyn FileSystem>, path: &Path) -> Result<PackFs> {
        let file: Arc<dyn ReadableFile> = Arc::from(fs.open_read(path)?);
        let len = file.len()?;
        let read = |offset: u64, n: u64| -> Result<Vec<u8>> {
            let mut buf = vec![0u8; usize::try_from(n).unwrap_or(0)];
            read_exact_at(file.as_ref(), offset, &mut buf)?;
            Ok(buf)
        };
        let (header, footer) = if len >= format::HEADER_LEN + format::FOOTER_LEN {
            (
                read(0, format::HEADER_LEN)?,
                read(len - format::FOOTER_LEN, format::FOOTER_LEN)?,
            )
        } else {
            (Vec::new(), Vec::new()) // `decode_frame` refuses the length first
        };
        let frame = format::decode_frame(&header, &footer, len, path)?;
        let dir = read(frame.dir_offset, frame.dir_len)?;
        let entries = format::decode_directory(&dir, &footer, frame, path)?;
        for e in &entries {
            if matches!(FileType::of(&e.name), Some((FileType::Table, _))) {
                continue;
            }
            let mut crc: Option<Checksum> = None;
            for_each_piece(file.as_ref(), e.offset, e.len, |piece| {
                crc = Some(crc.map_or_else(|| Checksum::of(piece), |c| c.extend(piece)));
                Ok(())
            })?;
            let computed = crc.unwrap_or_else(|| Checksum::of(&[])).masked();
            if computed != e.crc {
                let reason = Reason::Checksum {
                    stored: e.crc,
                    computed,
                };
                return Err(Error::corruption(FileKind::Pack, path, e.offset, reason));
            }
        }
        let members = entries
            .into_iter()
            .map(|e| (e.name, (e.offset, e.len)))
            .collect();
        Ok(PackFs {
            host: fs,
            file,
            root: path.to_path_buf(),
            members,
        })
    }

    /// True if `path` is the pack or inside it.
    fn inside(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    /// The member `path` names: its name, offset and length.
    fn member(&self, path: &Path) -> Option<(&str, u64, u64)> {
        if path.parent() != Some(self.root.as_path()) {
            return None;
        }
        let name = path.file_name()?.to_str()?;
        let (name, &(offset, len)) = self.members.get_key_value(name)?;
        Some((name, offset, len))
    }

    fn not_found(path: &Path, op: &'static str) -> Error {
        Error::io(path, op, io::Error::from(io::ErrorKind::NotFound))
    }

    fn read_only(path: &Path, op: &'static str) -> Error {
        Error::io(
            path,
            op,
            io::Error::new(
                io::ErrorKind::ReadOnlyFilesystem,
                "a pack opened in place is read-only",
            ),
        )
    }
}

impl FileSystem for PackFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if !self.inside(path) {
            return self.host.create(path);
        }
        Err(PackFs::read_only(path, "create"))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if !self.inside(path) {
            return self.host.open_append(path);
        }
        Err(PackFs::read_only(path, "open for append"))
    }

    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        if !self.inside(path) {
            return self.host.open_read(path);
        }
        let (_, offset, len) = self
            .member(path)
            .ok_or_else(|| PackFs::not_found(path, "open"))?;
        Ok(Box::new(MemberFile {
            pack: Arc::clone(&self.file),
            offset,
            len,
            path: path.to_path_buf(),
        }))
    }

    fn file_len(&self, path: &Path) -> Result<u64> {
        if !self.inside(path) {
            return self.host.file_len(path);
        }
        self.member(path)
            .map(|(_, _, len)| len)
            .ok_or_else(|| PackFs::not_found(path, "stat"))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        if !self.inside(path) {
            return self.host.exists(path);
        }
        Ok(path == self.root || self.member(path).is_some())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        if !self.inside(from) && !self.inside(to) {
            return self.host.rename(from, to);
        }
        Err(PackFs::read_only(from, "rename"))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        if !self.inside(path) {
            return self.host.remove(path);
        }
        Err(PackFs::read_only(path, "remove"))
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        if !self.inside(dir) {
            return self.host.list_dir(dir);
        }
        if dir != self.root {
            return Err(PackFs::not_found(dir, "list directory"));
        }
        Ok(self.members.keys().cloned().collect())
    }

    fn create_dir(&self, dir: &Path) -> Result<()> {
        if !self.inside(dir) {
            return self.host.create_dir(dir);
        }
        Err(PackFs::read_only(dir, "create directory"))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        if !self.inside(dir) {
            return self.host.sync_dir(dir);
        }
        Err(PackFs::read_only(dir, "fsync directory"))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        if !self.inside(from) && !self.inside(to) {
            return self.host.hard_link(from, to);
        }
        Err(PackFs::read_only(to, "link"))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        if !self.inside(dir) {
            return self.host.remove_dir(dir);
        }
        Err(PackFs::read_only(dir, "remove directory"))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        if !self.inside(path) {
            return self.host.lock(path);
        }
        Err(PackFs::read_only(path, "lock"))
    }
}

/// One member of a pack, read through the pack file (invariant 2).
#[derive(Debug)]
struct MemberFile {
    pack: Arc<dyn ReadableFile>,
    offset: u64,
    len: u64,
    path: PathBuf,
}

impl ReadableFile for MemberFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if offset >= self.len {
            return Ok(0);
        }
        let room = usize::try_from(self.len - offset).unwrap_or(usize::MAX);
        let n = buf.len().min(room);
        let Some(part) = buf.get_mut(..n) else {
            return Ok(0);
        };
        self.pack.read_at(self.offset + offset, part)
    }

    fn len(&self) -> Result<u64> {
        Ok(self.len)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
