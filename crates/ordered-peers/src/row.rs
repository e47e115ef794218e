//! One result row: a workload on a store, as the report, the JSON file and the Go driver
//! all spell it.

use cairn_harness::report::per_second;
use cairn_harness::Summary;
use serde::{Deserialize, Serialize};

use crate::data::KEY_LEN;
use crate::workload::Outcome;

/// One workload's result on one store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// `ordered` (100-byte values, `--num` keys), `large` (large values), `open`
    /// (`open-ro`: read-only opens), `readers` (`mp-readers`: reader processes beside a
    /// writer process) or `txn` (transactions, `src/txn.rs`).
    #[serde(default)]
    pub suite: String,
    /// Store and configuration name, e.g. `rocksdb-tuned`.
    pub store: String,
    /// How the store was configured.
    pub config: String,
    /// What a committed write survives.
    pub durability: String,
    /// Workload name.
    pub workload: String,
    /// Threads.
    pub threads: usize,
    /// Keys of the workload's key space.
    pub num: u64,
    /// Bytes of every value.
    pub value_size: usize,
    /// Writes per batch of the batched writes.
    pub batch: usize,
    /// Operations done.
    pub ops: u64,
    /// Wall time.
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Key and value megabytes (10^6) per second.
    pub mb_per_sec: f64,
    /// Reads that found their key, or entries seeks visited.
    pub found: Option<u64>,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency, microseconds.
    pub p999_us: f64,
    /// Largest latency, microseconds.
    pub max_us: f64,
    /// 99th percentile latency of a mix's writes, microseconds.
    pub write_p99_us: Option<f64>,
    /// 99.9th percentile latency of a mix's writes, microseconds.
    pub write_p999_us: Option<f64>,
    /// Bytes of the store's directory after the workload.
    pub disk_bytes: Option<u64>,
    /// Bytes of the store's directory after the workload and `--settle-seconds` of idle
    /// time, in which the store's background work (flushes, compactions) may run: the
    /// same wait for every store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_disk_bytes: Option<u64>,
    /// Ordered workloads of the Rust stores: bytes the worker process sent toward storage
    /// during a write workload and its idle time after it (`/proc/self/io`, see
    /// `resources.rs`); over the bytes of keys and values written it is the write
    /// amplification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_write_bytes: Option<u64>,
    /// Ordered workloads of the Rust stores: the worker process's peak resident memory
    /// when the row ended (`VmHWM`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// Reader processes (`mp-readers`): the writer process's puts per second in the same
    /// window as the readers'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_ops_per_sec: Option<f64>,
    /// Opens (`open-ro`): the median time of the first lookup after the open, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_get_us: Option<f64>,
    /// Reader processes: the mean time a reader took to open the store beside the
    /// writer, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_us: Option<f64>,
    /// Opens: the median number of file descriptors the open added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_opened: Option<f64>,
    /// Opens: the median resident memory the open and the first lookup added to the
    /// process, MB (10^6 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_mb: Option<f64>,
    /// Follower readers: refreshes that moved the view, over all readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refreshes: Option<u64>,
    /// Follower readers: the mean time of a refresh that moved the view, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_mean_us: Option<f64>,
    /// Follower readers: the longest refresh, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_max_us: Option<f64>,
    /// Reader processes: the rounds run; the row is the one with the median reads per
    /// second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u64>,
    /// Reader processes: the slowest round's reads per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_sec_min: Option<f64>,
    /// Reader processes: the fastest round's reads per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_sec_max: Option<f64>,
    /// Transactions (`txn-*`): attempts refused (conflicts, lock timeouts, compare-and-swap
    /// mismatches) and retried; `ops` counts the committed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborts: Option<u64>,
}

/// What a row is about, besides its measurements.
pub struct Labels<'a> {
    /// `ordered` or `large`.
    pub suite: &'a str,
    /// Store and configuration name.
    pub store: &'a str,
    /// Configuration.
    pub config: &'a str,
    /// Durability.
    pub durability: &'a str,
    /// Workload name.
    pub workload: String,
    /// Threads.
    pub threads: usize,
    /// Keys.
    pub num: u64,
    /// Value bytes.
    pub value_size: usize,
    /// Batch size.
    pub batch: usize,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl Row {
    /// The row of `outcome`.
    pub fn new(labels: Labels<'_>, outcome: &Outcome, disk_bytes: Option<u64>) -> Row {
        let seconds = outcome.elapsed.as_secs_f64();
        let rate = per_second(outcome.ops as f64, outcome.elapsed);
        let all = Summary::of(&outcome.latency);
        let writes = outcome
            .write_latency
            .as_ref()
            .map(Summary::of)
            .filter(|w| !w.is_empty());
        Row {
            suite: labels.suite.to_owned(),
            store: labels.store.to_owned(),
            config: labels.config.to_owned(),
            durability: labels.durability.to_owned(),
            workload: labels.workload,
            threads: labels.threads,
            num: labels.num,
            value_size: labels.value_size,
            batch: labels.batch,
            ops: outcome.ops,
            seconds,
            ops_per_sec: rate,
            mb_per_sec: rate * (KEY_LEN + labels.value_size) as f64 / 1e6,
            found: outcome.found,
            p50_us: us(all.p50_ns),
            p99_us: us(all.p99_ns),
            p999_us: us(all.p999_ns),
            max_us: us(all.max_ns),
            write_p99_us: writes.map(|w| us(w.p99_ns)),
            write_p999_us: writes.map(|w| us(w.p999_ns)),
            disk_bytes,
            settled_disk_bytes: None,
            disk_write_bytes: None,
            peak_rss_bytes: None,
            writer_ops_per_sec: None,
            first_get_us: None,
            open_us: None,
            files_opened: None,
            rss_mb: None,
            refreshes: None,
            refresh_mean_us: None,
            refresh_max_us: None,
            rounds: None,
            ops_per_sec_min: None,
            ops_per_sec_max: None,
            aborts: None,
        }
    }
}
