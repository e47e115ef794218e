//! The `constant` backend: the constant store (Sparkey-format files through
//! `cairn::hash`), served read-only.
//!
//! The preload appends its entries to `load.spl` in the load's directory with a
//! [`LogWriter`] (uncompressed); [`Backend::end_preload`] closes the log, builds
//! `load.spi` with [`write_index`] and opens a [`Reader`] that every load thread shares.
//! Writes and deletes are refused (the flags are checked before a load starts, so this
//! is a second line of defence).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader};
use parking_lot::Mutex;

use super::Backend;
use crate::errors::{CliError, CliResult};

/// Name of the log file in the load's directory.
pub const LOG_FILE: &str = "load.spl";
/// Name of the index file in the load's directory.
pub const INDEX_FILE: &str = "load.spi";

/// A constant store being built, then served.
pub struct Constant {
    log_path: PathBuf,
    index_path: PathBuf,
    /// The log while the preload appends to it.
    writer: Mutex<Option<LogWriter>>,
    /// The reader, once the index is built.
    reader: OnceLock<Reader>,
}

impl Constant {
    /// Creates an empty log in `dir` (replacing an earlier `load.spl`).
    ///
    /// # Errors
    /// The engine's error.
    pub fn create(dir: &Path) -> CliResult<Constant> {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::msg(format!("creating {} failed: {e}", dir.display())))?;
        let log_path = dir.join(LOG_FILE);
        let writer = LogWriter::create(&log_path, &LogOptions::default())?;
        Ok(Constant {
            index_path: dir.join(INDEX_FILE),
            log_path,
            writer: Mutex::new(Some(writer)),
            reader: OnceLock::new(),
        })
    }

    fn read_only() -> CliError {
        CliError::msg("load: the constant backend is read-only (use --mix read=100)")
    }
}

impl Backend for Constant {
    fn load(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> CliResult<()> {
        let mut guard = self.writer.lock();
        let writer = guard
            .as_mut()
            .ok_or_else(|| CliError::msg("load: the constant store is already built"))?;
        for (k, v) in entries {
            writer.put(k, v)?;
        }
        Ok(())
    }

    fn end_preload(&self) -> CliResult<()> {
        if let Some(writer) = self.writer.lock().take() {
            writer.close()?;
        }
        let options = IndexOptions::default().fresh(true);
        write_index(&self.index_path, &self.log_path, &options)?;
        let reader = Reader::open_with(&self.index_path, &self.log_path, &ReadOptions::default())?;
        let _ = self.reader.set(reader);
        Ok(())
    }

    fn get(&self, key: &[u8], buf: &mut Vec<u8>) -> CliResult<bool> {
        let reader = self
            .reader
            .get()
            .ok_or_else(|| CliError::msg("load: the constant store is not built yet"))?;
        Ok(reader.get_into(key, buf)?)
    }

    fn put(&self, _key: &[u8], _value: &[u8]) -> CliResult<()> {
        Err(Constant::read_only())
    }

    fn delete(&self, _key: &[u8]) -> CliResult<()> {
        Err(Constant::read_only())
    }

    fn close(self: Box<Self>) -> CliResult<()> {
        if let Some(writer) = self.writer.lock().take() {
            writer.close()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn builds_then_serves_and_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let c = Constant::create(dir.path()).unwrap();
        let mut buf = Vec::new();
        assert!(c.get(b"k1", &mut buf).is_err(), "read before the build");
        c.load(&[
            (b"k1".to_vec(), b"v1".to_vec()),
            (b"k2".to_vec(), b"v2".to_vec()),
        ])
        .unwrap();
        c.end_preload().unwrap();
        assert!(c.get(b"k2", &mut buf).unwrap());
        assert_eq!(buf, b"v2");
        assert!(!c.get(b"k3", &mut buf).unwrap());
        assert!(c.put(b"k1", b"x").is_err());
        assert!(c.delete(b"k1").is_err());
        assert!(dir.path().join(INDEX_FILE).is_file());
        Box::new(c).close().unwrap();
    }
}
