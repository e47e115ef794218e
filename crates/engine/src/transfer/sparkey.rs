//! [`export`]: a snapshot of a keyspace → a Sparkey log and index (the constant store);
//! [`import`]: a Sparkey log → a keyspace.
//!
//! Export writes both files under temporary names beside the targets (`<name>.tmp.<pid>.<n>`),
//! fsyncs them (the log writer's `close`, the index writer's atomic write), then renames
//! the log and then the index into place and fsyncs the directory. A failure before the
//! renames removes the temporary files and leaves the targets untouched. A crash between
//! the two renames leaves the new log beside the old index: a reader detects the pair as
//! mismatched (their file identifiers differ) rather than serving wrong data.
//!
//! Import replays the log's PUTs and DELETEs in log order in bounded batches, so the
//! keyspace ends as the log's final state for every key the log mentions (keys the log
//! never mentions are kept). An index given with the log is only checked to belong to it.

use std::fs;
use std::path::{Path, PathBuf};

use super::{find_keyspace, stage, Batcher, Entry, Progress, RestoreOptions, PROGRESS_EVERY};
use crate::atomic;
use crate::db::Db;
use crate::db::{Readable, Snapshot};
use crate::error::{Error, Result};
use crate::hash::{self, EntryKind, IndexOptions, LogOptions, LogReader, LogWriter, Reader};

/// Options of [`export`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExportOptions {
    /// The log's compression and block size (default: uncompressed).
    pub log: LogOptions,
    /// The index's hash width (default: chosen by size). The build is always fresh.
    pub index: IndexOptions,
}

impl ExportOptions {
    /// Sets the log options.
    pub fn log(mut self, log: LogOptions) -> Self {
        self.log = log;
        self
    }

    /// Sets the index options.
    pub fn index(mut self, index: IndexOptions) -> Self {
        self.index = index;
        self
    }
}

/// Temporary files removed on drop unless committed.
struct Staged {
    files: Vec<PathBuf>,
}

impl Staged {
    /// A fresh temporary name beside `target` (the placeholder file is replaced by the
    /// writer's own atomic creation).
    fn name_for(&mut self, target: &Path) -> Result<PathBuf> {
        let (tmp, file) = atomic::temp_file(target)?;
        drop(file);
        self.files.push(tmp.clone());
        Ok(tmp)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = fs::remove_file(f);
        }
    }
}

/// Exports the entries of keyspace `keyspace` visible at `snapshot` to the Sparkey log at
/// `log_path` (which must end in `.spl`) and its index (`.spi`), replacing existing files
/// (see the module docs for the crash behaviour). Keys and values only: Sparkey files
/// carry no attributes. Calls `progress` every few thousand entries and at the end
/// (bytes: key and value bytes written); returns the totals.
///
/// # Errors
/// `InvalidArgument` for a missing keyspace, a log name without `.spl` or bad log
/// options (block size); `Corruption` if a table is damaged; `Io`.
pub fn export(
    db: &Db,
    keyspace: &str,
    snapshot: &Snapshot,
    log_path: &Path,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Progress> {
    let index_path = hash::index_path_for(log_path).ok_or_else(|| {
        Error::invalid(format!(
            "export: the log name {} must end with .spl",
            log_path.display()
        ))
    })?;
    let ks = find_keyspace(db, keyspace)?;
    let mut staged = Staged { files: Vec::new() };
    let tmp_log = staged.name_for(log_path)?;
    let tmp_index = staged.name_for(&index_path)?;

    let mut writer = LogWriter::create(&tmp_log, &options.log)?;
    let mut done = Progress::default();
    for item in snapshot.iter(&ks) {
        let (key, value) = item?;
        writer.put(&key, &value)?;
        done.entries += 1;
        done.bytes += (key.len() + value.len()) as u64;
        if done.entries.is_multiple_of(PROGRESS_EVERY) {
            progress(done);
        }
    }
    writer.close()?;
    let index_options = options.index.clone().fresh(true);
    hash::write_index(&tmp_index, &tmp_log, &index_options)?;

    atomic::commit(&tmp_log, log_path)?;
    atomic::commit(&tmp_index, &index_path)?;
    staged.files.clear();
    progress(done);
    Ok(done)
}

/// Options of [`import`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The log's index: if given, it must belong to the log (checked before any write).
    pub index: Option<PathBuf>,
    /// Target keyspace (created if missing) and batch bounds.
    pub restore: RestoreOptions,
}

impl ImportOptions {
    /// Sets the index to check.
    pub fn index(mut self, index: impl Into<PathBuf>) -> Self {
        self.index = Some(index.into());
        self
    }

    /// Sets the target keyspace.
    pub fn keyspace(mut self, name: impl Into<String>) -> Self {
        self.restore.keyspace = name.into();
        self
    }
}

/// What an import applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportStats {
    /// PUTs applied.
    pub puts: u64,
    /// DELETEs applied.
    pub deletes: u64,
    /// Key and value bytes applied.
    pub bytes: u64,
}

/// Imports the Sparkey log at `log_path` into keyspace `options.restore.keyspace` of
/// `db`: every PUT and DELETE in log order, in bounded batches; durable when it returns.
/// Calls `progress` (entries: log entries applied; bytes: their key and value bytes)
/// every few thousand entries and at the end.
///
/// # Errors
/// `Corruption` / `UnsupportedVersion` for a damaged log, `IdentifierMismatch` for an
/// index of another log (nothing is written then); `Io`, `Poisoned`, `Stopped` from the
/// writes. Batches committed before an error stay.
pub fn import(
    db: &Db,
    log_path: &Path,
    options: &ImportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportStats> {
    if let Some(index) = &options.index {
        Reader::open(index, log_path)?;
    }
    let log = LogReader::open(log_path)?;
    let ks = db.keyspace(&options.restore.keyspace)?;
    let mut batcher = Batcher::new(db, &options.restore);
    let mut stats = ImportStats::default();
    let mut entry = Entry::default();
    for item in log.iter() {
        let item = item?;
        let record = stats.puts + stats.deletes + 1;
        match item.kind {
            EntryKind::Put => {
                entry.key = item.key;
                entry.value = item.value;
                stage(batcher.batch(), &ks, &entry, record)?;
                stats.puts += 1;
            }
            EntryKind::Delete => {
                batcher.batch().remove(&ks, &item.key);
                entry.key = item.key;
                entry.value.clear();
                stats.deletes += 1;
            }
        }
        let len = entry.key.len() + entry.value.len();
        stats.bytes += len as u64;
        batcher.added(len)?;
        if record.is_multiple_of(PROGRESS_EVERY) {
            progress(Progress {
                entries: record,
                bytes: stats.bytes,
            });
        }
    }
    batcher.finish()?;
    progress(Progress {
        entries: stats.puts + stats.deletes,
        bytes: stats.bytes,
    });
    Ok(stats)
}
