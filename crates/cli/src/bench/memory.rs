//! The memory line of a benchmark: the process's resident memory now and at its peak
//! (`VmRSS` and `VmHWM` of /proc/self/status, Linux only), and each share of the store's
//! memory as `Db::stats` reports it (memtables, block cache, index and filter blocks of
//! open tables, each with its bound when there is one, and the memory budget).

use cairn::Stats;
use serde_json::{json, Value};

/// Memory after one benchmark.
#[derive(Debug, Clone)]
pub struct Memory {
    /// Resident bytes now, if the OS says.
    pub rss: Option<u64>,
    /// The most resident bytes since the process started, if the OS says.
    pub peak_rss: Option<u64>,
    pub stats: Stats,
}

/// A `kB` field of /proc/self/status, in bytes.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb = line
        .get(field.len()..)?
        .trim()
        .trim_end_matches("kB")
        .trim();
    kb.parse::<u64>().ok().map(|kb| kb * 1024)
}

impl Memory {
    /// Reads the process's memory and takes the store's `stats`.
    pub fn sample(stats: Stats) -> Memory {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        Memory {
            rss: status_kb(&status, "VmRSS:"),
            peak_rss: status_kb(&status, "VmHWM:"),
            stats,
        }
    }

    /// One indented line for the text report.
    pub fn text(&self) -> String {
        let mb = |b: u64| format!("{:.1}", b as f64 / 1_048_576.0);
        let of = |used: u64, limit: Option<u64>| match limit {
            Some(l) => format!("{} of {} MB", mb(used), mb(l)),
            None => format!("{} MB", mb(used)),
        };
        let s = &self.stats;
        let rss = match (self.rss, self.peak_rss) {
            (Some(now), Some(peak)) => format!("rss {} MB (peak {} MB)", mb(now), mb(peak)),
            _ => "rss unknown".to_string(),
        };
        let budget = s
            .memory_budget
            .map_or_else(String::new, |b| format!("; budget {} MB", mb(b)));
        format!(
            "    memory: {rss}; memtables {}, block cache {}, index+filter {}{budget}\n",
            of(s.memtable_bytes, s.memtable_limit),
            of(s.block_cache_bytes, Some(s.block_cache_capacity)),
            of(s.index_filter_bytes, s.index_filter_limit),
        )
    }

    /// The JSON object of the same facts.
    pub fn json(&self) -> Value {
        let s = &self.stats;
        json!({
            "rss_bytes": self.rss,
            "peak_rss_bytes": self.peak_rss,
            "memory_budget": s.memory_budget,
            "memtable_bytes": s.memtable_bytes,
            "memtable_limit": s.memtable_limit,
            "block_cache_bytes": s.block_cache_bytes,
            "block_cache_capacity": s.block_cache_capacity,
            "index_filter_bytes": s.index_filter_bytes,
            "index_filter_limit": s.index_filter_limit,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_bytes() {
        let status = "Name:\tcairn\nVmHWM:\t  123456 kB\nVmRSS:\t    2048 kB\n";
        assert_eq!(status_kb(status, "VmHWM:"), Some(123_456 * 1024));
        assert_eq!(status_kb(status, "VmRSS:"), Some(2048 * 1024));
        assert_eq!(status_kb(status, "VmSwap:"), None);
        assert_eq!(status_kb("VmRSS:\tmany kB\n", "VmRSS:"), None);
    }

    #[test]
    fn the_line_names_each_share_and_its_bound() {
        let mut stats = Stats::default();
        stats.memtable_bytes = 1 << 20;
        stats.memtable_limit = Some(4 << 20);
        stats.block_cache_capacity = 10 << 20;
        stats.index_filter_bytes = 3 << 19;
        stats.memory_budget = Some(16 << 20);
        let m = Memory {
            rss: Some(30 << 20),
            peak_rss: Some(40 << 20),
            stats,
        };
        assert_eq!(
            m.text(),
            "    memory: rss 30.0 MB (peak 40.0 MB); memtables 1.0 of 4.0 MB, block cache 0.0 of \
             10.0 MB, index+filter 1.5 MB; budget 16.0 MB\n"
        );
        let v = m.json();
        assert_eq!(v["peak_rss_bytes"], 40 << 20);
        assert_eq!(v["memtable_limit"], 4 << 20);
        assert_eq!(v["index_filter_limit"], Value::Null);
    }
}
