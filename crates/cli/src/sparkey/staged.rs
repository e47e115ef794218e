//! Writing a log/index pair under temporary names and renaming both into place at the end,
//! so a failed `build` or `rewrite` never leaves a half-written pair at the final names.
//!
//! The temporary files live in the target's directory (renames stay on one file system)
//! and are named `.<name>.cairn-tmp.<pid>`. Dropping a [`StagedPair`] that was not
//! committed removes them. An index is tied to its log by the file identifier in both
//! headers, not by name, so renaming the pair keeps it valid.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::errors::{CliError, CliResult};

use super::names;

/// A log/index pair being written under temporary names.
#[derive(Debug)]
pub struct StagedPair {
    log: PathBuf,
    index: PathBuf,
    tmp_log: PathBuf,
    tmp_index: PathBuf,
    committed: bool,
}

fn temp_name(target: &Path) -> PathBuf {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut name = OsString::from(".");
    name.push(target.file_name().unwrap_or_else(|| "cairn".as_ref()));
    name.push(format!(".cairn-tmp.{}", std::process::id()));
    dir.join(name)
}

impl StagedPair {
    /// Prepares to write `log` (which must end in `.spl`) and its index.
    pub fn new(log: &Path) -> CliResult<StagedPair> {
        let index = names::index_for_log(log)
            .ok_or_else(|| CliError::msg("log filename must end with .spl"))?;
        Ok(StagedPair {
            tmp_log: temp_name(log),
            tmp_index: temp_name(&index),
            log: log.to_path_buf(),
            index,
            committed: false,
        })
    }

    /// Where to write the log.
    pub fn tmp_log(&self) -> &Path {
        &self.tmp_log
    }

    /// Where to write the index.
    pub fn tmp_index(&self) -> &Path {
        &self.tmp_index
    }

    /// The final log name.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The final index name.
    pub fn index(&self) -> &Path {
        &self.index
    }

    /// Renames both files to their final names (log first, then index).
    pub fn commit(mut self) -> CliResult<()> {
        for (tmp, target) in [(&self.tmp_log, &self.log), (&self.tmp_index, &self.index)] {
            fs::rename(tmp, target).map_err(|e| {
                CliError::msg(format!(
                    "rename {} to {} failed: {e}",
                    tmp.display(),
                    target.display()
                ))
            })?;
        }
        self.committed = true;
        // Make the renames durable; the files themselves were synced by the engine.
        if let Some(dir) = self.log.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = fs::File::open(dir).and_then(|d| d.sync_all());
        } else {
            let _ = fs::File::open(".").and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

impl Drop for StagedPair {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp_log);
            let _ = fs::remove_file(&self.tmp_index);
        }
    }
}
