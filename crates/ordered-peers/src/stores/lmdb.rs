//! LMDB (the `heed` 0.23 bindings, which compile LMDB's `mdb.master` branch): one unnamed
//! database of bytes, a 1 TiB map (address space only), opened with `NO_SYNC` and
//! `NO_META_SYNC`: a commit writes its pages to the OS and does not fsync. Every batch is
//! one write transaction, every lookup one read transaction. LMDB has no cache of its own:
//! it reads through the page cache, so `--cache-mb` does not apply.
//!
//! heed 0.23 ties a database handle to a borrow of its environment, so the environment is
//! leaked: it stays open (mapped) until the process ends. Its directory is still removed
//! after the workloads; the unlinked file's clean pages remain reclaimable.

use std::path::Path;

use anyhow::Context as _;
use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions};

use super::{counter, counter_bytes, Attempt, Config, Decide, Op, Store, TxStore};

/// Configuration, for the report.
pub const CONFIG: &str = "1 TiB map, no cache of its own (page cache)";
/// Configuration of the transaction workloads, for the report.
pub const TX_CONFIG: &str = "1 TiB map, no cache of its own; write_txn (one writer at a time)";
/// Durability, for the report.
pub const DURABILITY: &str = "NO_SYNC | NO_META_SYNC: pages written to the OS per commit, no fsync";
/// A reader's open, for the report.
pub const READ_ONLY_API: &str = "EnvOpenOptions with EnvFlags::READ_ONLY (MDB_RDONLY), 1 TiB map; a read transaction per lookup";

/// An open LMDB environment and its database.
pub struct Lmdb {
    env: &'static Env,
    db: Database<'static, Bytes, Bytes>,
}

impl Lmdb {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, _config: Config) -> anyhow::Result<Lmdb> {
        let mut options = EnvOpenOptions::new();
        options.map_size(1 << 40).max_dbs(1);
        // SAFETY: NO_SYNC and NO_META_SYNC only drop fsyncs (durability against power
        // loss, which this benchmark does not ask of any store); they add no aliasing or
        // memory-safety hazard.
        unsafe {
            options.flags(EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC);
        }
        // SAFETY: the directory is fresh and private to this process, opened once, so no
        // other environment maps the same file.
        let env: &'static Env = Box::leak(Box::new(unsafe { options.open(dir)? }));
        let tx = env.write_txn()?;
        let db = env
            .create_databases_and_commit(tx, |opener, tx| {
                opener
                    .create_database(tx, None)
                    .map(CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit();
        Ok(Lmdb { env, db })
    }

    /// Opens the existing environment in `dir` with `MDB_RDONLY`, beside a writer in
    /// another process or none, and its unnamed database. Every lookup is still one read
    /// transaction, so the reader sees each commit of the writer as it lands.
    pub fn open_read_only(dir: &Path) -> anyhow::Result<Lmdb> {
        let mut options = EnvOpenOptions::new();
        options.map_size(1 << 40).max_dbs(1);
        // SAFETY: READ_ONLY only stops this process from writing the map; it adds no
        // aliasing or memory-safety hazard.
        unsafe {
            options.flags(EnvFlags::READ_ONLY);
        }
        // SAFETY: this process opens the environment once; LMDB's lock file coordinates it
        // with the one writer process, which never truncates or remaps the file under a
        // reader (the map size is fixed at 1 TiB for both).
        let env: &'static Env = Box::leak(Box::new(unsafe { options.open(dir)? }));
        let tx = env.read_txn()?;
        let db = env
            .open_databases_and_commit(tx, |opener, tx| {
                opener
                    .open_database(tx, None)
                    .map(CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit()
            .context("the environment has no unnamed database")?;
        Ok(Lmdb { env, db })
    }
}

impl Store for Lmdb {
    fn write(&self, ops: &[Op<'_>]) -> anyhow::Result<()> {
        let mut tx = self.env.write_txn()?;
        for op in ops {
            match *op {
                Op::Put(k, v) => self.db.put(&mut tx, k, v)?,
                Op::Delete(k) => {
                    self.db.delete(&mut tx, k)?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn flush(&self) -> anyhow::Result<()> {
        self.env.force_sync()?;
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        let tx = self.env.read_txn()?;
        match self.db.get(&tx, key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        let tx = self.env.read_txn()?;
        let mut n = 0;
        if reverse {
            for item in self.db.rev_iter(&tx)? {
                let (k, v) = item?;
                visit(k, v);
                n += 1;
            }
        } else {
            for item in self.db.iter(&tx)? {
                let (k, v) = item?;
                visit(k, v);
                n += 1;
            }
        }
        Ok(n)
    }

    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize> {
        let tx = self.env.read_txn()?;
        let range = (std::ops::Bound::Included(key), std::ops::Bound::Unbounded);
        let mut n = 0;
        for item in self.db.range(&tx, &range)?.take(limit) {
            let (k, v) = item?;
            visit(k, v);
            n += 1;
        }
        Ok(n)
    }
}

impl TxStore for Lmdb {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let mut tx = self.env.write_txn()?;
        for &(k, v) in entries {
            self.db.put(&mut tx, k, &counter_bytes(v))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        let tx = self.env.read_txn()?;
        self.db.get(&tx, key)?.map(counter).transpose()
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        let mut tx = self.env.write_txn()?;
        let mut values = Vec::with_capacity(keys.len());
        for &k in keys {
            values.push(self.db.get(&tx, k)?.map(counter).transpose()?);
        }
        let mut writes = Vec::new();
        decide(&values, &mut writes)?;
        for (i, v) in writes {
            let k = keys.get(i).context("decide named a key it was not given")?;
            self.db.put(&mut tx, k, &counter_bytes(v))?;
        }
        tx.commit()?;
        Ok(Attempt::Committed)
    }
}
