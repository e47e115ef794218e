//! What a benchmark cost the ordered store: the engine's write counters
//! ([`cairn::Stats`]) over it, and the write amplification they give.

/// Store counters over one benchmark, from [`cairn::Stats`] before and after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteCost {
    /// Bytes of keys and values written by the benchmark.
    pub user_bytes: u64,
    /// Bytes appended to the write-ahead log.
    pub wal_bytes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes: u64,
    /// Bytes of tables written by compactions.
    pub compaction_bytes: u64,
    /// Key and value bytes written to blob files (separated values, GC moves).
    pub blob_written: u64,
    /// Bytes of all table files at the end (the store's space on disk, without the log).
    pub table_bytes: u64,
    /// Bytes of blob files at the end (flushed or not; 0 without value separation).
    pub blob_bytes: u64,
    /// Times writers were slowed or held back for background work.
    pub stalls: u64,
}

impl WriteCost {
    /// The change from `before` to `after`; the space figures are `after`'s.
    pub fn between(before: &cairn::Stats, after: &cairn::Stats) -> WriteCost {
        WriteCost {
            user_bytes: after
                .user_bytes_written
                .saturating_sub(before.user_bytes_written),
            wal_bytes: after
                .wal_bytes_written
                .saturating_sub(before.wal_bytes_written),
            flush_bytes: after
                .flush_bytes_written
                .saturating_sub(before.flush_bytes_written),
            compaction_bytes: after
                .compaction_bytes_written
                .saturating_sub(before.compaction_bytes_written),
            blob_written: after
                .blob_bytes_written
                .saturating_sub(before.blob_bytes_written),
            table_bytes: after.table_bytes,
            blob_bytes: after.blob_bytes,
            stalls: after.write_stalls.saturating_sub(before.write_stalls),
        }
    }

    /// Bytes the engine wrote to files (log, flushes, compactions, blob files) per byte
    /// of user data, if any user data was written.
    pub fn amplification(&self) -> Option<f64> {
        (self.user_bytes > 0).then(|| {
            (self.wal_bytes + self.flush_bytes + self.compaction_bytes + self.blob_written) as f64
                / self.user_bytes as f64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification_counts_every_file_write() {
        let cost = WriteCost {
            user_bytes: 100,
            wal_bytes: 110,
            flush_bytes: 60,
            compaction_bytes: 15,
            blob_written: 5,
            ..WriteCost::default()
        };
        assert_eq!(cost.amplification(), Some(1.9));
        assert_eq!(WriteCost::default().amplification(), None);
    }
}
