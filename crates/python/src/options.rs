//! `cairn.Db(...)` keyword arguments into engine [`cairn::Options`].
//!
//! Every option left at `None` keeps the engine's documented default; the engine validates
//! the result when the store opens (`InvalidArgumentError` naming the option).

use pyo3::prelude::*;

use crate::args::{compression, durability, seconds};

/// The options `cairn.Db` accepts, as Python passed them.
#[derive(Default)]
pub(crate) struct DbOptions<'a> {
    pub(crate) durability: Option<&'a str>,
    pub(crate) create_if_missing: Option<bool>,
    pub(crate) memtable_size: Option<usize>,
    pub(crate) max_wal_size: Option<u64>,
    pub(crate) block_cache_size: Option<usize>,
    pub(crate) max_open_tables: Option<usize>,
    pub(crate) block_size: Option<usize>,
    pub(crate) compression: Option<&'a str>,
    pub(crate) bloom_bits_per_key: Option<u32>,
    pub(crate) table_size: Option<u64>,
    pub(crate) blob_threshold: Option<usize>,
    pub(crate) background_threads: Option<usize>,
    pub(crate) salvage_wal: Option<bool>,
    pub(crate) refresh_interval: Option<f64>,
    pub(crate) memory_budget: Option<usize>,
    pub(crate) tombstone_compaction_percent: Option<u8>,
    pub(crate) idle_compaction_percent: Option<u8>,
    pub(crate) memtable_huge_pages: Option<bool>,
    pub(crate) mmap_reads: Option<bool>,
    pub(crate) row_cache_size: Option<usize>,
}

impl DbOptions<'_> {
    /// The engine options.
    pub(crate) fn build(&self, py: Python<'_>) -> PyResult<cairn::Options> {
        let mut o = cairn::Options::default();
        if let Some(d) = self.durability {
            o = o.durability(durability(py, d)?);
        }
        if let Some(v) = self.create_if_missing {
            o = o.create_if_missing(v);
        }
        if let Some(v) = self.memtable_size {
            o = o.memtable_size(v);
        }
        if let Some(v) = self.max_wal_size {
            o = o.max_wal_size(v);
        }
        if let Some(v) = self.block_cache_size {
            o = o.block_cache_size(v);
        }
        if let Some(v) = self.max_open_tables {
            o = o.max_open_tables(v);
        }
        if let Some(v) = self.mmap_reads {
            o = o.mmap_reads(v);
        }
        if let Some(v) = self.row_cache_size {
            o = o.row_cache_size(v);
        }
        if let Some(v) = self.block_size {
            o = o.block_size(v);
        }
        if let Some(c) = self.compression {
            o = o.compression(compression(py, c)?);
        }
        if let Some(v) = self.bloom_bits_per_key {
            o = o.bloom_bits_per_key(v);
        }
        if let Some(v) = self.table_size {
            o = o.table_size(v);
        }
        if let Some(v) = self.blob_threshold {
            o = o.blob_threshold(Some(v));
        }
        if let Some(v) = self.background_threads {
            o = o.background_threads(v);
        }
        if let Some(v) = self.salvage_wal {
            o = o.salvage_wal(v);
        }
        if let Some(v) = self.memory_budget {
            o = o.memory_budget(Some(v));
        }
        if let Some(v) = self.tombstone_compaction_percent {
            o = o.tombstone_compaction_percent(v);
        }
        if let Some(v) = self.idle_compaction_percent {
            o = o.idle_compaction_percent(v);
        }
        if let Some(v) = self.memtable_huge_pages {
            o = o.memtable_huge_pages(v);
        }
        if let Some(secs) = self.refresh_interval {
            o = o.refresh_interval(Some(seconds(py, "refresh_interval", secs)?));
        }
        Ok(o)
    }
}
