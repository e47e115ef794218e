//! RocksDB 7.8.3 (Debian's `librocksdb`, through the `rocksdb` crate 0.21), in two
//! configurations:
//! - default: `Options::default()` with `create_if_missing`, as a new user gets it;
//! - tuned: a bloom filter (10 bits per key), a block cache of `--cache-mb`, LZ4, 2
//!   background jobs, dynamic level sizes, and BlobDB for values of 4 KiB and more (as
//!   Cairn's value log). Index and filter blocks stay in the table readers' memory (the
//!   default), as in Cairn: charging them to a cache smaller than the data made every
//!   lookup reload a table's whole index (11k lookups/s at 1M keys).
//!
//! Both write with `WriteOptions::default()`: `sync = false`, the WAL written to the OS per
//! commit, not fsynced — Cairn's `Buffered`.

use std::path::Path;

use anyhow::Context as _;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, ErrorKind, OptimisticTransactionDB, Options,
    Transaction, TransactionDB, TransactionDBOptions, WriteBatch, WriteOptions, DB,
};

use super::{counter, counter_bytes, Attempt, Config, Decide, Op, Store, TxStore};

/// Default configuration, for the report.
pub const CONFIG_DEFAULT: &str = "library defaults (8 MiB block cache, no bloom filter, snappy)";
/// Tuned configuration, for the report.
pub const CONFIG_TUNED: &str =
    "bloom 10 bits/key; block cache --cache-mb; LZ4; 2 background jobs; dynamic levels; BlobDB for values >= 4 KiB";
/// Durability, for the report.
pub const DURABILITY: &str = "WriteOptions sync=false: WAL written to the OS per commit, no fsync";
/// Configuration of the optimistic transactions, for the report.
pub const TX_CONFIG_OPTIMISTIC: &str =
    "OptimisticTransactionDB, library defaults; get_for_update, commit fails on a conflict";
/// Configuration of the pessimistic transactions, for the report.
pub const TX_CONFIG_PESSIMISTIC: &str =
    "TransactionDB, library defaults (lock timeout 1 s), deadlock detection; get_for_update (exclusive) locks each key";
/// A reader's open, for the report.
pub const READ_ONLY_API: &str =
    "DB::open_for_read_only(error_if_log_file_exist = false), the writer's options";
/// A follower's open, for the report.
pub const SECONDARY_API: &str =
    "DB::open_as_secondary, the writer's options; try_catch_up_with_primary() by the reader";

/// An open RocksDB.
pub struct Rocks {
    db: DB,
    write_options: WriteOptions,
    /// Opened with `DB::open_as_secondary`: [`Store::refresh`] catches up.
    secondary: bool,
}

impl Rocks {
    /// The options of the default or the tuned configuration.
    fn options(config: Config, tuned: bool) -> Options {
        let mut options = Options::default();
        if tuned {
            let mut table = BlockBasedOptions::default();
            table.set_bloom_filter(10.0, false);
            let cache = Cache::new_lru_cache(config.cache_bytes);
            table.set_block_cache(&cache);
            options.set_block_based_table_factory(&table);
            options.set_compression_type(DBCompressionType::Lz4);
            options.set_max_background_jobs(2);
            options.set_level_compaction_dynamic_level_bytes(true);
            options.set_enable_blob_files(true);
            options.set_min_blob_size(4 << 10);
            options.set_enable_blob_gc(true);
        }
        options
    }

    /// Creates the store in `dir`, with the default or the tuned configuration.
    pub fn open(dir: &Path, config: Config, tuned: bool) -> anyhow::Result<Rocks> {
        let mut options = Rocks::options(config, tuned);
        options.create_if_missing(true);
        let db = DB::open(&options, dir)?;
        Ok(Rocks {
            db,
            write_options: WriteOptions::default(),
            secondary: false,
        })
    }

    /// Opens the store in `dir` with `DB::open_for_read_only` (not failing on a log
    /// file: one is replayed into memory), in the same configuration it was written in.
    pub fn open_read_only(dir: &Path, config: Config, tuned: bool) -> anyhow::Result<Rocks> {
        let options = Rocks::options(config, tuned);
        let db = DB::open_for_read_only(&options, dir, false)?;
        Ok(Rocks {
            db,
            write_options: WriteOptions::default(),
            secondary: false,
        })
    }

    /// Opens the store in `dir` as a secondary instance (`DB::open_as_secondary`, its
    /// own info log in a directory beside `dir` named for this process), which
    /// [`Store::refresh`] moves with `try_catch_up_with_primary`.
    pub fn open_secondary(dir: &Path, config: Config, tuned: bool) -> anyhow::Result<Rocks> {
        let options = Rocks::options(config, tuned);
        let mut own = dir.as_os_str().to_owned();
        own.push(format!("-secondary-{}", std::process::id()));
        let own = std::path::PathBuf::from(own);
        let db = DB::open_as_secondary(&options, dir, &own)?;
        Ok(Rocks {
            db,
            write_options: WriteOptions::default(),
            secondary: true,
        })
    }
}

impl Store for Rocks {
    fn write(&self, ops: &[Op<'_>]) -> anyhow::Result<()> {
        let mut batch = WriteBatch::default();
        for op in ops {
            match *op {
                Op::Put(k, v) => batch.put(k, v),
                Op::Delete(k) => batch.delete(k),
            }
        }
        self.db.write_opt(batch, &self.write_options)?;
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        match self.db.get_pinned(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64> {
        let mut iter = self.db.raw_iterator();
        if reverse {
            iter.seek_to_last();
        } else {
            iter.seek_to_first();
        }
        let mut n = 0;
        while let (Some(k), Some(v)) = (iter.key(), iter.value()) {
            visit(k, v);
            n += 1;
            if reverse {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status()?;
        Ok(n)
    }

    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize> {
        let mut iter = self.db.raw_iterator();
        iter.seek(key);
        let mut n = 0;
        while n < limit {
            let (Some(k), Some(v)) = (iter.key(), iter.value()) else {
                break;
            };
            visit(k, v);
            n += 1;
            iter.next();
        }
        iter.status()?;
        Ok(n)
    }

    fn flush(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        Ok(())
    }

    fn compact(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn refresh(&self) -> anyhow::Result<bool> {
        if !self.secondary {
            return Ok(false);
        }
        self.db.try_catch_up_with_primary()?;
        Ok(true)
    }
}

/// Whether `e` is RocksDB refusing a transaction (a write conflict found at commit, a
/// lock that timed out, a deadlock) rather than failing: the transaction may be retried.
fn refused(e: &rocksdb::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Busy | ErrorKind::TryAgain | ErrorKind::TimedOut
    )
}

/// One attempt of a transaction on `tx`: `get_for_update` of every key (exclusive), then
/// `decide`'s puts, then the commit; a refusal anywhere is [`Attempt::Conflict`].
fn attempt<D>(
    tx: Transaction<'_, D>,
    keys: &[&[u8]],
    decide: Decide<'_>,
) -> anyhow::Result<Attempt> {
    let mut values = Vec::with_capacity(keys.len());
    for &k in keys {
        match tx.get_pinned_for_update(k, true) {
            Ok(v) => values.push(v.map(|v| counter(&v)).transpose()?),
            Err(e) if refused(&e) => return Ok(Attempt::Conflict),
            Err(e) => return Err(e.into()),
        }
    }
    let mut writes = Vec::new();
    decide(&values, &mut writes)?;
    for (i, v) in writes {
        let k = keys.get(i).context("decide named a key it was not given")?;
        tx.put(k, counter_bytes(v))?;
    }
    match tx.commit() {
        Ok(()) => Ok(Attempt::Committed),
        Err(e) if refused(&e) => Ok(Attempt::Conflict),
        Err(e) => Err(e.into()),
    }
}

/// RocksDB's `OptimisticTransactionDB`, library defaults, `sync = false`: the commit fails
/// (`Busy`) when a key the transaction read with `get_for_update` was written after that
/// read.
pub struct RocksOptimistic {
    db: OptimisticTransactionDB,
}

impl RocksOptimistic {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, _config: Config) -> anyhow::Result<RocksOptimistic> {
        let mut options = Options::default();
        options.create_if_missing(true);
        let db = OptimisticTransactionDB::open(&options, dir)?;
        Ok(RocksOptimistic { db })
    }
}

impl TxStore for RocksOptimistic {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let tx = self.db.transaction();
        for &(k, v) in entries {
            tx.put(k, counter_bytes(v))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        self.db.get_pinned(key)?.map(|v| counter(&v)).transpose()
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        attempt(self.db.transaction(), keys, decide)
    }
}

/// RocksDB's `TransactionDB` (pessimistic), library defaults, `sync = false`:
/// `get_for_update` locks each key until the commit; a lock not granted within the
/// default timeout (1 s), or a deadlock, refuses the transaction.
pub struct RocksPessimistic {
    db: TransactionDB,
}

impl RocksPessimistic {
    /// Creates the store in `dir`.
    pub fn open(dir: &Path, _config: Config) -> anyhow::Result<RocksPessimistic> {
        let mut options = Options::default();
        options.create_if_missing(true);
        let db = TransactionDB::open(&options, &TransactionDBOptions::default(), dir)?;
        Ok(RocksPessimistic { db })
    }
}

impl TxStore for RocksPessimistic {
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()> {
        let tx = self.db.transaction();
        for &(k, v) in entries {
            tx.put(k, counter_bytes(v))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>> {
        self.db.get_pinned(key)?.map(|v| counter(&v)).transpose()
    }

    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt> {
        let mut options = rocksdb::TransactionOptions::default();
        options.set_deadlock_detect(true);
        attempt(
            self.db.transaction_opt(&WriteOptions::default(), &options),
            keys,
            decide,
        )
    }
}
