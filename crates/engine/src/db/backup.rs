//! Online backups: [`Db::backup`] writes a checkpoint (`checkpoint.rs`) of a running store
//! into a new directory that is itself a normal, closed store.
//!
//! Protocol (every step durable before the next):
//! 1. refuse a destination that exists; create the sibling directory
//!    `<dest>.tmp-<pid>-<n>`;
//! 2. for each member in checkpoint order: hard-link an immutable file (a table is never
//!    changed once written, and it was fsynced before a manifest named it) or, where the
//!    link fails (another device, a file system without links), copy it; copy the WAL
//!    prefixes; write the new manifest, then `CURRENT` last. Every copied or written file
//!    is fsynced;
//! 3. fsync the temporary directory, rename it to `dest`, fsync the parent directory.
//!
//! So `dest` appears complete or not at all: a crash (or an error) at any step leaves at
//! most a `<dest>.tmp-*` directory, which is never read and may be deleted (an error
//! deletes it; a crash leaves it). The one error after which `dest` exists is a failed
//! fsync of the parent directory, the last step: the backup is complete, but its name may
//! not survive a power loss until the parent directory is synced. Running the backup again after a crash works, with a
//! fresh temporary name. The source store is only read (plus the super version that pins
//! its tables for the backup's duration), so a failed backup never harms it.
//!
//! Restore: a backup is a store. `Db::open(dest, options)` opens it, replaying its WAL as
//! recovery does; to restore in place, close the store, move the backup to its directory
//! and open it. Opening a backup writes to it (a new manifest and log), so keep an
//! untouched copy (or a pack, `crate::pack`) if it must stay pristine.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::checkpoint::{self, copy_range, Checkpoint, Source};
use super::Db;
use crate::error::{Error, FileKind, Result};
use crate::fs::{parent_of, FileSystem};

/// What [`Db::backup`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupInfo {
    /// The backup holds every write with a seqno up to this one, and none after it. It is
    /// at least the [`Db::last_seqno`] seen before the backup began.
    pub seqno: u64,
    /// Files hard-linked from the store (tables).
    pub files_linked: usize,
    /// Files copied or written (WAL files, the manifest, `CURRENT`, and tables that could
    /// not be linked).
    pub files_copied: usize,
    /// Bytes of the linked files.
    pub bytes_linked: u64,
    /// Bytes copied or written.
    pub bytes_copied: u64,
    /// Table files in the backup.
    pub tables: usize,
    /// WAL files in the backup.
    pub wal_files: usize,
}

impl Db {
    /// Writes a consistent copy of the store into the new directory `dest` while writes
    /// continue. The copy holds exactly the writes up to [`BackupInfo::seqno`], which
    /// includes every write acknowledged before the call.
    ///
    /// Tables are hard-linked where the file system allows (same device), else copied;
    /// the log up to the captured point, a new manifest and `CURRENT` are copied or
    /// written; every file and directory is fsynced. The copy is built in a sibling
    /// directory `<dest>.tmp-<pid>-<n>` and renamed to `dest` only when complete, so
    /// `dest` never appears partially written (a leftover `.tmp-` directory after a crash
    /// is never read and may be deleted). A linked table shares its disk blocks with the
    /// store: copy the backup to another device to guard against media failure.
    ///
    /// Through a read-only handle ([`Db::open_read_only`]) the copy is exactly the
    /// handle's view, taken from the files it holds open, so another process can back up
    /// a store while its application writes; nothing is written to the store.
    ///
    /// Restore: a backup is a store. Open `dest` with [`Db::open`] (which writes to it: a
    /// new manifest and log), or move it into place of a closed store first.
    ///
    /// # Errors
    /// `InvalidArgument` if `dest` exists or the store is closed; `Error::Io` if a file
    /// cannot be read or written (the destination is then left absent, unless only the
    /// final fsync of its parent directory failed); `Poisoned` if the store's log cannot
    /// be written.
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<BackupInfo> {
        let checkpoint = checkpoint::capture(&self.inner)?;
        write_dir(self.inner.fs.as_ref(), &checkpoint, dest.as_ref())
    }
}

/// A fresh sibling name for the temporary copy of `dest`.
pub(crate) fn temp_sibling(dest: &Path) -> Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = dest
        .file_name()
        .ok_or_else(|| Error::invalid(format!("{} has no file name", dest.display())))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = name.to_os_string();
    tmp.push(format!(".tmp-{}-{n}", std::process::id()));
    Ok(parent_of(dest).join(tmp))
}

/// Writes `checkpoint` into the new directory `dest` through a temporary sibling.
///
/// # Errors
/// As [`Db::backup`].
pub(crate) fn write_dir(
    fs: &dyn FileSystem,
    checkpoint: &Checkpoint,
    dest: &Path,
) -> Result<BackupInfo> {
    if fs.exists(dest)? {
        return Err(Error::invalid(format!(
            "backup destination {} exists; give a new path",
            dest.display()
        )));
    }
    let tmp = temp_sibling(dest)?;
    fs.create_dir(&tmp)?;
    let mut written = Vec::new();
    let result = fill_dir(fs, checkpoint, &tmp, &mut written).and_then(|info| {
        fs.sync_dir(&tmp)?;
        if fs.exists(dest)? {
            return Err(Error::invalid(format!(
                "backup destination {} appeared during the backup",
                dest.display()
            )));
        }
        fs.rename(&tmp, dest)?;
        fs.sync_dir(&parent_of(dest))?;
        Ok(info)
    });
    if result.is_err() && fs.exists(&tmp).unwrap_or(false) {
        // Best effort: a crash leaves the same leftover, which is never read.
        for name in &written {
            let _ = fs.remove(&tmp.join(name));
        }
        let _ = fs.remove_dir(&tmp);
    }
    result
}

/// Writes every member of `checkpoint` into `dir`, noting each name in `written`.
fn fill_dir(
    fs: &dyn FileSystem,
    checkpoint: &Checkpoint,
    dir: &Path,
    written: &mut Vec<String>,
) -> Result<BackupInfo> {
    let mut info = BackupInfo {
        seqno: checkpoint.seqno,
        ..BackupInfo::default()
    };
    for member in &checkpoint.members {
        let to = dir.join(&member.name);
        written.push(member.name.clone());
        match member.kind {
            FileKind::Table => info.tables += 1,
            FileKind::Wal => info.wal_files += 1,
            _ => {}
        }
        if let Source::Immutable(from) = &member.source {
            if fs.hard_link(from, &to).is_ok() {
                info.files_linked += 1;
                info.bytes_linked += member.len;
                continue;
            }
        }
        let mut file = fs.create(&to)?;
        match &member.source {
            Source::Immutable(from) => {
                let src = fs.open_read(from)?;
                copy_range(src.as_ref(), 0, member.len, file.as_mut(), |_| {})?;
            }
            Source::Prefix(src) => copy_range(src.as_ref(), 0, member.len, file.as_mut(), |_| {})?,
            Source::Bytes(bytes) => file.append(bytes)?,
        }
        file.sync_all()?;
        info.files_copied += 1;
        info.bytes_copied += member.len;
    }
    Ok(info)
}

#[cfg(test)]
#[path = "backup_tests.rs"]
mod tests;
