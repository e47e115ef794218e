//! The file-name convention of the reference tool: the index of `x.spl` is `x.spi`.
//!
//! Works on the raw bytes of the path, so names that are not UTF-8 work too.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

fn swap_suffix(path: &Path, from: &[u8], to: &[u8]) -> Option<PathBuf> {
    let stem = path.as_os_str().as_bytes().strip_suffix(from)?;
    let mut name = stem.to_vec();
    name.extend_from_slice(to);
    Some(PathBuf::from(OsString::from_vec(name)))
}

/// `x.spi` → `x.spl`; `None` if the name does not end with `.spi`.
pub fn log_for_index(index: &Path) -> Option<PathBuf> {
    swap_suffix(index, b".spi", b".spl")
}

/// `x.spl` → `x.spi`; `None` if the name does not end with `.spl`.
pub fn index_for_log(log: &Path) -> Option<PathBuf> {
    swap_suffix(log, b".spl", b".spi")
}

/// The path exactly as given on the command line, as bytes (for output).
pub fn raw(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}
