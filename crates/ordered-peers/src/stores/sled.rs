//! sled 0.34: the default tree, a cache of `--cache-mb`, batches applied with
//! `apply_batch`. sled keeps writes in an in-process log buffer that a background thread
//! writes out and fsyncs every 500 ms (`flush_every_ms`, the default): a process crash can
//! lose the last 500 ms of commits, which is weaker than every other store here.

use std::path::Path;

use super::{walk, Config, Op, Store};

/// Configuration, for the report.
pub const CONFIG: &str = "defaults; cache --cache-mb";
/// Durability, for the report.
pub const DURABILITY: &str =
    "in-process log buffer, written and fsynced every 500 ms (flush_every_ms default)";

/// An open sled database.
pub struct SledStore {
    db: sled::Db,
}

impl SledStore {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<SledStore> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(config.cache_bytes as u64)
            .open()?;
        Ok(SledStore { db })
    }
}

impl Store for SledStore {
    fn write(&self, ops: &[Op<'_>]) -> anyhow::Result<()> {
        if let [op] = ops {
            match *op {
                Op::Put(k, v) => {
                    self.db.insert(k, v)?;
                }
                Op::Delete(k) => {
                    self.db.remove(k)?;
                }
            }
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for op in ops {
            match *op {
                Op::Put(k, v) => batch.insert(k, v),
                Op::Delete(k) => batch.remove(k),
            }
        }
        self.db.apply_batch(batch)?;
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        match self.db.get(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        walk(self.db.iter(), reverse, |item| {
            let (k, v) = item?;
            visit(&k, &v);
            Ok(())
        })
    }

    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize> {
        let mut n = 0;
        for item in self.db.range(key..).take(limit) {
            let (k, v) = item?;
            visit(&k, &v);
            n += 1;
        }
        Ok(n)
    }
}
