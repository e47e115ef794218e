//! What a store path holds, judged by file names only (nothing is opened or read): used
//! to refuse creating a store among unrelated files, and to tell "no store here" (exit 1)
//! from a damaged store (exit 3) before `verify`.
//!
//! A store's files are `CURRENT`, `MANIFEST-<id>`, `<id>.wal`, `<id>.sst` and
//! `<id>.blob` (ids are 20 decimal digits, as the engine names them). `LOCK` and
//! `CURRENT.tmp` are the engine's too, but hold no data: a directory with only those is
//! as good as empty (a first open that stopped before writing anything leaves them).

use std::io;
use std::path::Path;

use crate::errors::{CliError, CliResult};

/// Names the engine uses for bookkeeping only.
const BOOKKEEPING: [&str; 2] = ["LOCK", "CURRENT.tmp"];

/// What is at a store path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// Nothing: a store can be created there.
    Missing,
    /// Something that is not a directory (a file, a dangling link).
    NotADirectory,
    /// A directory with no entries but the engine's bookkeeping files.
    Empty,
    /// A store: `CURRENT` is there (whether the store is intact is the engine's call).
    Store,
    /// Store files without `CURRENT`: a damaged store (or a first open that crashed
    /// before naming its manifest), never to be treated as empty.
    StoreFilesWithoutCurrent,
    /// Other entries and no store file; `example` is the first of them by name.
    Foreign { example: String, entries: usize },
}

impl Contents {
    /// Looks at `path`.
    ///
    /// # Errors
    /// If `path` cannot be examined or listed (permissions, I/O).
    pub fn of(path: &Path) -> CliResult<Contents> {
        let listing = match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => std::fs::read_dir(path),
            Ok(_) => return Ok(Contents::NotADirectory),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A dangling symbolic link is something, not nothing.
                return Ok(if std::fs::symlink_metadata(path).is_ok() {
                    Contents::NotADirectory
                } else {
                    Contents::Missing
                });
            }
            Err(e) => return Err(listing_failed(path, &e)),
        };
        let mut others = Vec::new();
        let mut store_files = false;
        for entry in listing.map_err(|e| listing_failed(path, &e))? {
            let name = entry.map_err(|e| listing_failed(path, &e))?.file_name();
            let name = name.to_string_lossy();
            if name == "CURRENT" {
                return Ok(Contents::Store);
            }
            if is_store_file(&name) {
                store_files = true;
            } else if !BOOKKEEPING.contains(&name.as_ref()) {
                others.push(name.into_owned());
            }
        }
        Ok(if store_files {
            Contents::StoreFilesWithoutCurrent
        } else if let Some(example) = others.iter().min() {
            Contents::Foreign {
                example: example.clone(),
                entries: others.len(),
            }
        } else {
            Contents::Empty
        })
    }

    /// True if there is a store, intact or not, so `verify` has something to check.
    pub fn has_store(&self) -> bool {
        matches!(self, Contents::Store | Contents::StoreFilesWithoutCurrent)
    }
}

fn listing_failed(path: &Path, e: &io::Error) -> CliError {
    CliError::msg(format!("list {} failed: {e}", path.display()))
}

/// `MANIFEST-<id>`, `<id>.wal`, `<id>.sst` or `<id>.blob`, `<id>` being 20 digits.
fn is_store_file(name: &str) -> bool {
    let id = name
        .strip_prefix("MANIFEST-")
        .or_else(|| name.strip_suffix(".wal"))
        .or_else(|| name.strip_suffix(".sst"))
        .or_else(|| name.strip_suffix(".blob"));
    id.is_some_and(|id| id.len() == 20 && id.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn store_file_names_are_the_engines() {
        for name in [
            "MANIFEST-00000000000000000001",
            "00000000000000000002.wal",
            "00000000000000000003.sst",
            "00000000000000000004.blob",
        ] {
            assert!(is_store_file(name), "{name}");
        }
        for name in [
            "notes.wal",
            "MANIFEST-1",
            "0000000000000000000x.sst",
            "LOCK",
        ] {
            assert!(!is_store_file(name), "{name}");
        }
    }

    #[test]
    fn classifies_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        assert_eq!(Contents::of(&path.join("nope")).unwrap(), Contents::Missing);
        assert_eq!(Contents::of(path).unwrap(), Contents::Empty);
        std::fs::write(path.join("LOCK"), b"").unwrap();
        assert_eq!(Contents::of(path).unwrap(), Contents::Empty);
        std::fs::write(path.join("b.txt"), b"x").unwrap();
        std::fs::write(path.join("a.txt"), b"x").unwrap();
        assert_eq!(
            Contents::of(path).unwrap(),
            Contents::Foreign {
                example: "a.txt".into(),
                entries: 2
            }
        );
        assert_eq!(
            Contents::of(&path.join("a.txt")).unwrap(),
            Contents::NotADirectory
        );
        std::fs::write(path.join("00000000000000000002.wal"), b"").unwrap();
        assert_eq!(
            Contents::of(path).unwrap(),
            Contents::StoreFilesWithoutCurrent
        );
        std::fs::write(path.join("CURRENT"), b"").unwrap();
        assert_eq!(Contents::of(path).unwrap(), Contents::Store);
    }
}
