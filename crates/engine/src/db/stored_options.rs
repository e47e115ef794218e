//! The store's file-shaping options, recorded in its manifest (`version/FORMAT.md` §5, tag
//! 12) so that a tool or another process can open the store with the application's
//! settings instead of the defaults ([`Options::from_store`]).
//!
//! Which options: those that shape the files a writer makes and the tree they form
//! (compression, block and table sizes, bloom filters, level sizes, value separation and
//! its garbage threshold, memtable and log sizes). Not recorded: durability, caches,
//! thread counts, the clock, recovery and follower settings, which belong to one process.
//!
//! Invariants:
//! 1. Every read-write open records the options it was given if they differ from the
//!    recorded ones, in the fresh manifest the open starts, so the record always holds the
//!    options of the last writer.
//! 2. The registry's keys are on-disk values: never renumbered; a retired key stays listed.
//!    A key this build does not know is ignored when read (a newer writer's option).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, StdFs};
use crate::options::{Compression, Options};
use crate::version::{Manifest, StoreOptions};

/// Option keys (invariant 2).
mod key {
    pub(super) const COMPRESSION: u64 = 1;
    pub(super) const ZSTD_LEVEL: u64 = 2;
    pub(super) const BLOCK_SIZE: u64 = 3;
    pub(super) const RESTART_INTERVAL: u64 = 4;
    pub(super) const BLOOM_BITS_PER_KEY: u64 = 5;
    pub(super) const TABLE_SIZE: u64 = 6;
    pub(super) const LEVEL1_SIZE: u64 = 7;
    pub(super) const LEVEL_SIZE_MULTIPLIER: u64 = 8;
    pub(super) const L0_COMPACTION_TRIGGER: u64 = 9;
    /// The store's separation threshold plus one; 0: none.
    pub(super) const BLOB_THRESHOLD: u64 = 10;
    pub(super) const BLOB_FILE_SIZE: u64 = 11;
    pub(super) const BLOB_GC_GARBAGE_PERCENT: u64 = 12;
    pub(super) const MEMTABLE_SIZE: u64 = 13;
    pub(super) const MEMTABLES_PER_FLUSH: u64 = 14;
    pub(super) const MAX_WAL_SIZE: u64 = 15;
}

/// Compression kinds as recorded.
const NONE: u64 = 0;
const LZ4: u64 = 1;
const SNAPPY: u64 = 2;
const ZSTD: u64 = 3;

/// The record of `options`' file-shaping options.
pub(crate) fn record(options: &Options) -> StoreOptions {
    let (kind, level) = match options.compression {
        Compression::None => (NONE, 0),
        Compression::Lz4 => (LZ4, 0),
        Compression::Snappy => (SNAPPY, 0),
        Compression::Zstd(level) => (ZSTD, level),
    };
    // Zig-zag: zstd levels may be negative (its fast modes).
    let level = u64::from(((level << 1) ^ (level >> 31)) as u32);
    let map = BTreeMap::from([
        (key::COMPRESSION, kind),
        (key::ZSTD_LEVEL, level),
        (key::BLOCK_SIZE, options.block_size as u64),
        (key::RESTART_INTERVAL, options.restart_interval as u64),
        (
            key::BLOOM_BITS_PER_KEY,
            u64::from(options.bloom_bits_per_key),
        ),
        (key::TABLE_SIZE, options.table_size),
        (key::LEVEL1_SIZE, options.level1_size),
        (key::LEVEL_SIZE_MULTIPLIER, options.level_size_multiplier),
        (
            key::L0_COMPACTION_TRIGGER,
            options.l0_compaction_trigger as u64,
        ),
        (
            key::BLOB_THRESHOLD,
            options
                .blob_threshold
                .map_or(0, |t| (t as u64).saturating_add(1)),
        ),
        (key::BLOB_FILE_SIZE, options.blob_file_size),
        (
            key::BLOB_GC_GARBAGE_PERCENT,
            u64::from(options.blob_gc_garbage_percent),
        ),
        (key::MEMTABLE_SIZE, options.memtable_size as u64),
        (key::MEMTABLES_PER_FLUSH, options.memtables_per_flush as u64),
        (key::MAX_WAL_SIZE, options.max_wal_size),
    ]);
    StoreOptions(map)
}

/// `base` with the recorded options of `stored` applied; a recorded value this build
/// cannot represent is refused.
///
/// # Errors
/// `InvalidArgument` naming the option if a recorded value is out of range.
pub(crate) fn apply(base: Options, stored: &StoreOptions) -> Result<Options> {
    let mut o = base;
    let bad = |what: &str| Error::invalid(format!("recorded store option {what} out of range"));
    let size = |v: u64, what: &str| usize::try_from(v).map_err(|_| bad(what));
    let map = &stored.0;
    if let Some(&kind) = map.get(&key::COMPRESSION) {
        let zz = map.get(&key::ZSTD_LEVEL).copied().unwrap_or(0);
        let zz = u32::try_from(zz).map_err(|_| bad("zstd level"))?;
        let level = ((zz >> 1) as i32) ^ -((zz & 1) as i32);
        o.compression = match kind {
            NONE => Compression::None,
            LZ4 => Compression::Lz4,
            SNAPPY => Compression::Snappy,
            ZSTD => Compression::Zstd(level),
            _ => return Err(bad("compression")),
        };
    }
    for (&k, &v) in map {
        match k {
            key::BLOCK_SIZE => o.block_size = size(v, "block_size")?,
            key::RESTART_INTERVAL => o.restart_interval = size(v, "restart_interval")?,
            key::BLOOM_BITS_PER_KEY => {
                o.bloom_bits_per_key = u32::try_from(v).map_err(|_| bad("bloom_bits_per_key"))?;
            }
            key::TABLE_SIZE => o.table_size = v,
            key::LEVEL1_SIZE => o.level1_size = v,
            key::LEVEL_SIZE_MULTIPLIER => o.level_size_multiplier = v,
            key::L0_COMPACTION_TRIGGER => {
                o.l0_compaction_trigger = size(v, "l0_compaction_trigger")?;
            }
            key::BLOB_THRESHOLD => {
                o.blob_threshold = match v.checked_sub(1) {
                    None => None,
                    Some(t) => Some(size(t, "blob_threshold")?),
                };
            }
            key::BLOB_FILE_SIZE => o.blob_file_size = v,
            key::BLOB_GC_GARBAGE_PERCENT => {
                o.blob_gc_garbage_percent =
                    u8::try_from(v).map_err(|_| bad("blob_gc_garbage_percent"))?;
            }
            key::MEMTABLE_SIZE => o.memtable_size = size(v, "memtable_size")?,
            key::MEMTABLES_PER_FLUSH => {
                o.memtables_per_flush = size(v, "memtables_per_flush")?;
            }
            key::MAX_WAL_SIZE => o.max_wal_size = v,
            // Compression was applied above; an unknown key is a newer writer's.
            _ => {}
        }
    }
    Ok(o)
}

impl Options {
    /// The options the store in `dir` was last opened for writing with, where they shape
    /// its files (compression, block, table and level sizes, bloom filters, value
    /// separation and its garbage threshold, memtable and log sizes), over
    /// [`Options::default`] for the rest (durability, caches, threads, which belong to
    /// each process). A tool or a second process that opens a store an application
    /// made should start from these, so the tables and blob files it writes match the
    /// application's. Reads the manifest only; writes nothing, takes no lock, and works
    /// beside a writer. A store last written by a build that recorded no options gives
    /// the defaults.
    ///
    /// ```
    /// use cairn::{Compression, Db, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let mut app = Options::default();
    /// app.compression = Compression::Zstd(9);
    /// app.blob_threshold = Some(4096);
    /// Db::open(dir.path(), app)?.close()?;
    ///
    /// let tool = Options::from_store(dir.path())?;
    /// assert_eq!(tool.compression, Compression::Zstd(9));
    /// assert_eq!(tool.blob_threshold, Some(4096));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` if `dir` holds no store or a recorded value is out of range;
    /// `Corruption` or `Io` reading the manifest.
    pub fn from_store(dir: impl AsRef<Path>) -> Result<Options> {
        Options::from_store_with_fs(Arc::new(StdFs), dir.as_ref())
    }

    /// [`Options::from_store`] through a given file system.
    pub(crate) fn from_store_with_fs(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<Options> {
        let Some(recovered) = Manifest::recover(fs.as_ref(), dir)? else {
            return Err(Error::invalid(format!(
                "no store at {} (no CURRENT file)",
                dir.display()
            )));
        };
        match recovered.version.store_options() {
            Some(stored) => apply(Options::default(), stored),
            None => Ok(Options::default()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_recorded_option_round_trips() {
        for compression in [
            Compression::None,
            Compression::Lz4,
            Compression::Snappy,
            Compression::Zstd(1),
            Compression::Zstd(22),
            Compression::Zstd(-5),
        ] {
            let o = Options {
                compression,
                block_size: 8 << 10,
                restart_interval: 32,
                bloom_bits_per_key: 14,
                table_size: 3 << 20,
                level1_size: 7 << 20,
                level_size_multiplier: 8,
                l0_compaction_trigger: 6,
                blob_threshold: Some(0),
                blob_file_size: 9 << 20,
                blob_gc_garbage_percent: 33,
                memtable_size: 5 << 20,
                memtables_per_flush: 3,
                max_wal_size: 77 << 20,
                ..Options::default()
            };
            let back = apply(Options::default(), &record(&o)).unwrap();
            assert_eq!(record(&back), record(&o));
            assert_eq!(back.compression, compression);
            assert_eq!(back.blob_threshold, Some(0));
            assert_eq!(back.max_wal_size, 77 << 20);
            // What belongs to one process is not taken from the record.
            assert_eq!(back.durability, Options::default().durability);
        }
        let none = Options {
            blob_threshold: None,
            ..Options::default()
        };
        assert_eq!(
            apply(Options::default(), &record(&none))
                .unwrap()
                .blob_threshold,
            None
        );
    }

    #[test]
    fn unknown_keys_are_ignored_and_out_of_range_values_refused() {
        let mut stored = record(&Options::default());
        stored.0.insert(999, 5);
        assert_eq!(
            record(&apply(Options::default(), &stored).unwrap()),
            record(&Options::default())
        );
        let mut bad = record(&Options::default());
        bad.0.insert(key::COMPRESSION, 9);
        assert!(matches!(
            apply(Options::default(), &bad),
            Err(Error::InvalidArgument(_))
        ));
        let mut bad = record(&Options::default());
        bad.0.insert(key::BLOB_GC_GARBAGE_PERCENT, 300);
        assert!(matches!(
            apply(Options::default(), &bad),
            Err(Error::InvalidArgument(_))
        ));
    }
}
