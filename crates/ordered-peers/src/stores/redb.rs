//! redb 4.5: one table of `&[u8] -> &[u8]` in one file, a cache of `--cache-mb`, every
//! batch one write transaction committed with `Durability::None` (not fsynced, and not
//! persisted at all until a later durable commit). Between workloads [`Store::settle`]
//! makes one `Durability::Immediate` commit, untimed, without which redb cannot reuse
//! the pages earlier transactions freed.

use std::path::Path;

use redb::{
    Database, Durability, ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition,
};

use anyhow::Context as _;

use super::{counter, counter_bytes, walk, Attempt, Config, Decide, Op, Store, TxStore};

/// Configuration, for the report.
pub const CONFIG: &str =
    "defaults; cache --cache-mb; one durable commit between workloads (untimed)";
/// Configuration of the transaction workloads, for the report.
pub const TX_CONFIG: &str =
    "defaults; cache --cache-mb; begin_write (one writer at a time); one durable commit between workloads (untimed)";
/// Durability, for the report.
pub const DURABILITY: &str =
    "Durability::None per commit: no fsync, persisted only by a later durable commit";

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");
/// The database's file in its directory.
const FILE: &str = "bench.redb";
/// A reader's open, for the report.
pub const READ_ONLY_API: &str =
    "ReadOnlyDatabase (Builder::open_read_only, redb 4.5's read-only open), cache --cache-mb";

/// An open redb database.
pub struct RedbStore {
    db: Database,
}

impl RedbStore {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<RedbStore> {
        let db = Database::builder()
            .set_cache_size(config.cache_bytes)
            .create(dir.join(FILE))?;
        let tx = db.begin_write()?;
        tx.open_table(TABLE)?;
        tx.commit()?;
        Ok(RedbStore { db })
    }

    fn commit(&self, ops: &[Op<'_>], durability: Durability) -> anyhow::Result<()> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(durability)?;
        {
            let mut table = tx.open_table(TABLE)?;
            for op in ops {
                match *op {
                    Op::Put(k, v) => {
                        table.insert(k, v)?;
                    }
                    Op::Delete(k) => {
                        table.remove(k)?;
                    }
                }
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// `key`'s value in `db`, as [`Store::get`].
fn get<D: ReadableDatabase>(db: &D, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
    let tx = db.begin_read()?;
    let table = tx.open_table(TABLE)?;
    match table.get(key)? {
        Some(v) => {
            out.clear();
            out.extend_from_slice(v.value());
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Every entry of `db`, as [`Store::scan`].
fn scan<D: ReadableDatabase>(
    db: &D,
    reverse: bool,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> anyhow::Result<u64> {
    let tx = db.begin_read()?;
    let table = tx.open_table(TABLE)?;
    walk(table.iter()?, reverse, |item| {
        let (k, v) = item?;
        visit(k.value(), v.value());
        Ok(())
    })
}

/// Up to `limit` entries of `db` from `key`, as [`Store::seek`].
fn seek<D: ReadableDatabase>(
    db: &D,
    key: &[u8],
    limit: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> anyhow::Result<usize> {
    let tx = db.begin_read()?;
    let table = tx.open_table(TABLE)?;
    let mut n = 0;
    for item in table.range(key..)?.take(limit) {
        let (k, v) = item?;
        visit(k.value(), v.value());
        n += 1;
    }
    Ok(n)
}

impl Store for RedbStore {
    fn write(&self, ops: &[Op<'_>]) -> anyhow::Result<()> {
        self.commit(ops, Durability::None)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        get(&self.db, key, out)
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        scan(&self.db, reverse, visit)
    }

    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize> {
        seek(&self.db, key, limit, visit)
    }

    fn settle(&self) -> anyhow::Result<()> {
        self.commit(&[], Durability::Immediate)
    }
}

/// A redb database opened read-only (`ReadOnlyDatabase`, redb 4.5's read-only open: it
/// shares the file with other read-only handles and refuses a writer of the default
/// `ExclusiveWriter` mode).
pub struct RedbReader {
    db: ReadOnlyDatabase,
}

impl RedbReader {
    /// Opens the database in `dir` read-only, with a cache of `--cache-mb`.
    pub fn open(dir: &Path, config: Config) -> anyhow::Result<RedbReader> {
        let db = Database::builder()
            .set_cache_size(config.cache_bytes)
            .open_read_only(dir.join(FILE))?;
        Ok(RedbReader { db })
    }
}

impl Store for RedbReader {
    fn write(&self, _ops: &[Op<'_>]) -> anyhow::Result<()> {
        anyhow::bail!("redb: the database is open read-only")
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        get(&self.db, key, out)
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        scan(&self.db, reverse, visit)
    }

    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize> {
        seek(&self.db, key, limit, visit)
    }
}

impl TxStore for RedbStore {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let bytes: Vec<[u8; 8]> = entries.iter().map(|&(_, v)| counter_bytes(v)).collect();
        let ops: Vec<Op<'_>> = entries
            .iter()
            .zip(&bytes)
            .map(|(&(k, _), v)| Op::Put(k, v))
            .collect();
        self.commit(&ops, Durability::None)
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        let mut out = Vec::new();
        if get(&self.db, key, &mut out)? {
            Ok(Some(counter(&out)?))
        } else {
            Ok(None)
        }
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(Durability::None)?;
        {
            let mut table = tx.open_table(TABLE)?;
            let mut values = Vec::with_capacity(keys.len());
            for &k in keys {
                values.push(table.get(k)?.map(|v| counter(v.value())).transpose()?);
            }
            let mut writes = Vec::new();
            decide(&values, &mut writes)?;
            for (i, v) in writes {
                let k = keys.get(i).context("decide named a key it was not given")?;
                table.insert(*k, &counter_bytes(v)[..])?;
            }
        }
        tx.commit()?;
        Ok(Attempt::Committed)
    }

    fn settle(&self) -> anyhow::Result<()> {
        self.commit(&[], Durability::Immediate)
    }
}
