//! Packs: a consistent checkpoint of an ordered store in ONE portable file, with a
//! checksummed directory of its members, and the way back to a store directory. Byte
//! layout: [`FORMAT.md`](FORMAT.md).
//!
//! - [`crate::Db::pack`] packs a running store (the same checkpoint as a backup: pinned
//!   tables, the WAL up to a record boundary, a fresh manifest, `CURRENT` last);
//! - [`pack`] packs a closed store or a backup directory, reading it only;
//! - [`unpack`] checks the whole pack (header, footer, directory, every member's length,
//!   offset, name and checksum) before it writes anything, then restores it to a new
//!   store directory through a temporary sibling renamed into place;
//! - [`crate::Db::open_pack`] opens a pack in place, read-only, as one file: a read-only
//!   open over `fs::PackFs` (a private type), which shows the members as a directory.
//!
//! Writing: the pack is written to a temporary sibling (`<file>.tmp-<pid>-<n>`), fsynced,
//! renamed to `file` and the directory fsynced, so `file` appears complete or not at all.
//!
//! Opened in place, a pack is read as a read-only store is ([`crate::Db::open_read_only`]):
//! nothing is written, and every member is read through its own format's checksums; to
//! write to the store, unpack it and open the directory.

mod format;
mod fs;

use std::path::Path;
use std::sync::Arc;

use crate::checksum::Checksum;
use crate::db::checkpoint::{self, copy_range, for_each_piece, Checkpoint, Source};
use crate::db::Db;
use crate::error::{Error, FileKind, Reason, Result};
use crate::fs::{parent_of, read_exact_at, FileSystem, ReadableFile, StdFs};
use crate::options::Options;

/// What a pack holds (from [`crate::Db::pack`], [`pack`] or [`unpack`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackInfo {
    /// The packed checkpoint holds every write up to this seqno (for a pack of a closed
    /// store: at least this one; its WAL files are packed whole and hold the rest).
    pub seqno: u64,
    /// Files packed.
    pub members: usize,
    /// Bytes of the members.
    pub member_bytes: u64,
    /// Bytes of the pack file.
    pub file_bytes: u64,
}

impl Db {
    /// Opens the pack `file` in place, read-only, as one file (no unpack step): the store
    /// it holds, at the point it was packed, exactly as [`Db::open_read_only`] would open
    /// the unpacked directory. The open checks the pack's frame, its directory and the
    /// checksum of every member but the tables (so it reads those bytes once); tables are
    /// checked block by block as they are read. Writes return [`Error::ReadOnly`]; a
    /// backup or pack of it copies its view.
    ///
    /// ```
    /// use cairn::{Db, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path().join("store"), Options::default())?;
    /// db.keyspace("users")?.insert("u:1", "Ada")?;
    /// db.pack(dir.path().join("users.cpack"))?;
    ///
    /// let shipped = Db::open_pack(dir.path().join("users.cpack"), Options::default())?;
    /// let users = shipped.get_keyspace("users").expect("packed");
    /// assert_eq!(users.get("u:1")?, Some(b"Ada".to_vec()));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Corruption` (`FileKind::Pack`) for a damaged frame or directory, or (of the
    /// member's kind) for a damaged member read; `UnsupportedVersion`; `Io`.
    pub fn open_pack(file: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_pack_with(Arc::new(StdFs), file.as_ref(), options)
    }

    /// [`Db::open_pack`] through a given file system.
    pub(crate) fn open_pack_with(
        fs: Arc<dyn FileSystem>,
        file: &Path,
        options: Options,
    ) -> Result<Db> {
        let pack = fs::PackFs::open(fs, file)?;
        Db::open_read_only_with_fs(Arc::new(pack), file, options)
    }

    /// Writes a consistent checkpoint of this store into the new file `file` while writes
    /// continue (the checkpoint a backup takes); restore it with [`unpack`].
    ///
    /// # Errors
    /// `InvalidArgument` if `file` exists or the store is closed; `Error::Io`; `Poisoned`
    /// if the store's log cannot be written.
    pub fn pack(&self, file: impl AsRef<Path>) -> Result<PackInfo> {
        let checkpoint = checkpoint::capture(&self.inner)?;
        write_pack(self.inner.fs.as_ref(), &checkpoint, file.as_ref())
    }
}

/// Packs the closed store or backup in `dir` into the new file `file`, without writing to
/// `dir` (its lock is taken if it has a `LOCK` file, so an open store is refused).
///
/// # Errors
/// `InvalidArgument` if `dir` holds no store or `file` exists; `Error::Io` (kind
/// `WouldBlock` if the store is open: use [`crate::Db::pack`]); `Corruption` if
/// `CURRENT` or the manifest is damaged or a file it needs is missing.
pub fn pack(dir: impl AsRef<Path>, file: impl AsRef<Path>) -> Result<PackInfo> {
    pack_with(&StdFs, dir.as_ref(), file.as_ref())
}

/// Restores the pack `file` into the new store directory `dest`. Every byte of the pack
/// is checked first; nothing is written unless all of it is intact.
///
/// # Errors
/// `Corruption` (`FileKind::Pack`, with the offset) for any damage, a member name that is
/// not a plain file name (path separators, `..`), or members that do not tile the file;
/// `UnsupportedVersion`; `InvalidArgument` if `dest` exists; `Error::Io`.
pub fn unpack(file: impl AsRef<Path>, dest: impl AsRef<Path>) -> Result<PackInfo> {
    unpack_with(&StdFs, file.as_ref(), dest.as_ref())
}

pub(crate) fn pack_with(fs: &dyn FileSystem, dir: &Path, file: &Path) -> Result<PackInfo> {
    let checkpoint = checkpoint::capture_closed(fs, dir)?;
    write_pack(fs, &checkpoint, file)
}

/// Writes `checkpoint` as a pack to the new file `file` through a temporary sibling.
fn write_pack(fs: &dyn FileSystem, checkpoint: &Checkpoint, file: &Path) -> Result<PackInfo> {
    if fs.exists(file)? {
        return Err(Error::invalid(format!(
            "pack file {} exists; give a new path",
            file.display()
        )));
    }
    for m in &checkpoint.members {
        if !format::valid_name(&m.name) {
            return Err(Error::invalid(format!(
                "cannot pack a file named {:?}",
                m.name
            )));
        }
    }
    let tmp = crate::db::temp_sibling(file)?;
    let result = (|| -> Result<PackInfo> {
        let mut out = fs.create(&tmp)?;
        out.append(&format::encode_header(checkpoint.seqno))?;
        let mut entries = Vec::with_capacity(checkpoint.members.len());
        let mut offset = format::HEADER_LEN;
        for m in &checkpoint.members {
            let mut crc: Option<Checksum> = None;
            let mut observe = |piece: &[u8]| {
                crc = Some(crc.map_or_else(|| Checksum::of(piece), |c| c.extend(piece)));
            };
            match &m.source {
                Source::Immutable(path) => {
                    let src = fs.open_read(path)?;
                    copy_range(src.as_ref(), 0, m.len, out.as_mut(), observe)?;
                }
                Source::Prefix(src) => copy_range(src.as_ref(), 0, m.len, out.as_mut(), observe)?,
                Source::Bytes(bytes) => {
                    observe(bytes);
                    out.append(bytes)?;
                }
            }
            entries.push(format::Entry {
                name: m.name.clone(),
                offset,
                len: m.len,
                crc: crc.unwrap_or_else(|| Checksum::of(&[])).masked(),
            });
            offset += m.len;
        }
        let dir = format::encode_directory(&entries);
        out.append(&dir)?;
        out.append(&format::encode_footer(offset, &dir))?;
        out.sync_all()?;
        let file_bytes = out.len();
        drop(out);
        if fs.exists(file)? {
            return Err(Error::invalid(format!(
                "pack file {} appeared while packing",
                file.display()
            )));
        }
        fs.rename(&tmp, file)?;
        fs.sync_dir(&parent_of(file))?;
        Ok(PackInfo {
            seqno: checkpoint.seqno,
            members: entries.len(),
            member_bytes: offset - format::HEADER_LEN,
            file_bytes,
        })
    })();
    if result.is_err() && fs.exists(&tmp).unwrap_or(false) {
        let _ = fs.remove(&tmp);
    }
    result
}

/// A pack, opened and fully checked.
struct Checked {
    file: Box<dyn ReadableFile>,
    frame: format::Frame,
    entries: Vec<format::Entry>,
    len: u64,
}

/// Opens the pack `path` and checks header, footer, directory and every member checksum.
fn open_checked(fs: &dyn FileSystem, path: &Path) -> Result<Checked> {
    let file = fs.open_read(path)?;
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
    Ok(Checked {
        file,
        frame,
        entries,
        len,
    })
}

pub(crate) fn unpack_with(fs: &dyn FileSystem, file: &Path, dest: &Path) -> Result<PackInfo> {
    let checked = open_checked(fs, file)?;
    if fs.exists(dest)? {
        return Err(Error::invalid(format!(
            "unpack destination {} exists; give a new path",
            dest.display()
        )));
    }
    let tmp = crate::db::temp_sibling(dest)?;
    fs.create_dir(&tmp)?;
    let mut written = Vec::new();
    let result = (|| -> Result<()> {
        for e in &checked.entries {
            let mut out = fs.create(&tmp.join(&e.name))?;
            written.push(e.name.clone());
            // The bytes were checked above; they are checked again as they are copied, so
            // a pack changed in between is not restored either.
            let mut crc: Option<Checksum> = None;
            copy_range(checked.file.as_ref(), e.offset, e.len, out.as_mut(), |p| {
                crc = Some(crc.map_or_else(|| Checksum::of(p), |c| c.extend(p)));
            })?;
            let computed = crc.unwrap_or_else(|| Checksum::of(&[])).masked();
            if computed != e.crc {
                let reason = Reason::Checksum {
                    stored: e.crc,
                    computed,
                };
                return Err(Error::corruption(FileKind::Pack, file, e.offset, reason));
            }
            out.sync_all()?;
        }
        fs.sync_dir(&tmp)?;
        if fs.exists(dest)? {
            return Err(Error::invalid(format!(
                "unpack destination {} appeared while unpacking",
                dest.display()
            )));
        }
        fs.rename(&tmp, dest)?;
        fs.sync_dir(&parent_of(dest))
    })();
    if let Err(e) = result {
        if fs.exists(&tmp).unwrap_or(false) {
            for name in &written {
                let _ = fs.remove(&tmp.join(name));
            }
            let _ = fs.remove_dir(&tmp);
        }
        return Err(e);
    }
    Ok(PackInfo {
        seqno: checked.frame.seqno,
        members: checked.entries.len(),
        member_bytes: checked.entries.iter().map(|e| e.len).sum(),
        file_bytes: checked.len,
    })
}

#[cfg(test)]
mod tests;
