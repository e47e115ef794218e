//! Crash-safe file creation: write a temporary file in the target's directory, fsync it,
//! rename it over the target, fsync the directory.
//!
//! Invariant: at every instant the target path names either the complete old file or the
//! complete new one, never a partial write; a crash leaves at most a stray temporary file
//! (named `<target>.tmp.<pid>.<n>`), which is never read.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The directory holding `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fsyncs the directory holding `path`, making a rename or creation in it durable.
pub fn sync_parent_dir(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    let handle = File::open(&dir).map_err(|e| Error::io(&dir, "open directory", e))?;
    handle
        .sync_all()
        .map_err(|e| Error::io(&dir, "fsync directory", e))
}

/// Creates a fresh temporary file beside `target`.
pub fn temp_file(target: &Path) -> Result<(PathBuf, File)> {
    let mut name = target
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    name.push(format!(".tmp.{}.{n}", std::process::id()));
    let tmp = parent_dir(target).join(name);
    let file = OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, "create", e))?;
    Ok((tmp, file))
}

/// Moves a synced temporary file over `target` and makes the rename durable.
pub fn commit(tmp: &Path, target: &Path) -> Result<()> {
    fs::rename(tmp, target).map_err(|e| Error::io(target, "rename", e))?;
    sync_parent_dir(target)
}

/// Writes `target` atomically with the bytes produced by `fill`.
pub fn write_file(
    target: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let (tmp, file) = temp_file(target)?;
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        fill(&mut w).map_err(|e| Error::io(&tmp, "write", e))?;
        w.flush().map_err(|e| Error::io(&tmp, "write", e))?;
        drop(w);
        file.sync_all().map_err(|e| Error::io(&tmp, "fsync", e))?;
        commit(&tmp, target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
