//! Counters of the store's work, kept by the threads that do it, and [`Stats`], the
//! snapshot of them `Db::stats` returns. Counters only grow; they are relaxed atomics,
//! read without a lock, so a snapshot is not one instant (each counter is exact).

use std::sync::atomic::AtomicU64;

/// Counters of the store's work since open.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) stalls: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) flush_bytes: AtomicU64,
    pub(crate) compaction_bytes: AtomicU64,
    /// Key and value bytes appended to blob files (separated writes, GC relocations).
    pub(crate) blob_bytes: AtomicU64,
    /// Key and value bytes of user writes (a separated value with its full length).
    pub(crate) user_bytes: AtomicU64,
    /// Runs of merge operands a compaction kept because the operator failed.
    pub(crate) merge_failures: AtomicU64,
}

/// Statistics of a store, for monitoring and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// The largest seqno readers see.
    pub last_seqno: u64,
    /// The largest seqno known to survive power loss.
    pub durable_seqno: u64,
    /// Table files per level, summed over keyspaces.
    pub tables_per_level: Vec<usize>,
    /// Bytes of table files, summed over keyspaces.
    pub table_bytes: u64,
    /// Bytes of the memtables (active and waiting to be flushed), as charged: each entry's
    /// key, value and a fixed per-entry overhead (node, links, its part of the memtable's
    /// bloom filter and of arena slack), plus each non-empty memtable's point index
    /// (about 1/16 of `memtable_size`).
    pub memtable_bytes: u64,
    /// The memory budget the store was opened with (`Options::memory_budget`), if any.
    /// Its shares are the three limits below.
    pub memory_budget: Option<u64>,
    /// The bound on [`Stats::memtable_bytes`]: the memory budget's memtable share
    /// (`None` without a budget; writers are then held back by memtable count alone).
    pub memtable_limit: Option<u64>,
    /// Bytes the block cache holds: decoded blocks plus a fixed charge per block for its
    /// slot (never more than [`Stats::block_cache_capacity`]).
    pub block_cache_bytes: u64,
    /// The block cache's capacity: `Options::block_cache_size`, or the memory budget's
    /// cache share.
    pub block_cache_capacity: u64,
    /// Bytes the row cache holds: its sets (a sixth of its capacity, allocated when the
    /// store opens) and its rows, each with a fixed charge for its allocation (never more
    /// than [`Stats::row_cache_capacity`]; 0 without a row cache).
    pub row_cache_bytes: u64,
    /// The row cache's capacity: `Options::row_cache_size`, capped by the memory budget.
    pub row_cache_capacity: u64,
    /// Point reads of a table answered by the row cache.
    pub row_cache_hits: u64,
    /// Point reads of a table that passed its filter and found no row in the row cache.
    pub row_cache_misses: u64,
    /// Bytes of the decoded index blocks (with their in-memory fences) and bloom filters
    /// held by open tables: the sum over every live table reader, whether the table cache
    /// keeps it or a read, scan, compaction or super version holds it.
    pub index_filter_bytes: u64,
    /// The bound the table cache keeps [`Stats::index_filter_bytes`] to: the memory
    /// budget's index and filter share (`None` without a budget; tables are then bounded
    /// by count, `Options::max_open_tables`). Tables being read by a scan or compaction
    /// stay open and count even past it.
    pub index_filter_limit: Option<u64>,
    /// Bytes the WAL writer has written to log files.
    pub wal_bytes_written: u64,
    /// Fsyncs of log files that made records durable: a commit's in `Sync` mode, a
    /// periodic or explicit sync's, a memtable switch's, and the background ones of the
    /// log thread. A sync with nothing new to make durable makes none and counts none.
    pub wal_syncs: u64,
    /// Bytes written to tables by flushes.
    pub flush_bytes_written: u64,
    /// Bytes written to tables by compactions.
    pub compaction_bytes_written: u64,
    /// Key and value bytes written to blob files: separated values as they are written,
    /// and values moved by value-log garbage collection.
    pub blob_bytes_written: u64,
    /// Bytes of the blob files the current version lists (flushed separated values, live
    /// and garbage; see [`crate::Db::space_stats`]).
    pub blob_bytes: u64,
    /// Bytes of user keys and values written (the denominator of write amplification).
    pub user_bytes_written: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Compactions completed.
    pub compactions: u64,
    /// Block-cache hits and misses.
    pub cache_hits: u64,
    /// Block-cache misses.
    pub cache_misses: u64,
    /// Missed blocks the block cache did not keep: a full cache keeps a block only when it
    /// is missed again soon after (see `Options::block_cache_size`). Many refusals with a
    /// low hit rate mean the data read is much larger than the cache.
    pub cache_refused: u64,
    /// Times a writer was slowed or held for background work.
    pub write_stalls: u64,
    /// Times a compaction could not combine a key's merge operands because the
    /// keyspace's merge operator failed; the operands were kept as they were (reads of
    /// that key report [`crate::Error::MergeFailed`]).
    pub merge_failures: u64,
}
