//! fjall 3.1: one keyspace with `KeyspaceCreateOptions::default()` (LZ4, no key-value
//! separation) and a cache of `--cache-mb`. fjall writes each batch's journal entry to the
//! OS before the commit returns (`manual_journal_persist(false)`, the default) and does not
//! fsync it.

use std::path::Path;

use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use super::{walk, Config, Op, Store};

/// Configuration, for the report.
pub const CONFIG: &str = "defaults (LZ4); cache --cache-mb";
/// Durability, for the report.
pub const DURABILITY: &str =
    "default: journal written to the OS per commit (PersistMode::Buffer), no fsync";

/// An open fjall database and its one keyspace.
pub struct FjallStore {
    db: Database,
    ks: Keyspace,
}

impl FjallStore {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<FjallStore> {
        let db = Database::builder(dir)
            .cache_size(config.cache_bytes as u64)
            .open()?;
        let ks = db.keyspace("bench", KeyspaceCreateOptions::default)?;
        Ok(FjallStore { db, ks })
    }
}

impl Store for FjallStore {
    fn write(&self, ops: &[Op<'_>]) -> anyhow::Result<()> {
        if let [op] = ops {
            match *op {
                Op::Put(k, v) => self.ks.insert(k, v)?,
                Op::Delete(k) => self.ks.remove(k)?,
            }
            return Ok(());
        }
        let mut batch = self.db.batch();
        for op in ops {
            match *op {
                Op::Put(k, v) => batch.insert(&self.ks, k, v),
                Op::Delete(k) => batch.remove(&self.ks, k),
            }
        }
        batch.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        match self.ks.get(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        walk(self.ks.iter(), reverse, |item| {
            let (k, v) = item.into_inner()?;
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
        for item in self.ks.range(key..).take(limit) {
            let (k, v) = item.into_inner()?;
            visit(&k, &v);
            n += 1;
        }
        Ok(n)
    }
}
