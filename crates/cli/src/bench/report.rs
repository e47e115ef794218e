//! What a benchmark measured, and its two renderings: db_bench's text lines and one JSON
//! object per benchmark.
//!
//! Text, per benchmark:
//!
//! ```text
//! fillrandom   :       2.345 micros/op 426439 ops/sec;   47.2 MB/s
//!     p50 0.9 µs  p99 3.1 µs  p99.9 12.0 µs  max 1.2 ms
//!     write-amp 1.85 (wal+flush+compaction bytes / user bytes)  space 62.3 MB (table bytes)  stalls 0
//! ```
//!
//! `micros/op` is db_bench's: the summed time of the benchmark's threads divided by the
//! operations, so it is the time one thread spends per operation; `ops/sec` is operations
//! over wall-clock time. MB is 2^20 bytes, as in db_bench.

use std::time::Duration;

use cairn_harness::latency::latency_json;
use cairn_harness::report::{duration_ns, per_second};
use cairn_harness::{Summary, WriteCost};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

/// What one latency histogram counts.
#[derive(Debug)]
pub struct Latency {
    /// Prefix on the text line (`reads`, `writes`, `writer`) or empty.
    pub label: &'static str,
    /// Operations per recorded sample: 1, or the batch size for batched writes.
    pub per_sample: u64,
    /// Nanoseconds per sample.
    pub hist: Histogram<u64>,
}

/// The result of one benchmark.
#[derive(Debug)]
pub struct Outcome {
    /// The benchmark's name.
    pub name: &'static str,
    /// Operations done (for scans: entries read).
    pub ops: u64,
    /// Threads that did them.
    pub threads: usize,
    /// Wall-clock time from the first thread's start to the last thread's end.
    pub elapsed: Duration,
    /// Sum of the threads' own times.
    pub thread_time: Duration,
    /// Bytes of keys and values moved, for MB/s; 0 prints no rate.
    pub bytes: u64,
    /// Point lookups (or seeks) that found their key, and how many there were.
    pub found: Option<(u64, u64)>,
    /// Reads and writes of a read/write mix.
    pub mix: Option<(u64, u64)>,
    /// Writes done by the background writer of `readwhilewriting`.
    pub writer_ops: Option<u64>,
    /// Latency histograms; the first is the benchmark's own operations.
    pub latency: Vec<Latency>,
    /// Set for benchmarks that write.
    pub cost: Option<WriteCost>,
}

impl Outcome {
    fn micros_per_op(&self) -> f64 {
        if self.ops == 0 {
            return 0.0;
        }
        self.thread_time.as_secs_f64() * 1e6 / self.ops as f64
    }

    fn ops_per_sec(&self) -> f64 {
        per_second(self.ops as f64, self.elapsed)
    }

    fn mb_per_sec(&self) -> Option<f64> {
        (self.bytes > 0 && !self.elapsed.is_zero())
            .then(|| per_second(self.bytes as f64 / 1_048_576.0, self.elapsed))
    }

    fn message(&self) -> Option<String> {
        if let Some((reads, writes)) = self.mix {
            let found = self.found.map_or(0, |(f, _)| f);
            return Some(format!(
                "( reads:{reads} writes:{writes} total:{} found:{found})",
                reads + writes
            ));
        }
        let (found, of) = self.found?;
        Some(match self.writer_ops {
            Some(w) => format!("({found} of {of} found; writer {w} writes)"),
            None => format!("({found} of {of} found)"),
        })
    }

    /// The text lines (with their newlines); `histogram` adds the full distribution.
    pub fn text(&self, histogram: bool) -> String {
        let mut extra = String::new();
        if let Some(rate) = self.mb_per_sec() {
            extra.push_str(&format!(" {rate:6.1} MB/s"));
        }
        if let Some(m) = self.message() {
            extra.push(' ');
            extra.push_str(&m);
        }
        let mut text = format!(
            "{:<12} : {:>11.3} micros/op {:.0} ops/sec;{extra}\n",
            self.name,
            self.micros_per_op(),
            self.ops_per_sec().floor(),
        );
        for lat in &self.latency {
            text.push_str(&percentile_line(lat));
            if histogram {
                text.push_str(&distribution(&lat.hist));
            }
        }
        if let Some(cost) = &self.cost {
            let amp = cost
                .amplification()
                .map_or_else(|| "-".to_string(), |a| format!("{a:.2}"));
            if cost.blob_written == 0 && cost.blob_bytes == 0 {
                text.push_str(&format!(
                    "    write-amp {amp} (wal+flush+compaction bytes / user bytes)  space {:.1} MB (table bytes)  stalls {}\n",
                    cost.table_bytes as f64 / 1_048_576.0,
                    cost.stalls
                ));
            } else {
                text.push_str(&format!(
                    "    write-amp {amp} (wal+flush+compaction+blob bytes / user bytes)  space {:.1} MB (tables {:.1} + blob files {:.1})  stalls {}\n",
                    (cost.table_bytes + cost.blob_bytes) as f64 / 1_048_576.0,
                    cost.table_bytes as f64 / 1_048_576.0,
                    cost.blob_bytes as f64 / 1_048_576.0,
                    cost.stalls
                ));
            }
        }
        text
    }

    /// One JSON object; `histogram` adds the buckets of each latency histogram.
    pub fn json(&self, histogram: bool) -> Value {
        let latency = |lat: &Latency| {
            let mut v = latency_json(&lat.hist, lat.per_sample);
            if histogram {
                if let Value::Object(m) = &mut v {
                    m.insert("buckets".into(), buckets_json(&lat.hist));
                }
            }
            v
        };
        let mut obj = Map::new();
        obj.insert("benchmark".into(), json!(self.name));
        obj.insert("ops".into(), json!(self.ops));
        obj.insert("threads".into(), json!(self.threads));
        obj.insert("elapsed_secs".into(), json!(self.elapsed.as_secs_f64()));
        obj.insert("micros_per_op".into(), json!(self.micros_per_op()));
        obj.insert("ops_per_sec".into(), json!(self.ops_per_sec()));
        obj.insert("bytes".into(), json!(self.bytes));
        obj.insert("mb_per_sec".into(), json!(self.mb_per_sec()));
        obj.insert("found".into(), json!(self.found.map(|(f, _)| f)));
        obj.insert("lookups".into(), json!(self.found.map(|(_, n)| n)));
        obj.insert("reads".into(), json!(self.mix.map(|(r, _)| r)));
        obj.insert("writes".into(), json!(self.mix.map(|(_, w)| w)));
        obj.insert("writer_ops".into(), json!(self.writer_ops));
        obj.insert(
            "latency".into(),
            self.latency.first().map_or(Value::Null, latency),
        );
        for lat in self.latency.iter().skip(1) {
            obj.insert(format!("{}_latency", lat.label), latency(lat));
        }
        obj.insert(
            "write_amp".into(),
            json!(self.cost.as_ref().and_then(WriteCost::amplification)),
        );
        obj.insert(
            "cost".into(),
            self.cost.as_ref().map_or(Value::Null, |c| {
                json!({
                    "user_bytes": c.user_bytes,
                    "wal_bytes": c.wal_bytes,
                    "flush_bytes": c.flush_bytes,
                    "compaction_bytes": c.compaction_bytes,
                    "blob_written": c.blob_written,
                    "table_bytes": c.table_bytes,
                    "blob_bytes": c.blob_bytes,
                    "stalls": c.stalls,
                })
            }),
        );
        Value::Object(obj)
    }
}

fn percentile_line(lat: &Latency) -> String {
    let s = Summary::of(&lat.hist);
    let mut prefix = String::new();
    if !lat.label.is_empty() {
        prefix.push_str(lat.label);
        prefix.push_str(": ");
    }
    if lat.per_sample > 1 {
        prefix.push_str(&format!("per batch of {}: ", lat.per_sample));
    }
    if s.is_empty() {
        return format!("    {prefix}no samples\n");
    }
    format!(
        "    {prefix}p50 {}  p99 {}  p99.9 {}  max {}\n",
        duration_ns(s.p50_ns),
        duration_ns(s.p99_ns),
        duration_ns(s.p999_ns),
        duration_ns(s.max_ns),
    )
}

/// Non-empty buckets of doubling width from 1 µs: (low, high) bounds in ns and count.
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut low = 0;
    let mut all = Vec::new();
    for v in h.iter_log(1000, 2.0) {
        let high = v.value_iterated_to() + 1;
        all.push((low, high, v.count_since_last_iteration()));
        low = high;
    }
    all.retain(|&(_, _, count)| count > 0);
    all
}

fn buckets_json(h: &Histogram<u64>) -> Value {
    Value::Array(
        buckets(h)
            .into_iter()
            .map(|(ge, lt, count)| json!({ "ge_ns": ge, "lt_ns": lt, "count": count }))
            .collect(),
    )
}

/// db_bench's `--histogram` block, in microseconds.
fn distribution(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return String::new();
    }
    let us = |ns: u64| ns as f64 / 1e3;
    let total = h.len() as f64;
    let mut text = format!(
        "    Microseconds per sample:\n    Count: {}  Average: {:.4}  StdDev: {:.2}\n    Min: {:.4}  Median: {:.4}  Max: {:.4}\n    Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n    ------------------------------------------------------\n",
        h.len(),
        h.mean() / 1e3,
        h.stdev() / 1e3,
        us(h.min()),
        us(h.value_at_quantile(0.5)),
        us(h.max()),
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.75)),
        us(h.value_at_quantile(0.99)),
        us(h.value_at_quantile(0.999)),
        us(h.value_at_quantile(0.9999)),
    );
    let mut cumulative = 0.0;
    for (low, high, count) in buckets(h) {
        let share = count as f64 * 100.0 / total;
        cumulative += share;
        let marks = "#".repeat((share / 5.0).round() as usize);
        text.push_str(&format!(
            "    [ {:>8}, {:>8} ) {:>9} {:>7.3}% {:>7.3}% {marks}\n",
            format!("{:.0}", us(low)),
            format!("{:.0}", us(high)),
            count,
            share,
            cumulative,
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use cairn_harness::histogram;

    use super::*;

    fn outcome() -> Outcome {
        let mut hist = histogram().unwrap();
        for ns in [900, 1_000, 3_100, 12_000, 1_200_000] {
            hist.saturating_record(ns);
        }
        Outcome {
            name: "readrandom",
            ops: 1_000_000,
            threads: 1,
            elapsed: Duration::from_millis(1234),
            thread_time: Duration::from_millis(1234),
            bytes: 0,
            found: Some((632_120, 1_000_000)),
            mix: None,
            writer_ops: None,
            latency: vec![Latency {
                label: "",
                per_sample: 1,
                hist,
            }],
            cost: None,
        }
    }

    #[test]
    fn text_has_db_bench_shape() {
        let text = outcome().text(false);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("readrandom   :       1.234 micros/op 810372 ops/sec; (632120 of 1000000 found)")
        );
        assert_eq!(
            lines.next(),
            Some("    p50 3.1 µs  p99 1.2 ms  p99.9 1.2 ms  max 1.2 ms")
        );
        assert_eq!(lines.next(), None);
    }

    #[test]
    fn rates_and_costs_are_printed_for_writes() {
        let mut o = outcome();
        o.name = "fillrandom";
        o.found = None;
        o.bytes = 116_000_000;
        o.cost = Some(WriteCost {
            user_bytes: 100,
            wal_bytes: 110,
            flush_bytes: 60,
            compaction_bytes: 15,
            table_bytes: 3 << 20,
            blob_written: 0,
            blob_bytes: 0,
            stalls: 2,
        });
        let text = o.text(true);
        assert!(
            text.starts_with("fillrandom   :       1.234 micros/op 810372 ops/sec;   89.6 MB/s\n"),
            "{text}"
        );
        assert!(text.contains("    write-amp 1.85 (wal+flush+compaction bytes / user bytes)  space 3.0 MB (table bytes)  stalls 2\n"), "{text}");
        assert!(text.contains("Percentiles: P50"), "{text}");
        let v = o.json(true);
        assert_eq!(v["write_amp"], json!(1.85));
        assert_eq!(v["cost"]["stalls"], json!(2));
        assert_eq!(v["latency"]["samples"], json!(5));
    }
}
