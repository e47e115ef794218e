//! The `cairn` backend: the ordered store (`cairn::Db`, default keyspace) opened in the
//! load's directory with the `--durability` of the run (created if missing, but not in a
//! directory holding other files, as for `cairn put`; an existing store is used as it is).
//!
//! The preload commits its batches with `Buffered` durability whatever the run's mode
//! and ends with `flush_wal(true)`, so it is quick even under `sync` and the timed phase
//! starts with every preloaded write durable (`durable_seqno == last_seqno`).

use std::path::Path;

use cairn::{Db, Durability, Keyspace, Options, DEFAULT_KEYSPACE};

use super::Backend;
use crate::errors::CliResult;

/// An open ordered store.
pub struct Ordered {
    db: Db,
    ks: Keyspace,
}

impl Ordered {
    /// Opens (or creates) the store in `dir`.
    ///
    /// # Errors
    /// The engine's error; `dir` holds other files and no store.
    pub fn open(dir: &Path, durability: Durability) -> CliResult<Ordered> {
        crate::store::check_creatable(dir)?;
        let options = Options::default().durability(durability);
        let db = Db::open(dir, options)?;
        let ks = db.keyspace(DEFAULT_KEYSPACE)?;
        Ok(Ordered { db, ks })
    }
}

impl Backend for Ordered {
    fn load(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> CliResult<()> {
        let mut batch = self.db.batch();
        for (k, v) in entries {
            batch.insert(&self.ks, k, v);
        }
        Ok(batch.commit_with(Some(Durability::Buffered))?)
    }

    fn end_preload(&self) -> CliResult<()> {
        Ok(self.db.flush_wal(true)?)
    }

    fn get(&self, key: &[u8], buf: &mut Vec<u8>) -> CliResult<bool> {
        Ok(match self.ks.get(key)? {
            Some(v) => {
                *buf = v;
                true
            }
            None => false,
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()> {
        Ok(self.ks.insert(key, value)?)
    }

    fn delete(&self, key: &[u8]) -> CliResult<()> {
        Ok(self.ks.remove(key)?)
    }

    fn seqnos(&self) -> Option<(u64, u64)> {
        // Durable first: the gap read is never smaller than it was at the later instant.
        let durable = self.db.durable_seqno();
        Some((self.db.last_seqno(), durable))
    }

    fn stats(&self) -> Option<cairn::Stats> {
        Some(self.db.stats())
    }

    fn close(self: Box<Self>) -> CliResult<()> {
        let Ordered { db, ks } = *self;
        drop(ks);
        Ok(db.close()?)
    }
}
