//! Where a benchmark keeps its stores: a [`ScratchDir`] (a new temporary directory,
//! removed when dropped unless kept, or a directory given by the user, never removed),
//! and [`dir_size`], the bytes a store's files take.

use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A benchmark's directory: temporary (removed on drop) or given.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    temp: Option<TempDir>,
}

impl ScratchDir {
    /// A new temporary directory under the system's, its name starting with `prefix`.
    ///
    /// # Errors
    /// If it cannot be created.
    pub fn temporary(prefix: &str) -> io::Result<ScratchDir> {
        let temp = tempfile::Builder::new().prefix(prefix).tempdir()?;
        Ok(ScratchDir::from_temp(temp))
    }

    /// A new temporary directory in `parent` (created if missing), its name starting with
    /// `prefix`.
    ///
    /// # Errors
    /// If either cannot be created.
    pub fn temporary_in(parent: &Path, prefix: &str) -> io::Result<ScratchDir> {
        std::fs::create_dir_all(parent)?;
        let temp = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        Ok(ScratchDir::from_temp(temp))
    }

    fn from_temp(temp: TempDir) -> ScratchDir {
        ScratchDir {
            path: temp.path().to_path_buf(),
            temp: Some(temp),
        }
    }

    /// `dir` as given: nothing is checked, created or ever removed.
    pub fn given(dir: &Path) -> ScratchDir {
        ScratchDir {
            path: dir.to_path_buf(),
            temp: None,
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True for a temporary directory.
    pub fn is_temporary(&self) -> bool {
        self.temp.is_some()
    }

    /// Keeps a temporary directory on disk (it is no longer removed on drop) and returns
    /// its path; a given directory's path is returned as it is.
    pub fn keep(self) -> PathBuf {
        match self.temp {
            Some(temp) => temp.keep(),
            None => self.path,
        }
    }
}

/// How [`dir_size`] counts a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Its length (`st_size`), as `du --apparent-size` and Sparkey's `bench.c` count.
    Apparent,
    /// The smaller of its length and its allocated blocks, so preallocated or sparse files
    /// (write-ahead logs, memory-mapped files) count what they hold (the peer suite's
    /// measure, and its Go driver's).
    Allocated,
}

/// A directory [`dir_size`] could not read.
#[derive(Debug)]
pub struct WalkError {
    /// The directory.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reading {} failed: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for WalkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Bytes of every file under `dir`, recursively, counted by `measure`; links are not
/// followed. A file removed while the walk runs (a finished compaction's input) counts
/// as 0.
///
/// # Errors
/// If `dir` or a directory under it cannot be read.
pub fn dir_size(dir: &Path, measure: Measure) -> Result<u64, WalkError> {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let failed = |source| WalkError {
            path: d.clone(),
            source,
        };
        for entry in std::fs::read_dir(&d).map_err(failed)? {
            let entry = entry.map_err(failed)?;
            match entry.metadata() {
                Ok(m) if m.is_dir() => pending.push(entry.path()),
                Ok(m) if m.is_file() => {
                    total += match measure {
                        Measure::Apparent => m.len(),
                        Measure::Allocated => m.len().min(m.blocks().saturating_mul(512)),
                    }
                }
                Ok(_) | Err(_) => {}
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn temporary_directories_go_unless_kept_and_given_ones_stay() {
        let parent = tempfile::tempdir().unwrap();
        let gone = ScratchDir::temporary_in(&parent.path().join("new"), "t-").unwrap();
        let path = gone.path().to_path_buf();
        assert!(gone.is_temporary() && path.is_dir());
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("t-"));
        drop(gone);
        assert!(!path.exists());

        let kept = ScratchDir::temporary_in(parent.path(), "t-").unwrap();
        let path = kept.keep();
        assert!(path.is_dir());

        let given = ScratchDir::given(&path);
        assert!(!given.is_temporary());
        drop(given);
        assert!(path.is_dir());
    }

    #[test]
    fn sizes_add_up_every_file_below() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 1000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub").join("b"), vec![2u8; 24]).unwrap();
        assert_eq!(dir_size(dir.path(), Measure::Apparent).unwrap(), 1024);
        // A sparse file holds nothing.
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(1 << 20).unwrap();
        assert_eq!(
            dir_size(dir.path(), Measure::Apparent).unwrap(),
            1024 + (1 << 20)
        );
        assert!(dir_size(dir.path(), Measure::Allocated).unwrap() < 1 << 20);
        let err = dir_size(&dir.path().join("missing"), Measure::Apparent).unwrap_err();
        assert!(err.to_string().starts_with("reading "), "{err}");
    }
}
