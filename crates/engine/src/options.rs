//! Options of the ordered store: [`Options`] for a whole store, [`Durability`] for how
//! much an acknowledged write may lose, and the per-table settings they carry.
//!
//! Every default is documented on its field and chosen for a general-purpose server with
//! a few GiB of RAM; tests shrink the sizes to drive flushes and compactions often.
//! [`Options::validate`] refuses combinations the engine cannot run with, before any file
//! is touched.
//!
//! Every public type here is `#[non_exhaustive]`, so a release may add a field or a
//! variant without breaking users: outside this crate, [`Options`] and [`KeyspaceOptions`]
//! are built from `default()` (or [`KeyspaceOptions::separated`]) and their chainable
//! setters, one per field and named after it, and a `match` on [`Durability`] or
//! [`Compression`] needs a wildcard arm. The fields stay public: read them, or assign them
//! on a mutable value.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::merge::MergeOperator;

/// What an acknowledged write survives. See the durability table in the README.
///
/// Whatever the mode, recovery yields a prefix of the acknowledged writes: a later write is
/// never kept while an earlier one is lost, and a batch is recovered whole or not at all.
///
/// A store has a default mode ([`Options::durability`]); a single write may ask for
/// another (`insert_with`, `Batch::commit_with`).
///
/// ```
/// use std::time::Duration;
/// use cairn::{Db, Durability, Options};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// // Writes of this store are fsynced at least every 10 ms ...
/// let options = Options::default().durability(Durability::Periodic(Duration::from_millis(10)));
/// let db = Db::open(dir.path(), options)?;
/// let ks = db.keyspace("events")?;
/// ks.insert("e1", "login")?;
/// // ... but this one is on disk when the call returns.
/// ks.insert_with("e2", "payment", Some(Durability::Sync))?;
/// assert_eq!(ks.get("e2")?, Some(b"payment".to_vec()));
///
/// // A mode the engine cannot run with is refused before any file is touched.
/// let bad = Options::default().durability(Durability::Async { queue_depth: 0 });
/// assert!(matches!(bad.validate(), Err(cairn::Error::InvalidArgument(_))));
///
/// // The enum may grow: a match outside Cairn needs a wildcard arm.
/// let loses_on_power_cut = |d: Durability| !matches!(d, Durability::Sync);
/// assert!(loses_on_power_cut(Durability::Buffered));
/// # db.close()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// The write is in the log and the log is fsynced before the call returns. Concurrent
    /// writers share one fsync (group commit). Survives a process crash and power loss.
    Sync,
    /// The write is handed to the OS before the call returns, and a background thread
    /// fsyncs the log at least once per interval (microsecond resolution). Survives a
    /// process crash; on power loss at most the writes of the last interval (plus one
    /// fsync's duration) are lost.
    Periodic(Duration),
    /// The write is handed to the OS before the call returns; fsync happens only on
    /// rotation, [`crate::Db::flush_wal`] or a later `Sync` write. Survives a process crash,
    /// not power loss.
    Buffered,
    /// The write is queued for a background writer; the call returns at once unless
    /// `queue_depth` writes are already waiting, then it blocks. A crash loses at most the
    /// queued writes.
    Async {
        /// How many batches may wait for the background writer (at least 1).
        queue_depth: usize,
    },
    /// The write reaches only the memtable and an in-process log buffer; it is guaranteed
    /// durable only once a memtable flush (or a later stronger write, or `flush_wal`)
    /// covers it. For bulk loads.
    None,
}

impl Default for Durability {
    /// `Sync`: the safest choice; group commit keeps it fast with concurrent writers.
    fn default() -> Durability {
        Durability::Sync
    }
}

/// How the ordered store's table blocks are compressed ([`Options::compression`]).
///
/// The choice applies to tables written from then on; a store reads tables of every kind,
/// so it can be changed between opens. A block that does not shrink by at least 1/8 is
/// stored uncompressed whatever this says. (The constant store has its own
/// [`crate::hash::Compression`], which follows the Sparkey format.)
///
/// ```
/// use cairn::{Compression, Db, Options};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// assert_eq!(Compression::default(), Compression::Lz4);
/// let db = Db::open(dir.path(), Options::default().compression(Compression::Snappy))?;
/// let ks = db.keyspace("logs")?;
/// ks.insert("line:1", "GET /index.html 200 ".repeat(100))?;
/// db.flush()?; // writes a table with Snappy-compressed blocks
/// assert_eq!(ks.get("line:1")?.map(|v| v.len()), Some(2000));
///
/// // Zstandard levels outside 1..=22 are refused.
/// let bad = Options::default().compression(Compression::Zstd(23));
/// assert!(matches!(bad.validate(), Err(cairn::Error::InvalidArgument(_))));
/// # db.close()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Stored as is.
    None,
    /// LZ4 (fast; the default).
    #[default]
    Lz4,
    /// Snappy.
    Snappy,
    /// Zstandard at the given level (1–22). Needs the `zstd` Cargo feature (on by
    /// default); without it [`Options::validate`] refuses this choice.
    Zstd(i32),
}

/// Options of one store, fixed when it is opened.
///
/// Start from [`Options::default`] and change what you need with the chainable setters
/// (one per field, named after it); the fields are public for reading, and for assigning
/// on a mutable value. The type is `#[non_exhaustive]`: a struct literal, even with
/// `..Options::default()`, does not compile outside Cairn, so new options can be added
/// without breaking callers.
///
/// ```
/// use cairn::{Compression, Db, Durability, Options};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let mut options = Options::default()
///     .durability(Durability::Buffered)
///     .memtable_size(1 << 20)
///     .compression(Compression::Snappy)
///     .blob_threshold(Some(4 << 10));
/// options.background_threads = 1; // fields can be assigned too
/// assert_eq!(options.memtable_size, 1 << 20);
/// assert!(options.create_if_missing); // untouched fields keep their defaults
/// options.validate()?;
///
/// let db = Db::open(dir.path(), options)?;
/// db.keyspace("default")?.insert("k", "v")?;
/// db.close()?;
///
/// // Refused before any file is touched, naming the field.
/// let err = Options::default().memtable_size(10).validate();
/// assert!(matches!(err, Err(cairn::Error::InvalidArgument(m)) if m.contains("memtable_size")));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Durability of writes that do not ask for another. Default: [`Durability::Sync`].
    pub durability: Durability,
    /// Create the store if the directory holds none. Default: true.
    pub create_if_missing: bool,
    /// Bytes of entries after which the active memtable is sealed and a fresh one takes
    /// the writes. Default: 16 MiB. A small memtable keeps inserts fast (a skip-list
    /// search touches fewer cache lines); [`Options::memtables_per_flush`] keeps the
    /// tables a flush writes large. Each memtable also holds a bloom filter of its keys of
    /// about 1.4 % of this (10 bits per smallest possible entry), so point lookups skip
    /// memtables that cannot hold their key.
    pub memtable_size: usize,
    /// Sealed memtables merged into one level-0 table per keyspace by a flush. A flush
    /// starts once this many are sealed (or [`Options::max_immutable_memtables`], if
    /// fewer), or at once for every sealed memtable when [`crate::Db::flush`],
    /// [`crate::Db::wait_for_compactions`], the `max_wal_size` limit or recovery asks
    /// for it, or when no memtable has been sealed for a second. Default: 4, so a flush
    /// writes about 64 MiB of entries.
    pub memtables_per_flush: usize,
    /// Sealed memtables that may wait to be flushed before writers are held back.
    /// Default: 8. Memtable memory is bounded by `memtable_size` times one more than this.
    pub max_immutable_memtables: usize,
    /// Log bytes that force a memtable flush, bounding recovery time. Separated values
    /// written since the last flush count too (recovery validates them, and value-log GC
    /// only sees flushed blob files), so this also bounds the unflushed value log.
    /// Default: 256 MiB.
    pub max_wal_size: u64,
    /// Bytes of decoded table blocks kept in memory. Default: 64 MiB. While the cache has
    /// room it keeps every block read; once full, it keeps a block only when the block is
    /// missed a second time soon after the first (within a quarter of a cache's worth of
    /// misses), so blocks read once evict nothing ([`Stats::cache_refused`](crate::Stats)
    /// counts the others).
    pub block_cache_size: usize,
    /// Bytes of rows kept from point reads of tables: for each table a read found a key
    /// in, the newest version it holds of that key. Default: 0 (no row cache).
    ///
    /// A key read again then costs one hash probe where it cost a search of the table's
    /// index and data block, so repeated point reads of keys no longer in a memtable
    /// (a server's hot keys) cost about what reads from a memtable do. Scans do not use
    /// it, and a read at a snapshot that cannot see the version cached goes to the
    /// table. Every row a read misses is kept, evicting (CLOCK) a row of its set not hit
    /// since the set's hand last passed; rows of more than 4 KiB are not kept, and the
    /// rows of tables that compaction deletes age out. A size below 192 bytes is refused.
    /// With [`Options::memory_budget`], the row cache is part of the block cache's share
    /// (at most half of it) and the block cache gets the rest.
    /// [`Stats`](crate::Stats) counts its hits, misses and bytes. A sixth of the size (the
    /// cache's sets, one cache line per three rows) is allocated when the store opens; a
    /// size whose sets cannot be allocated is refused then (`InvalidArgument`).
    pub row_cache_size: usize,
    /// Table files kept open (each holds a file descriptor); the least recently used is
    /// closed when another is needed. Default: 500, which fits the common 1,024-descriptor
    /// limit with room for the application.
    pub max_open_tables: usize,
    /// Read table blocks through memory maps of the table files instead of `pread`.
    /// Default: false.
    ///
    /// A block that is not in the block cache but is in the OS page cache then costs no
    /// system call and no copy before it is checked and decoded, which speeds up reads of
    /// stores larger than the block cache. With [`Compression::None`] data blocks are read
    /// where they lie in the map, without the block cache (the page cache holds them, as
    /// a memory-mapped B+tree's pages): each block's checksum is verified on its first read
    /// through a table's reader and the success remembered for that reader, so later reads
    /// skip the pass over the whole block (a block whose bytes fail the check is refused
    /// on every read). Compressed blocks still go through the block cache, checked each
    /// time they are read into it. Blocks read in place count neither as block cache hits
    /// nor as misses in [`Stats`](crate::Stats).
    ///
    /// The pages read count in the process's resident set (`RssFile`, shared and
    /// reclaimable, as the page cache always was). The cost: a device error on a mapped
    /// page stops the process with `SIGBUS` where `pread` returns
    /// [`Error::Io`](crate::Error::Io). Tables are never modified after they are written,
    /// so a map never sees bytes change; another program truncating a table file would
    /// make reads of it fault likewise. `Db::verify` and recovery read with `pread`,
    /// checking every block, whatever this says.
    pub mmap_reads: bool,
    /// Target size of a table's data block before compression. Default: 4 KiB.
    pub block_size: usize,
    /// Most keys between restart points within a block. Default: 16. A data block also
    /// starts a restart point once the entries since the last one take `block_size / 8`
    /// bytes, so blocks of large entries keep point lookups' walks short.
    pub restart_interval: usize,
    /// Block compression. Default: LZ4.
    pub compression: Compression,
    /// Bloom filter bits per key (0 disables filters). Default: 10 (about 1% false
    /// positives).
    pub bloom_bits_per_key: u32,
    /// Level-0 tables that start a compaction. Default: 4.
    pub l0_compaction_trigger: usize,
    /// Level-0 tables at which writes start being slowed. Default: 12.
    pub l0_slowdown_trigger: usize,
    /// Level-0 tables at which writes wait for compaction. Default: 20.
    pub l0_stop_trigger: usize,
    /// Target size of level 1; each further level is `level_size_multiplier` times larger.
    /// Default: 256 MiB.
    pub level1_size: u64,
    /// Growth factor between levels. Default: 10.
    pub level_size_multiplier: u64,
    /// Target size of a table written by compaction. Default: 64 MiB.
    pub table_size: u64,
    /// Background threads for flushes and compactions. Default: 2.
    pub background_threads: usize,
    /// Reclaiming deleted data: when no level is over its size or count trigger, a
    /// compaction runs whose tombstones are estimated to free at least this percentage of
    /// the entries it rewrites (each tombstone with the version it deletes, counted from
    /// the tables' entry and tombstone counts), carrying the tombstones down to the data
    /// they delete. Lower values reclaim deletes sooner at the cost of more compaction
    /// writes; 0 turns it off (deletes then free space only when their level reaches its
    /// trigger). Default: 50, so such a compaction rewrites at most about two entries per
    /// entry it frees, and a trickle of deletes over a large level never triggers one.
    pub tombstone_compaction_percent: u8,
    /// Settling level 0 once writes pause: when no memtable has been sealed for a second,
    /// nothing is left to flush and no other compaction is due, a keyspace whose level-0
    /// tables add up to at least this percentage of the level-1 bytes they overlap has its
    /// level 0 merged into level 1, although it holds fewer than `l0_compaction_trigger`
    /// tables. That drops the versions overwritten by the writes still in level 0 (a store
    /// whose keys were all overwritten once otherwise keeps both copies while it is idle)
    /// and leaves reads one sorted run. The work is only done earlier, never added: every
    /// level-0 table is merged into level 1 at some point. The percentage bounds what such
    /// a merge rewrites per level-0 byte; 0 turns it off. Default: 25 (at most four level-1
    /// bytes rewritten per level-0 byte, like a compaction at the count trigger).
    pub idle_compaction_percent: u8,
    /// Back memtable memory with transparent huge pages (Linux): each 2 MiB arena chunk is
    /// aligned to its size and advised with `MADV_HUGEPAGE`, so the random node visits of
    /// memtable searches and inserts miss the TLB less often (about 20 % fewer CPU samples
    /// in the skip list's insert and search in a profile of random 16-byte keys). Off by
    /// default, as RocksDB's `memtable_huge_page_size` is: where the kernel's huge-page
    /// `defrag` setting is `madvise` (a common default), the write that first touches a
    /// chunk may stall while the kernel compacts memory to find a huge page, a latency
    /// spike on the write path; and each memtable then takes at least 2 MiB. Default: false.
    pub memtable_huge_pages: bool,
    /// Skip damage during recovery instead of refusing to open: damaged ranges of the log,
    /// and durable writes whose separated value is damaged or missing. The writes skipped
    /// are lost; [`crate::Db::recovery_report`] lists each range and write with its seqnos
    /// where known, and the recovered writes are flushed before the open returns, so the
    /// damaged log is not read again. Default: false (damage is `Error::Corruption`).
    pub salvage_wal: bool,
    /// For a follower ([`crate::Db::open_follower`]): how often a background thread moves
    /// its view to the writer's latest state ([`crate::Db::refresh`]). `None` (the
    /// default): only when `refresh` is called. Ignored by other opens.
    pub refresh_interval: Option<Duration>,
    /// Where entry expiry (TTL) reads the time. Default: the system clock.
    pub clock: Clock,
    /// How often an idle background thread looks for tables whose earliest expiry has
    /// passed and rewrites them, so expired data is reclaimed without further writes.
    /// Default: 60 s.
    pub expiry_check_interval: Duration,
    /// Value separation for keyspaces opened without their own [`KeyspaceOptions`]: values
    /// of at least this many bytes go to the value log (blob files) and the tree keeps a
    /// small handle (see the README, "Large values"). Default: `None` (off). A keyspace's
    /// own threshold, once set with [`crate::Db::keyspace_with`], is kept in the manifest
    /// and takes precedence.
    pub blob_threshold: Option<usize>,
    /// Size at which the active blob file is sealed and a new one started. Default:
    /// 256 MiB.
    pub blob_file_size: u64,
    /// Garbage percentage (bytes no table references, over all of a blob file's value
    /// bytes) at which value-log garbage collection rewrites a blob file; files with no
    /// live value are deleted whatever this is. Space taken by values stays below
    /// `live / (1 - p/100)` once collection has caught up (2x at the default). Default: 50.
    pub blob_gc_garbage_percent: u8,
    /// Blob files kept open for reads (each holds a file descriptor). Default: 100.
    pub max_open_blob_files: usize,
    /// One bound on the memory the store's data takes, in bytes: the block cache, the
    /// memtables (active and waiting to be flushed, every keyspace) and the index and
    /// filter blocks of open tables together. Default: `None` (each is sized by its own
    /// option, as documented there).
    ///
    /// A budget is divided: 5/8 to the block cache, 1/4 to the memtables, 1/8 to the
    /// index and filter blocks. It replaces [`Options::block_cache_size`] (the cache gets
    /// its share whatever that field says) and caps [`Options::memtable_size`] at a
    /// quarter of the memtable share (a smaller value is kept). Writers seal and flush
    /// memtables early, then wait, rather than let the memtables pass their share (a
    /// single batch larger than the share is let through alone); the table cache closes
    /// tables, least recently used first, rather than let the index and filter blocks it
    /// keeps pass theirs (tables a scan or compaction is reading stay open while it
    /// reads). [`Stats`](crate::Stats) reports each share and its use. Data larger than
    /// about 8 times the index and filter share (at 10 bloom bits per key and 4 KiB
    /// blocks, index and filter take about 1.5 % of the data) makes point reads reopen
    /// tables; give such a store a larger budget.
    ///
    /// The process's resident memory stays within the budget plus a constant for code,
    /// thread stacks, flush and compaction buffers, memtable arena slack and memory the
    /// allocator keeps after memtables are freed: about 90 MiB in the runs of
    /// docs/BENCHMARKS.md ("Memory budget"; resident memory was 32–87 MiB above the
    /// shares in use, for budgets of 64 MiB to 1 GiB). A budget belongs to one open, like
    /// the caches: it is not recorded in the manifest. At least 16 MiB
    /// ([`MIN_MEMORY_BUDGET`](crate::MIN_MEMORY_BUDGET)); [`Options::validate`] refuses
    /// less with `InvalidArgument`.
    pub memory_budget: Option<usize>,
}

/// Options of one keyspace, given to [`crate::Db::keyspace_with`] and kept in the
/// manifest, so a reopened store separates values as before.
///
/// Like [`Options`], it is `#[non_exhaustive]`: build it from `default()` or
/// [`KeyspaceOptions::separated`] and the chainable setters.
///
/// ```
/// use cairn::{Db, KeyspaceOptions, Options};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let db = Db::open(dir.path(), Options::default())?;
/// let media = db.keyspace_with(
///     "media",
///     KeyspaceOptions::separated(KeyspaceOptions::RECOMMENDED_BLOB_THRESHOLD),
/// )?;
/// // The same options, built with the setter.
/// let same = KeyspaceOptions::default().blob_threshold(Some(4 << 10));
/// assert_eq!(same, KeyspaceOptions::separated(4 << 10));
///
/// let video = vec![7u8; 64 << 10];
/// media.insert("clip.mp4", &video)?; // 64 KiB: goes to the value log
/// assert_eq!(media.get("clip.mp4")?, Some(video));
/// # db.close()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct KeyspaceOptions {
    /// Values of at least this many bytes are separated into the value log: written once
    /// to a blob file instead of to the log and every compaction, which suits values of a
    /// few KiB and up (recommended: [`KeyspaceOptions::RECOMMENDED_BLOB_THRESHOLD`],
    /// 4 KiB). Separated values may be up to `u32::MAX` bytes (inline ones up to 32 MiB)
    /// and can be streamed ([`crate::Keyspace::insert_from`],
    /// [`crate::Keyspace::get_reader`]). `None` (the default): the store's
    /// [`Options::blob_threshold`] applies (off unless set).
    pub blob_threshold: Option<usize>,
    /// The keyspace's merge operator ([`crate::MergeOperator`]), which combines the
    /// operands [`crate::Keyspace::merge`] writes. `None` (the default): merges are
    /// refused. Its name is recorded in the manifest; a later open must give an operator
    /// of the same name to read the operands (see [`KeyspaceOptions::merge_operator`]).
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
}

impl fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyspaceOptions")
            .field("blob_threshold", &self.blob_threshold)
            .field(
                "merge_operator",
                &self.merge_operator.as_ref().map(|o| o.name()),
            )
            .finish()
    }
}

/// Options are equal when they set the same threshold and operators of the same name.
impl PartialEq for KeyspaceOptions {
    fn eq(&self, other: &KeyspaceOptions) -> bool {
        self.blob_threshold == other.blob_threshold
            && self.merge_operator.as_ref().map(|o| o.name())
                == other.merge_operator.as_ref().map(|o| o.name())
    }
}

impl Eq for KeyspaceOptions {}

impl KeyspaceOptions {
    /// A good separation threshold for mixed workloads: 4 KiB. Smaller values are cheaper
    /// to keep inline (a point read of a separated value costs one more read).
    pub const RECOMMENDED_BLOB_THRESHOLD: usize = 4 << 10;

    /// Options that separate values of at least `threshold` bytes.
    pub fn separated(threshold: usize) -> KeyspaceOptions {
        KeyspaceOptions {
            blob_threshold: Some(threshold),
            merge_operator: None,
        }
    }

    /// Sets [`KeyspaceOptions::merge_operator`]: the keyspace accepts
    /// [`crate::Keyspace::merge`] and reads merge its operands with `operator`.
    ///
    /// The operator's name is recorded with the keyspace the first time it is given.
    /// Opening the keyspace later with an operator of another name fails with
    /// `InvalidArgument` (its operands were written for the recorded one); opening it
    /// without one works, but reads that meet an operand and new merges fail with
    /// `InvalidArgument` until the operator is given again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use cairn::{AddI64, Append, Db, KeyspaceOptions, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let hits = db.keyspace_with("hits", KeyspaceOptions::default().merge_operator(Arc::new(AddI64)))?;
    /// hits.merge("/index.html", "1")?; // no read: an operand is written
    /// hits.merge("/index.html", "1")?;
    /// assert_eq!(hits.get("/index.html")?, Some(b"2".to_vec()));
    /// assert_eq!(hits.incr("/index.html", 5)?, 7); // counters read through operands
    ///
    /// let log = db.keyspace_with("log", KeyspaceOptions::default().merge_operator(Arc::new(Append::with_separator("\n"))))?;
    /// log.merge("today", "started")?;
    /// log.merge("today", "stopped")?;
    /// assert_eq!(log.get("today")?, Some(b"started\nstopped".to_vec()));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn merge_operator(mut self, operator: Arc<dyn MergeOperator>) -> KeyspaceOptions {
        self.merge_operator = Some(operator);
        self
    }

    /// Sets [`KeyspaceOptions::blob_threshold`].
    #[must_use]
    pub fn blob_threshold(mut self, blob_threshold: Option<usize>) -> KeyspaceOptions {
        self.blob_threshold = blob_threshold;
        self
    }
}

/// The smallest `Options::memory_budget`: 16 MiB (a 4 MiB memtable share, four memtables
/// of 1 MiB, a 2 MiB index and filter share, a 10 MiB block cache; see `budget.rs`).
pub const MIN_MEMORY_BUDGET: usize = 16 << 20;

impl Default for Options {
    fn default() -> Options {
        Options {
            durability: Durability::Sync,
            create_if_missing: true,
            memtable_size: 16 << 20,
            memtables_per_flush: 4,
            max_immutable_memtables: 8,
            max_wal_size: 256 << 20,
            block_cache_size: 64 << 20,
            row_cache_size: 0,
            max_open_tables: 500,
            mmap_reads: false,
            block_size: 4 << 10,
            restart_interval: 16,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 12,
            l0_stop_trigger: 20,
            level1_size: 256 << 20,
            level_size_multiplier: 10,
            table_size: 64 << 20,
            background_threads: 2,
            tombstone_compaction_percent: 50,
            idle_compaction_percent: 25,
            memtable_huge_pages: false,
            salvage_wal: false,
            refresh_interval: None,
            clock: Clock::system(),
            expiry_check_interval: Duration::from_secs(60),
            blob_threshold: None,
            blob_file_size: 256 << 20,
            blob_gc_garbage_percent: 50,
            max_open_blob_files: 100,
            memory_budget: None,
        }
    }
}

/// Chainable setters, one per field, each named after the field it sets (see the field for
/// its meaning, default and range). [`Options::validate`] (called by every open) checks the
/// result.
impl Options {
    /// Sets [`Options::durability`].
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Options {
        self.durability = durability;
        self
    }

    /// Sets [`Options::create_if_missing`].
    #[must_use]
    pub fn create_if_missing(mut self, create_if_missing: bool) -> Options {
        self.create_if_missing = create_if_missing;
        self
    }

    /// Sets [`Options::memtable_size`].
    #[must_use]
    pub fn memtable_size(mut self, memtable_size: usize) -> Options {
        self.memtable_size = memtable_size;
        self
    }

    /// Sets [`Options::memtables_per_flush`].
    #[must_use]
    pub fn memtables_per_flush(mut self, memtables_per_flush: usize) -> Options {
        self.memtables_per_flush = memtables_per_flush;
        self
    }

    /// Sets [`Options::max_immutable_memtables`].
    #[must_use]
    pub fn max_immutable_memtables(mut self, max_immutable_memtables: usize) -> Options {
        self.max_immutable_memtables = max_immutable_memtables;
        self
    }

    /// Sets [`Options::max_wal_size`].
    #[must_use]
    pub fn max_wal_size(mut self, max_wal_size: u64) -> Options {
        self.max_wal_size = max_wal_size;
        self
    }

    /// Sets [`Options::block_cache_size`].
    #[must_use]
    pub fn block_cache_size(mut self, block_cache_size: usize) -> Options {
        self.block_cache_size = block_cache_size;
        self
    }

    /// Sets [`Options::row_cache_size`].
    #[must_use]
    pub fn row_cache_size(mut self, row_cache_size: usize) -> Options {
        self.row_cache_size = row_cache_size;
        self
    }

    /// Sets [`Options::mmap_reads`].
    #[must_use]
    pub fn mmap_reads(mut self, mmap_reads: bool) -> Options {
        self.mmap_reads = mmap_reads;
        self
    }

    /// Sets [`Options::max_open_tables`].
    #[must_use]
    pub fn max_open_tables(mut self, max_open_tables: usize) -> Options {
        self.max_open_tables = max_open_tables;
        self
    }

    /// Sets [`Options::block_size`].
    #[must_use]
    pub fn block_size(mut self, block_size: usize) -> Options {
        self.block_size = block_size;
        self
    }

    /// Sets [`Options::restart_interval`].
    #[must_use]
    pub fn restart_interval(mut self, restart_interval: usize) -> Options {
        self.restart_interval = restart_interval;
        self
    }

    /// Sets [`Options::compression`].
    #[must_use]
    pub fn compression(mut self, compression: Compression) -> Options {
        self.compression = compression;
        self
    }

    /// Sets [`Options::bloom_bits_per_key`].
    #[must_use]
    pub fn bloom_bits_per_key(mut self, bloom_bits_per_key: u32) -> Options {
        self.bloom_bits_per_key = bloom_bits_per_key;
        self
    }

    /// Sets [`Options::l0_compaction_trigger`].
    #[must_use]
    pub fn l0_compaction_trigger(mut self, l0_compaction_trigger: usize) -> Options {
        self.l0_compaction_trigger = l0_compaction_trigger;
        self
    }

    /// Sets [`Options::l0_slowdown_trigger`].
    #[must_use]
    pub fn l0_slowdown_trigger(mut self, l0_slowdown_trigger: usize) -> Options {
        self.l0_slowdown_trigger = l0_slowdown_trigger;
        self
    }

    /// Sets [`Options::l0_stop_trigger`].
    #[must_use]
    pub fn l0_stop_trigger(mut self, l0_stop_trigger: usize) -> Options {
        self.l0_stop_trigger = l0_stop_trigger;
        self
    }

    /// Sets [`Options::level1_size`].
    #[must_use]
    pub fn level1_size(mut self, level1_size: u64) -> Options {
        self.level1_size = level1_size;
        self
    }

    /// Sets [`Options::level_size_multiplier`].
    #[must_use]
    pub fn level_size_multiplier(mut self, level_size_multiplier: u64) -> Options {
        self.level_size_multiplier = level_size_multiplier;
        self
    }

    /// Sets [`Options::table_size`].
    #[must_use]
    pub fn table_size(mut self, table_size: u64) -> Options {
        self.table_size = table_size;
        self
    }

    /// Sets [`Options::background_threads`].
    #[must_use]
    pub fn background_threads(mut self, background_threads: usize) -> Options {
        self.background_threads = background_threads;
        self
    }

    /// Sets [`Options::tombstone_compaction_percent`].
    #[must_use]
    pub fn tombstone_compaction_percent(mut self, tombstone_compaction_percent: u8) -> Options {
        self.tombstone_compaction_percent = tombstone_compaction_percent;
        self
    }

    /// Sets [`Options::idle_compaction_percent`].
    #[must_use]
    pub fn idle_compaction_percent(mut self, idle_compaction_percent: u8) -> Options {
        self.idle_compaction_percent = idle_compaction_percent;
        self
    }

    /// Sets [`Options::memtable_huge_pages`].
    #[must_use]
    pub fn memtable_huge_pages(mut self, memtable_huge_pages: bool) -> Options {
        self.memtable_huge_pages = memtable_huge_pages;
        self
    }

    /// Sets [`Options::salvage_wal`].
    #[must_use]
    pub fn salvage_wal(mut self, salvage_wal: bool) -> Options {
        self.salvage_wal = salvage_wal;
        self
    }

    /// Sets [`Options::refresh_interval`].
    #[must_use]
    pub fn refresh_interval(mut self, refresh_interval: Option<Duration>) -> Options {
        self.refresh_interval = refresh_interval;
        self
    }

    /// Sets [`Options::clock`].
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Options {
        self.clock = clock;
        self
    }

    /// Sets [`Options::expiry_check_interval`].
    #[must_use]
    pub fn expiry_check_interval(mut self, expiry_check_interval: Duration) -> Options {
        self.expiry_check_interval = expiry_check_interval;
        self
    }

    /// Sets [`Options::blob_threshold`].
    #[must_use]
    pub fn blob_threshold(mut self, blob_threshold: Option<usize>) -> Options {
        self.blob_threshold = blob_threshold;
        self
    }

    /// Sets [`Options::blob_file_size`].
    #[must_use]
    pub fn blob_file_size(mut self, blob_file_size: u64) -> Options {
        self.blob_file_size = blob_file_size;
        self
    }

    /// Sets [`Options::blob_gc_garbage_percent`].
    #[must_use]
    pub fn blob_gc_garbage_percent(mut self, blob_gc_garbage_percent: u8) -> Options {
        self.blob_gc_garbage_percent = blob_gc_garbage_percent;
        self
    }

    /// Sets [`Options::max_open_blob_files`].
    #[must_use]
    pub fn max_open_blob_files(mut self, max_open_blob_files: usize) -> Options {
        self.max_open_blob_files = max_open_blob_files;
        self
    }

    /// Sets [`Options::memory_budget`].
    #[must_use]
    pub fn memory_budget(mut self, memory_budget: Option<usize>) -> Options {
        self.memory_budget = memory_budget;
        self
    }
}

impl Options {
    /// Sealed memtables that start a flush without being asked: `memtables_per_flush`,
    /// or `max_immutable_memtables` if fewer (writers wait at that many).
    pub(crate) fn memtables_to_flush(&self) -> usize {
        self.memtables_per_flush
            .min(self.max_immutable_memtables)
            .max(1)
    }

    /// Checks that the options can be run with.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::invalid(format!("Options: {what}")));
        if let Durability::Async { queue_depth: 0 } = self.durability {
            return bad("Durability::Async needs queue_depth >= 1");
        }
        if let Durability::Periodic(d) = self.durability {
            if d.is_zero() {
                return bad("Durability::Periodic needs a non-zero interval");
            }
        }
        if self.refresh_interval.is_some_and(|d| d.is_zero()) {
            return bad("refresh_interval needs a non-zero interval");
        }
        if self.memtable_size < 1024 {
            return bad("memtable_size must be at least 1 KiB");
        }
        if self.max_immutable_memtables == 0 {
            return bad("max_immutable_memtables must be at least 1");
        }
        if self.memtables_per_flush == 0 {
            return bad("memtables_per_flush must be at least 1");
        }
        if self.max_wal_size < 4096 {
            return bad("max_wal_size must be at least 4 KiB");
        }
        if !(64..=(16 << 20)).contains(&self.block_size) {
            return bad("block_size must be between 64 B and 16 MiB");
        }
        if !(1..=1024).contains(&self.restart_interval) {
            return bad("restart_interval must be between 1 and 1024");
        }
        if let Compression::Zstd(level) = self.compression {
            if !cfg!(feature = "zstd") {
                return bad(
                    "compression Zstd needs the cairn crate's \"zstd\" feature, which this \
                     build was compiled without",
                );
            }
            if !(1..=22).contains(&level) {
                return bad("zstd level must be between 1 and 22");
            }
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key must be at most 64");
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_trigger < self.l0_compaction_trigger
            || self.l0_stop_trigger < self.l0_slowdown_trigger
        {
            return bad(
                "need 1 <= l0_compaction_trigger <= l0_slowdown_trigger <= l0_stop_trigger",
            );
        }
        if self.level1_size < 4096 || self.level_size_multiplier < 2 {
            return bad("level1_size must be at least 4 KiB and level_size_multiplier at least 2");
        }
        if self.table_size < 4096 {
            return bad("table_size must be at least 4 KiB");
        }
        if self.max_open_tables == 0 {
            return bad("max_open_tables must be at least 1");
        }
        if self.expiry_check_interval.is_zero() {
            return bad("expiry_check_interval must be non-zero");
        }
        if self.blob_file_size < 4096 {
            return bad("blob_file_size must be at least 4 KiB");
        }
        if !(1..=100).contains(&self.blob_gc_garbage_percent) {
            return bad("blob_gc_garbage_percent must be between 1 and 100");
        }
        if self.tombstone_compaction_percent > 100 {
            return bad("tombstone_compaction_percent must be at most 100");
        }
        if self.max_open_blob_files == 0 {
            return bad("max_open_blob_files must be at least 1");
        }
        if self.background_threads == 0 {
            return bad("background_threads must be at least 1");
        }
        if self.memory_budget.is_some_and(|b| b < MIN_MEMORY_BUDGET) {
            return bad("memory_budget must be at least 16 MiB (MIN_MEMORY_BUDGET)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setter sets its own field: a literal with every field changed equals the same
    /// options built with the setters (compared through `Debug`, which shows every field).
    #[test]
    fn every_setter_sets_its_field() {
        let literal = Options {
            durability: Durability::Buffered,
            create_if_missing: false,
            memtable_size: 1,
            memtables_per_flush: 2,
            max_immutable_memtables: 3,
            max_wal_size: 4,
            block_cache_size: 5,
            row_cache_size: 27,
            max_open_tables: 6,
            mmap_reads: true,
            block_size: 7,
            restart_interval: 8,
            compression: Compression::Snappy,
            bloom_bits_per_key: 9,
            l0_compaction_trigger: 10,
            l0_slowdown_trigger: 11,
            l0_stop_trigger: 12,
            level1_size: 13,
            level_size_multiplier: 14,
            table_size: 15,
            background_threads: 16,
            tombstone_compaction_percent: 24,
            idle_compaction_percent: 26,
            memtable_huge_pages: true,
            salvage_wal: true,
            refresh_interval: Some(Duration::from_millis(23)),
            clock: Clock::manual(17),
            expiry_check_interval: Duration::from_millis(18),
            blob_threshold: Some(19),
            blob_file_size: 20,
            blob_gc_garbage_percent: 21,
            max_open_blob_files: 22,
            memory_budget: Some(25),
        };
        let built = Options::default()
            .durability(Durability::Buffered)
            .create_if_missing(false)
            .memtable_size(1)
            .memtables_per_flush(2)
            .max_immutable_memtables(3)
            .max_wal_size(4)
            .block_cache_size(5)
            .row_cache_size(27)
            .max_open_tables(6)
            .mmap_reads(true)
            .block_size(7)
            .restart_interval(8)
            .compression(Compression::Snappy)
            .bloom_bits_per_key(9)
            .l0_compaction_trigger(10)
            .l0_slowdown_trigger(11)
            .l0_stop_trigger(12)
            .level1_size(13)
            .level_size_multiplier(14)
            .table_size(15)
            .background_threads(16)
            .tombstone_compaction_percent(24)
            .idle_compaction_percent(26)
            .memtable_huge_pages(true)
            .salvage_wal(true)
            .refresh_interval(Some(Duration::from_millis(23)))
            .clock(Clock::manual(17))
            .expiry_check_interval(Duration::from_millis(18))
            .blob_threshold(Some(19))
            .blob_file_size(20)
            .blob_gc_garbage_percent(21)
            .max_open_blob_files(22)
            .memory_budget(Some(25));
        assert_eq!(format!("{literal:?}"), format!("{built:?}"));
        assert_eq!(
            KeyspaceOptions::default().blob_threshold(Some(5)),
            KeyspaceOptions::separated(5)
        );
    }

    /// Without the `zstd` feature, Zstandard is refused before any file is touched.
    #[cfg(not(feature = "zstd"))]
    #[test]
    fn zstd_needs_the_feature() {
        let err = Options::default()
            .compression(Compression::Zstd(3))
            .validate();
        assert!(
            matches!(&err, Err(Error::InvalidArgument(m)) if m.contains("\"zstd\" feature")),
            "{err:?}"
        );
    }

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(Options::default().validate().is_ok());
        let cases: Vec<(Options, &str)> = vec![
            (
                Options {
                    durability: Durability::Async { queue_depth: 0 },
                    ..Options::default()
                },
                "queue_depth",
            ),
            (
                Options {
                    durability: Durability::Periodic(Duration::ZERO),
                    ..Options::default()
                },
                "Periodic",
            ),
            (
                Options {
                    l0_stop_trigger: 1,
                    ..Options::default()
                },
                "l0_",
            ),
            (
                Options {
                    compression: Compression::Zstd(30),
                    ..Options::default()
                },
                "zstd",
            ),
            (
                Options {
                    blob_file_size: 100,
                    ..Options::default()
                },
                "blob_file_size",
            ),
            (
                Options {
                    blob_gc_garbage_percent: 0,
                    ..Options::default()
                },
                "blob_gc_garbage_percent",
            ),
            (
                Options {
                    tombstone_compaction_percent: 101,
                    ..Options::default()
                },
                "tombstone_compaction_percent",
            ),
            (
                Options {
                    max_open_blob_files: 0,
                    ..Options::default()
                },
                "max_open_blob_files",
            ),
            (
                Options {
                    memory_budget: Some(1 << 20),
                    ..Options::default()
                },
                "memory_budget",
            ),
        ];
        for (options, needle) in cases {
            let msg = options.validate().err().map(|e| e.to_string());
            assert!(
                msg.as_deref().is_some_and(|m| m.contains(needle)),
                "{msg:?} should mention {needle}"
            );
        }
    }
}
