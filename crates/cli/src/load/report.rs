//! What one load measured ([`Outcome`]) and its two renderings: readable text and one
//! JSON object (the fields are listed in crates/cli/README.md, "`load`").
//!
//! Invariants the runner guarantees and the tests check: `total_ops` is the sum of the
//! threads' operations and of the per-kind counts, and `total_ops_per_sec` is
//! `total_ops / total_runtime`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_harness::latency::latency_json;
use cairn_harness::report::{duration_ns, per_second, thousands};
use cairn_harness::{durability_name, Summary, WriteCost};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use super::args::Plan;
use super::durability::{loss_window, LossWindow};
use super::mix::OpKind;
use super::pattern::Pattern;
use crate::plural::count;

/// One thread's counts.
#[derive(Debug, Clone, Default)]
pub struct ThreadCounts {
    /// Operations done.
    pub ops: u64,
    /// Operations per kind, indexed by [`OpKind::index`].
    pub by_kind: [u64; 3],
    /// Reads that found their key.
    pub found: u64,
}

/// Where the store was, and whether it is still there.
#[derive(Debug, Clone)]
pub struct Place {
    pub path: PathBuf,
    /// False for a temporary directory removed at the end.
    pub kept: bool,
}

/// Sequence numbers of the ordered store when the load ended.
#[derive(Debug, Clone, Copy)]
pub struct Seqnos {
    /// The last acknowledged write.
    pub last: u64,
    /// The last write known to survive power loss.
    pub durable: u64,
    /// The largest `last - durable` seen while the load ran (sampled every 50 ms).
    pub max_gap_seen: u64,
}

impl Seqnos {
    /// Acknowledged writes not yet durable when the load ended.
    pub fn gap(&self) -> u64 {
        self.last.saturating_sub(self.durable)
    }
}

/// The result of one load.
#[derive(Debug)]
pub struct Outcome {
    /// The load's settings.
    pub plan: Plan,
    /// Keys preloaded and the time it took, if there was a preload.
    pub preload: Option<(u64, Duration)>,
    /// From the common start to the end of the last thread.
    pub runtime: Duration,
    /// Counts of each thread, in thread order.
    pub threads: Vec<ThreadCounts>,
    /// Latency per kind (ns), indexed by [`OpKind::index`].
    pub latency: [Histogram<u64>; 3],
    /// All kinds together.
    pub latency_all: Histogram<u64>,
    /// The ordered store's counters over the timed phase.
    pub cost: Option<WriteCost>,
    /// Bytes of every file in the store's directory at the end.
    pub disk_bytes: Option<u64>,
    /// The ordered store's seqnos at the end.
    pub seqnos: Option<Seqnos>,
    /// The store's directory.
    pub place: Option<Place>,
}

impl Outcome {
    /// Sum of the threads' operations.
    pub fn total_ops(&self) -> u64 {
        self.threads.iter().map(|t| t.ops).sum()
    }

    /// Operations of `kind` over all threads.
    pub fn ops_of(&self, kind: OpKind) -> u64 {
        self.threads
            .iter()
            .filter_map(|t| t.by_kind.get(kind.index()))
            .sum()
    }

    /// Reads that found their key.
    pub fn found(&self) -> u64 {
        self.threads.iter().map(|t| t.found).sum()
    }

    fn per_sec(&self, ops: u64) -> f64 {
        per_second(ops as f64, self.runtime)
    }

    /// Operations per second over all threads.
    pub fn ops_per_sec(&self) -> f64 {
        self.per_sec(self.total_ops())
    }

    /// Mean of the threads' operations per second.
    pub fn average_thread_ops_per_sec(&self) -> f64 {
        self.ops_per_sec() / self.threads.len().max(1) as f64
    }

    /// The histogram of `kind`.
    pub fn hist(&self, kind: OpKind) -> &Histogram<u64> {
        match kind {
            OpKind::Read => &self.latency[0],
            OpKind::Write => &self.latency[1],
            OpKind::Delete => &self.latency[2],
        }
    }

    /// The mode's name: `memory`, `constant`, or the ordered store's durability.
    pub fn mode(&self) -> String {
        mode_name(&self.plan)
    }

    /// The documented loss window of the mode.
    pub fn loss(&self) -> LossWindow {
        loss_window(self.plan.backend, self.plan.durability)
    }

    /// The text report (after the header, see [`header`]).
    pub fn text(&self) -> String {
        let mut t = String::new();
        let total = self.total_ops();
        t.push_str(&format!(
            "total_ops   {total} in {:.2} s = {} ops/s\n",
            self.runtime.as_secs_f64(),
            rate(self.ops_per_sec())
        ));
        let threads: Vec<String> = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, c)| format!("#{i} {} ({} ops/s)", c.ops, rate(self.per_sec(c.ops))))
            .collect();
        for (i, chunk) in threads.chunks(4).enumerate() {
            let label = if i == 0 { "per thread" } else { "" };
            t.push_str(&format!("{label:<11} {}\n", chunk.join(", ")));
        }
        t.push_str(&format!(
            "{:<11} {} ops/s per thread\n",
            "average",
            rate(self.average_thread_ops_per_sec())
        ));
        t.push_str(&format!(
            "\n{:<7} {:>10} {:>7}  {:>9} {:>9} {:>9} {:>9}\n",
            "op", "count", "share", "p50", "p99", "p99.9", "max"
        ));
        let row = |name: &str, count: u64, h: &Histogram<u64>| {
            let share = if total > 0 {
                count as f64 * 100.0 / total as f64
            } else {
                0.0
            };
            let s = Summary::of(h);
            let q = |ns: u64| {
                if s.is_empty() {
                    "-".to_string()
                } else {
                    duration_ns(ns)
                }
            };
            format!(
                "{name:<7} {count:>10} {share:>6.1}%  {:>9} {:>9} {:>9} {:>9}\n",
                q(s.p50_ns),
                q(s.p99_ns),
                q(s.p999_ns),
                q(s.max_ns)
            )
        };
        for kind in OpKind::ALL {
            t.push_str(&row(kind.name(), self.ops_of(kind), self.hist(kind)));
        }
        t.push_str(&row("all", total, &self.latency_all));
        let reads = self.ops_of(OpKind::Read);
        if reads > 0 {
            t.push_str(&format!(
                "reads found {} of {reads} ({:.1}%)\n",
                self.found(),
                self.found() as f64 * 100.0 / reads as f64
            ));
        }
        t.push('\n');
        if let Some(c) = &self.cost {
            let written = c.wal_bytes + c.flush_bytes + c.compaction_bytes;
            let amp = c
                .amplification()
                .map_or_else(|| "-".to_string(), |a| format!("{a:.2}"));
            t.push_str(&format!(
                "engine      wrote {} (log {}, flushes {}, compactions {}) for {} of keys and values: write-amp {amp}, {}\n",
                mib(written),
                mib(c.wal_bytes),
                mib(c.flush_bytes),
                mib(c.compaction_bytes),
                mib(c.user_bytes),
                count(c.stalls, "stall", "stalls")
            ));
        }
        if let (Some(bytes), Some(place)) = (self.disk_bytes, &self.place) {
            let fate = if place.kept { "kept" } else { "removed" };
            t.push_str(&format!(
                "disk        {} in {} ({fate})\n",
                mib(bytes),
                place.path.display()
            ));
        }
        let loss = self.loss();
        if let Some(s) = &self.seqnos {
            t.push_str(&format!(
                "durability  {}: {} not yet known durable at the end\n            (last_seqno {}, durable_seqno {}; at most {} during the run)\n",
                self.mode(),
                count(s.gap(), "acknowledged write", "acknowledged writes"),
                s.last,
                s.durable,
                s.max_gap_seen
            ));
        } else {
            t.push_str(&format!("durability  {}\n", self.mode()));
        }
        t.push_str(&format!(
            "            a process crash can lose {}\n            a power loss can lose {}\n",
            loss.crash, loss.power
        ));
        t
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        let p = &self.plan;
        let lat = |h: &Histogram<u64>| latency_json(h, 1);
        let mut latency = Map::new();
        latency.insert("all".into(), lat(&self.latency_all));
        let mut ops = Map::new();
        for kind in OpKind::ALL {
            latency.insert(kind.name().into(), lat(self.hist(kind)));
            ops.insert(kind.name().into(), json!(self.ops_of(kind)));
        }
        let loss = self.loss();
        let mut obj = Map::new();
        obj.insert("backend".into(), json!(p.backend.name()));
        obj.insert(
            "durability".into(),
            match p.backend {
                super::backend::Kind::Cairn => json!(durability_name(p.durability)),
                _ => Value::Null,
            },
        );
        obj.insert("mode".into(), json!(self.mode()));
        obj.insert("threads".into(), json!(p.threads));
        obj.insert("pattern".into(), json!(p.pattern.to_string()));
        obj.insert("rate".into(), json!(p.rate));
        obj.insert("keys".into(), json!(p.keys.to_string()));
        obj.insert("key_count".into(), json!(p.key_count));
        obj.insert("key_size".into(), json!(p.key_size.to_string()));
        obj.insert("value_size".into(), json!(p.value_size.to_string()));
        obj.insert(
            "mix".into(),
            json!({
                "read": p.mix.percent(OpKind::Read),
                "write": p.mix.percent(OpKind::Write),
                "delete": p.mix.percent(OpKind::Delete),
            }),
        );
        obj.insert("seed".into(), json!(p.seed));
        obj.insert("load_time".into(), json!(p.duration.as_secs_f64()));
        obj.insert(
            "preload".into(),
            self.preload.map_or(
                Value::Null,
                |(keys, took)| json!({ "keys": keys, "secs": took.as_secs_f64() }),
            ),
        );
        obj.insert("total_ops".into(), json!(self.total_ops()));
        obj.insert("total_runtime".into(), json!(self.runtime.as_secs_f64()));
        obj.insert("total_ops_per_sec".into(), json!(self.ops_per_sec()));
        obj.insert(
            "per_thread".into(),
            Value::Array(
                self.threads
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        json!({
                            "thread": i,
                            "ops": c.ops,
                            "ops_per_sec": self.per_sec(c.ops),
                            "read": c.by_kind[0],
                            "write": c.by_kind[1],
                            "delete": c.by_kind[2],
                        })
                    })
                    .collect(),
            ),
        );
        obj.insert(
            "average_ops_per_sec".into(),
            json!(self.average_thread_ops_per_sec()),
        );
        obj.insert("ops".into(), Value::Object(ops));
        obj.insert("reads_found".into(), json!(self.found()));
        obj.insert("latency".into(), Value::Object(latency));
        obj.insert(
            "engine".into(),
            self.cost.as_ref().map_or(Value::Null, |c| {
                json!({
                    "user_bytes": c.user_bytes,
                    "wal_bytes": c.wal_bytes,
                    "flush_bytes": c.flush_bytes,
                    "compaction_bytes": c.compaction_bytes,
                    "bytes_written": c.wal_bytes + c.flush_bytes + c.compaction_bytes,
                    "write_amp": c.amplification(),
                    "table_bytes": c.table_bytes,
                    "stalls": c.stalls,
                })
            }),
        );
        obj.insert("disk_bytes".into(), json!(self.disk_bytes));
        obj.insert(
            "seqno".into(),
            self.seqnos.map_or(Value::Null, |s| {
                json!({
                    "last": s.last,
                    "durable": s.durable,
                    "not_durable": s.gap(),
                    "max_not_durable_seen": s.max_gap_seen,
                })
            }),
        );
        obj.insert(
            "loss_window".into(),
            json!({ "process_crash": loss.crash, "power_loss": loss.power }),
        );
        obj.insert(
            "dir".into(),
            json!(self.place.as_ref().map(|p| p.path.display().to_string())),
        );
        obj.insert(
            "kept".into(),
            json!(self.place.as_ref().is_some_and(|p| p.kept)),
        );
        Value::Object(obj)
    }
}

/// `memory`, `constant`, or the ordered store's durability (`buffered`, `async:1024`...).
pub fn mode_name(plan: &Plan) -> String {
    match plan.backend {
        super::backend::Kind::Cairn => durability_name(plan.durability),
        other => other.name().to_string(),
    }
}

/// What a single load runs against, for the header's first line.
pub fn backend_title(plan: &Plan) -> String {
    match plan.backend {
        super::backend::Kind::Cairn => format!(
            "cairn (ordered store, durability {})",
            durability_name(plan.durability)
        ),
        super::backend::Kind::Memory => "memory (in-memory map, the baseline)".to_string(),
        super::backend::Kind::Constant => "constant (Sparkey files, read-only)".to_string(),
    }
}

/// The lines printed before a text load starts: `cairn load: {title}`, then the load.
pub fn header(title: &str, plan: &Plan, dir: Option<&Path>, temporary: bool) -> String {
    let pace = match (plan.pattern, plan.rate) {
        (Pattern::Consistent, None) => "as fast as possible".to_string(),
        (Pattern::Consistent, Some(r)) => format!("{} ops/s", rate(r)),
        (Pattern::Ramp, Some(r)) => format!("rising to {} ops/s", rate(r)),
        (Pattern::Ramp, None) => "flat out".to_string(),
        (Pattern::Burst, r) => format!(
            "{} busy at {}, {} idle",
            secs(plan.burst_on),
            r.map_or_else(
                || "full speed".to_string(),
                |r| format!("{} ops/s", rate(r))
            ),
            secs(plan.burst_off)
        ),
    };
    let mut h = format!(
        "cairn load: {title}\n  {} for {}, pattern {} ({pace})\n  {} ({}), key size {} B, value size {} B, mix {}, seed {}\n",
        count(plan.threads, "thread", "threads"),
        secs(plan.duration),
        plan.pattern,
        count(plan.key_count, "key", "keys"),
        plan.keys,
        plan.key_size,
        plan.value_size,
        plan.mix,
        plan.seed,
    );
    if let Some(d) = dir {
        let fate = if temporary && !plan.keep {
            "temporary, removed at the end"
        } else {
            "kept"
        };
        h.push_str(&format!("  store {} ({fate})\n", d.display()));
    }
    h
}

/// A rate with thousands separators, rounded half away from zero: `1,234,567`.
pub fn rate(r: f64) -> String {
    thousands(r.round())
}

/// `1.5 MiB`.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s} s")
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_have_separators() {
        assert_eq!(rate(0.4), "0");
        assert_eq!(rate(2.5), "3");
        assert_eq!(rate(999.0), "999");
        assert_eq!(rate(1000.0), "1,000");
        assert_eq!(rate(1_234_567.2), "1,234,567");
    }
}
