//! fjall 3.1: one keyspace with `KeyspaceCreateOptions::default()` (LZ4, no key-value
//! separation) and a cache of `--cache-mb`. fjall writes each batch's journal entry to the
//! OS before the commit returns (`manual_journal_persist(false)`, the default) and does not
//! fsync it.

use std::path::Path;

use anyhow::Context as _;
use fjall::{
    Database, Keyspace, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace,
    Readable as _, SingleWriterTxDatabase, SingleWriterTxKeyspace,
};

use super::{counter, counter_bytes, walk, Attempt, Config, Decide, Op, Store, TxStore};

/// Configuration, for the report.
pub const CONFIG: &str = "defaults (LZ4); cache --cache-mb";
/// Durability, for the report.
pub const DURABILITY: &str =
    "default: journal written to the OS per commit (PersistMode::Buffer), no fsync";

/// Configuration of the optimistic transactions, for the report.
pub const TX_CONFIG_OPTIMISTIC: &str =
    "OptimisticTxDatabase, defaults (LZ4); cache --cache-mb; write_tx (conflicts on keys read or written)";
/// Configuration of the single-writer transactions, for the report.
pub const TX_CONFIG_SINGLE_WRITER: &str =
    "SingleWriterTxDatabase, defaults (LZ4); cache --cache-mb; write_tx (one at a time)";

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

    /// fjall 3.1 has no documented full compaction; its keyspace's `rotate_memtable_and_wait`
    /// and `major_compact` (public, hidden from its docs, used by its own tests) flush the
    /// memtable and merge every table, blocking until done.
    fn compact(&self) -> anyhow::Result<()> {
        self.ks.rotate_memtable_and_wait()?;
        self.ks.major_compact()?;
        Ok(())
    }
}

/// The values of `keys` read by `get`, as counters.
fn read_all(
    keys: &[&[u8]],
    mut get: impl FnMut(&[u8]) -> fjall::Result<Option<fjall::UserValue>>,
) -> anyhow::Result<Vec<Option<u64>>> {
    keys.iter()
        .map(|&k| get(k)?.map(|v| counter(&v)).transpose())
        .collect()
}

/// The key `decide` named by its index.
fn key_at<'a>(keys: &[&'a [u8]], i: usize) -> anyhow::Result<&'a [u8]> {
    keys.get(i)
        .copied()
        .context("decide named a key it was not given")
}

/// fjall's `OptimisticTxDatabase` and its one keyspace: a write transaction's commit fails
/// with `Conflict` when another committed after it began and wrote a key it read or wrote.
pub struct FjallOptimistic {
    db: OptimisticTxDatabase,
    ks: OptimisticTxKeyspace,
}

impl FjallOptimistic {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<FjallOptimistic> {
        let db = OptimisticTxDatabase::builder(dir)
            .cache_size(config.cache_bytes as u64)
            .open()?;
        let ks = db.keyspace("bench", KeyspaceCreateOptions::default)?;
        Ok(FjallOptimistic { db, ks })
    }
}

impl TxStore for FjallOptimistic {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let mut tx = self.db.write_tx()?;
        for &(k, v) in entries {
            tx.insert(&self.ks, k, counter_bytes(v));
        }
        tx.commit()?
            .map_err(|_| anyhow::anyhow!("fjall: the load conflicted"))
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        self.ks.get(key)?.map(|v| counter(&v)).transpose()
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        let mut tx = self.db.write_tx()?;
        let values = read_all(keys, |k| tx.get(&self.ks, k))?;
        let mut writes = Vec::new();
        decide(&values, &mut writes)?;
        for (i, v) in writes {
            tx.insert(&self.ks, key_at(keys, i)?, counter_bytes(v));
        }
        Ok(match tx.commit()? {
            Ok(()) => Attempt::Committed,
            Err(_) => Attempt::Conflict,
        })
    }
}

/// fjall's `SingleWriterTxDatabase` and its one keyspace: write transactions run one at a
/// time (a lock held from `write_tx` to the commit), so none conflicts.
pub struct FjallSingleWriter {
    db: SingleWriterTxDatabase,
    ks: SingleWriterTxKeyspace,
}

impl FjallSingleWriter {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<FjallSingleWriter> {
        let db = SingleWriterTxDatabase::builder(dir)
            .cache_size(config.cache_bytes as u64)
            .open()?;
        let ks = db.keyspace("bench", KeyspaceCreateOptions::default)?;
        Ok(FjallSingleWriter { db, ks })
    }
}

impl TxStore for FjallSingleWriter {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let mut tx = self.db.write_tx();
        for &(k, v) in entries {
            tx.insert(&self.ks, k, counter_bytes(v));
        }
        tx.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        self.ks.get(key)?.map(|v| counter(&v)).transpose()
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        let mut tx = self.db.write_tx();
        let values = read_all(keys, |k| tx.get(&self.ks, k))?;
        let mut writes = Vec::new();
        decide(&values, &mut writes)?;
        for (i, v) in writes {
            tx.insert(&self.ks, key_at(keys, i)?, counter_bytes(v));
        }
        tx.commit()?;
        Ok(Attempt::Committed)
    }
}
