//! Cairn's ordered store: `Durability::Buffered` (every commit's log record is written to
//! the OS before the call returns, not fsynced), a block cache of `--cache-mb`, and the
//! value log for values of 4 KiB and more (the README's recommended setting; 100-byte
//! values stay inline). Everything else is `Options::default()`, except the memtable size
//! when `--cairn-memtable-mb` sets it (the report's configuration column then says so).

use std::path::Path;

use anyhow::Context as _;
use cairn::{Db, Durability, Keyspace, Options};

use super::{walk, Config, Op, Store};

/// Configuration, for the report.
pub const CONFIG: &str = "defaults; block cache --cache-mb; value log for values >= 4 KiB";
/// Durability, for the report.
pub const DURABILITY: &str = "Durability::Buffered: log written to the OS per commit, no fsync";
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
            .blob_threshold(Some(4 << 10));
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
        let options = Options::default().block_cache_size(config.cache_bytes);
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
        match self.ks.get(key)? {
            Some(v) => {
                *out = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        walk(self.ks.iter(), reverse, |item| {
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
        for item in self.ks.range(key..).take(limit) {
            let (k, v) = item?;
            visit(&k, &v);
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
