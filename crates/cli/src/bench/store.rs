//! Where `cairn bench ordered` keeps its store, and starting over with an empty one.
//!
//! A benchmark directory is a temporary directory (removed when the command ends) or the
//! `--dir` given. A given directory is only ever emptied if it is empty already or holds
//! a Cairn store (a `CURRENT` file), so pointing `--dir` at the wrong place cannot delete
//! unrelated files.

use std::path::Path;

use cairn::{Db, Options};
use cairn_harness::ScratchDir;

use crate::errors::{CliError, CliResult};

/// The file every Cairn ordered store has: it names the current manifest.
const CURRENT: &str = "CURRENT";

/// The benchmark's store directory; a temporary one is removed when this is dropped.
#[derive(Debug)]
pub struct Place {
    dir: ScratchDir,
}

impl Place {
    /// A fresh temporary directory.
    ///
    /// # Errors
    /// If it cannot be created.
    pub fn temporary() -> CliResult<Place> {
        let dir = ScratchDir::temporary("cairn-bench-")
            .map_err(|e| CliError::msg(format!("creating a temporary directory failed: {e}")))?;
        Ok(Place { dir })
    }

    /// `dir` as given; with `existing`, it must hold a store.
    ///
    /// # Errors
    /// With `existing`, if `dir` holds no store; without, if it exists, is not empty and
    /// holds no store (it is not ours to empty).
    pub fn given(dir: &Path, existing: bool) -> CliResult<Place> {
        let place = Place {
            dir: ScratchDir::given(dir),
        };
        if existing {
            if !place.has_store() {
                return Err(CliError::msg(format!(
                    "bench ordered: --use-existing-db: there is no Cairn store in {} (no {CURRENT} file); run without --use-existing-db to create one",
                    dir.display()
                )));
            }
        } else if !place.has_store() && !place.is_empty_or_missing()? {
            return Err(CliError::msg(format!(
                "bench ordered: --dir {} is not empty and holds no Cairn store; refusing to delete its files (use an empty or new directory)",
                dir.display()
            )));
        }
        Ok(place)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// True for a temporary directory.
    pub fn is_temporary(&self) -> bool {
        self.dir.is_temporary()
    }

    fn has_store(&self) -> bool {
        self.path().join(CURRENT).is_file()
    }

    fn is_empty_or_missing(&self) -> CliResult<bool> {
        match std::fs::read_dir(self.path()) {
            Ok(mut entries) => Ok(entries.next().is_none()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(CliError::msg(format!(
                "reading {} failed: {e}",
                self.path().display()
            ))),
        }
    }

    /// Removes everything in the directory (it holds a store or nothing, see
    /// [`Place::given`]), keeping the directory itself.
    ///
    /// # Errors
    /// If an entry cannot be removed.
    pub fn wipe(&self) -> CliResult<()> {
        let entries = match std::fs::read_dir(self.path()) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(CliError::msg(format!(
                    "reading {} failed: {e}",
                    self.path().display()
                )))
            }
        };
        for entry in entries {
            let path = entry
                .map_err(|e| {
                    CliError::msg(format!("reading {} failed: {e}", self.path().display()))
                })?
                .path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed
                .map_err(|e| CliError::msg(format!("removing {} failed: {e}", path.display())))?;
        }
        Ok(())
    }

    /// Opens the store in the directory.
    ///
    /// # Errors
    /// The engine's error.
    pub fn open(&self, options: &Options) -> CliResult<Db> {
        Ok(Db::open(self.path(), options.clone())?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_foreign_directory_is_never_emptied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"keep me").unwrap();
        let err = Place::given(dir.path(), false).unwrap_err().to_string();
        assert!(err.contains("refusing to delete"), "{err}");
        assert!(dir.path().join("notes.txt").exists());
        let err = Place::given(dir.path(), true).unwrap_err().to_string();
        assert!(err.contains("no Cairn store"), "{err}");
    }

    #[test]
    fn a_store_directory_is_wiped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CURRENT), b"MANIFEST-1\n").unwrap();
        std::fs::write(dir.path().join("00000000000000000002.wal"), b"").unwrap();
        let place = Place::given(dir.path(), false).unwrap();
        place.wipe().unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(Place::given(&dir.path().join("new"), false).is_ok());
    }
}
