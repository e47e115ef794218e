//! Cairn's ordered store: `Durability::Buffered` (every commit's log record is written to
//! the OS before the call returns, not fsynced), a block cache of `--cache-mb`, and the
//! value log for values of 4 KiB and more (the README's recommended setting; 100-byte
//! values stay inline). Everything else is `Options::default()`, except the memtable size
//! when `--cairn-memtable-mb` sets it, table reads through memory maps with
//! `--cairn-mmap-reads` and the block compression with `--cairn-compression` (the report's
//! configuration column then says so).

use std::path::Path;

use anyhow::Context as _;
use cairn::{Db, Durability, Isolation, Keyspace, Options, TransactionOptions};

use super::{counter, counter_bytes, Attempt, Config, Decide, Op, Store, TxStore};

/// Configuration, for the report.
pub const CONFIG: &str = "defaults; block cache --cache-mb; value log for values >= 4 KiB";
/// Durability, for the report.
pub const DURABILITY: &str = "Durability::Buffered: log written to the OS per commit, no fsync";
/// Configuration of the transaction workloads, for the report.
pub const TX_CONFIG: &str =
    "defaults; block cache --cache-mb; Db::transaction (snapshot isolation); Keyspace::compare_and_swap";
/// Configuration of the serializable transaction workloads, for the report.
pub const TX_CONFIG_SERIALIZABLE: &str =
    "defaults; block cache --cache-mb; Db::transaction_with(Isolation::Serializable); Keyspace::compare_and_swap";
/// A reader's open, for the report.
pub const READ_ONLY_API: &str = "Db::open_read_only (block cache --cache-mb)";
/// A follower's open, for the report.
pub const FOLLOWER_API: &str =
    "Db::open_follower (block cache --cache-mb), refresh() by the reader";

/// An open Cairn store and its one keyspace.
pub struct CairnStore {
    db: Db,
    ks: Keyspace,
}

impl CairnStore {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<CairnStore> {
        let mut options = Options::default()
            .durability(Durability::Buffered)
            .block_cache_size(config.cache_bytes)
            .blob_threshold(Some(4 << 10))
            .mmap_reads(config.cairn_mmap_reads);
        if let Some(compression) = config.cairn_compression {
            options.compression = compression;
        }
        if let Some(bytes) = config.cairn_memtable_bytes {
            options.memtable_size = bytes;
        }
        let db = Db::open(dir, options)?;
        let ks = db.keyspace("bench")?;
        Ok(CairnStore { db, ks })
    }

    /// Opens the store in `dir` read-only (`Db::open_read_only`), or as a follower
    /// (`Db::open_follower`, with no refresh thread: [`Store::refresh`] moves it), with
    /// the writer's read settings.
    pub fn open_reader(dir: &Path, config: Config, follower: bool) -> anyhow::Result<CairnStore> {
        let options = Options::default()
            .block_cache_size(config.cache_bytes)
            .mmap_reads(config.cairn_mmap_reads);
        let db = if follower {
            Db::open_follower(dir, options)?
        } else {
            Db::open_read_only(dir, options)?
        };
        let ks = db
            .get_keyspace("bench")
            .context("the store has no keyspace \"bench\"")?;
        Ok(CairnStore { db, ks })
    }
}

impl Store for CairnStore {
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
        // Into the caller's buffer, as the other stores copy into it.
        Ok(self.ks.get_into(key, out)?)
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        // The borrowing cursor: pairs are read in place, as LMDB's are.
        let mut cursor = if reverse {
            self.ks.cursor_rev::<&[u8], _>(..)
        } else {
            self.ks.cursor::<&[u8], _>(..)
        };
        let mut n = 0;
        while let Some((k, v)) = cursor.next()? {
            visit(k, v);
            n += 1;
        }
        Ok(n)
    }

    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize> {
        let mut n = 0;
        let mut cursor = self.ks.cursor(key..);
        while n < limit {
            let Some((k, v)) = cursor.next()? else { break };
            visit(k, v);
            n += 1;
        }
        Ok(n)
    }

    fn flush(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        Ok(())
    }

    fn compact(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        self.db.compact()?;
        self.db.wait_for_compactions()?;
        Ok(())
    }

    fn refresh(&self) -> anyhow::Result<bool> {
        if self.db.is_follower() {
            Ok(self.db.refresh()?)
        } else {
            Ok(false)
        }
    }
}

/// Cairn opened for the transaction workloads: the store above, every transaction begun
/// with `options` (snapshot isolation, or serializable) and committed with the store's
/// `Durability::Buffered`.
pub struct CairnTx {
    store: CairnStore,
    options: TransactionOptions,
}

impl CairnTx {
    /// Creates the store in `dir`; `serializable` picks `Isolation::Serializable`.
    pub fn open(dir: &Path, config: Config, serializable: bool) -> anyhow::Result<CairnTx> {
        let isolation = if serializable {
            Isolation::Serializable
        } else {
            Isolation::Snapshot
        };
        Ok(CairnTx {
            store: CairnStore::open(dir, config)?,
            options: TransactionOptions::new().isolation(isolation),
        })
    }
}

impl TxStore for CairnTx {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let mut batch = self.store.db.batch();
        for &(k, v) in entries {
            batch.insert(&self.store.ks, k, counter_bytes(v));
        }
        batch.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        self.store.ks.get(key)?.map(|v| counter(&v)).transpose()
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        let (db, ks) = (&self.store.db, &self.store.ks);
        let mut tx = db.transaction_with(&self.options);
        let mut values = Vec::with_capacity(keys.len());
        for &k in keys {
            values.push(tx.get(ks, k)?.map(|v| counter(&v)).transpose()?);
        }
        let mut writes = Vec::new();
        decide(&values, &mut writes)?;
        for (i, v) in writes {
            let k = keys.get(i).context("decide named a key it was not given")?;
            tx.insert(ks, k, counter_bytes(v));
        }
        match tx.commit() {
            Ok(_) => Ok(Attempt::Committed),
            Err(e) if e.is_conflict() => Ok(Attempt::Conflict),
            Err(e) => Err(e.into()),
        }
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<u64>,
        new: u64,
    ) -> anyhow::Result<Attempt> {
        let expected = expected.map(counter_bytes);
        let new = counter_bytes(new);
        match self
            .store
            .ks
            .compare_and_swap(key, expected.as_ref().map(|e| &e[..]), Some(&new[..]))
        {
            Ok(Ok(())) => Ok(Attempt::Committed),
            Ok(Err(_)) => Ok(Attempt::Conflict),
            Err(e) if e.is_conflict() => Ok(Attempt::Conflict),
            Err(e) => Err(e.into()),
        }
    }
}
