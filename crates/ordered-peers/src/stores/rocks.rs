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

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch, WriteOptions, DB};

use super::{Config, Op, Store};

/// Default configuration, for the report.
pub const CONFIG_DEFAULT: &str = "library defaults (8 MiB block cache, no bloom filter, snappy)";
/// Tuned configuration, for the report.
pub const CONFIG_TUNED: &str =
    "bloom 10 bits/key; block cache --cache-mb; LZ4; 2 background jobs; dynamic levels; BlobDB for values >= 4 KiB";
/// Durability, for the report.
pub const DURABILITY: &str = "WriteOptions sync=false: WAL written to the OS per commit, no fsync";
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
