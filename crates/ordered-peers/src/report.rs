//! The report of a run: every row it measured, with the run's command, machine and notes,
//! written as JSON (re-renderable with `--from-json`) and read by the Markdown page
//! (`markdown.rs`) and the SVG chart (`plot.rs`). The report knows nothing of either.

use serde::{Deserialize, Serialize};

use crate::row::Row;

/// Everything one run measured.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    /// The command line that produced it.
    pub command: String,
    /// The machine: CPU model and count.
    pub machine: String,
    /// Keys of the ordered workloads.
    pub num: u64,
    /// Cache of every store that has one, MiB.
    pub cache_mb: usize,
    /// Whether the Go stores ran.
    pub go_note: String,
    /// Ordered and large-value rows.
    pub rows: Vec<Row>,
    /// Constant-store rows.
    pub constant: Vec<cairn_bench::Row>,
    /// The machine's latency floor, measured before the stores ran (absent in reports of
    /// runs that did not measure it).
    #[serde(default)]
    pub noise: Option<crate::noise::Noise>,
    /// Store runs whose worker failed (crashed, killed, or returned an error): they have
    /// no rows, and the run went on without them.
    #[serde(default)]
    pub failures: Vec<String>,
    /// What the run wants said beside its tables (loads of the process workloads, stores
    /// they skipped).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Report {
    /// An empty report of a run.
    pub fn new(command: String, num: u64, cache_mb: usize, go_note: String) -> Report {
        Report {
            command,
            machine: machine(),
            num,
            cache_mb,
            go_note,
            rows: Vec::new(),
            constant: Vec::new(),
            noise: None,
            failures: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Records that a store's run failed, and says so on stderr.
    pub fn failed(&mut self, what: String) {
        eprintln!("FAILED: {what}");
        self.failures.push(what);
    }
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cpus} × {model}")
}

/// The stores of `rows` in first-seen order.
pub fn stores(rows: &[&Row]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        if !names.contains(&r.store) {
            names.push(r.store.clone());
        }
    }
    names
}

/// The row of `store` for `workload` among `rows`.
pub fn find<'a>(rows: &[&'a Row], store: &str, workload: &str) -> Option<&'a Row> {
    rows.iter()
        .copied()
        .find(|r| r.store == store && r.workload == workload)
}

/// Rows of a suite with a thread count (`None`: any) and value size (`None`: any).
pub fn select<'a>(
    report: &'a Report,
    suite: &str,
    threads: Option<usize>,
    value_size: Option<usize>,
) -> Vec<&'a Row> {
    report
        .rows
        .iter()
        .filter(|r| {
            r.suite == suite
                && threads.is_none_or(|t| r.threads == t)
                && value_size.is_none_or(|v| r.value_size == v)
        })
        .collect()
}

/// The large-value rows, one group per value size, smallest first.
pub fn large_by_size(report: &Report) -> Vec<(usize, Vec<&Row>)> {
    let rows = select(report, "large", None, None);
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.value_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|size| {
            let at = rows
                .iter()
                .copied()
                .filter(|r| r.value_size == size)
                .collect();
            (size, at)
        })
        .collect()
}

/// The workloads of `rows` in first-seen order.
pub fn workloads(rows: &[&Row]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        if !names.contains(&r.workload) {
            names.push(r.workload.clone());
        }
    }
    names
}

/// `65536` -> `64 KiB`.
pub fn human_size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

/// One target: what is compared, the two figures, the goal, and whether it was met.
pub struct Target {
    /// What is compared.
    pub what: String,
    /// Cairn's figure over the peer's (for latency: Cairn's over the peer's too).
    pub ratio: f64,
    /// The goal for `ratio`.
    pub goal: f64,
    /// True when smaller is better (latency).
    pub lower_is_better: bool,
    /// Cairn's figure and the peer's, formatted.
    pub figures: String,
}

impl Target {
    /// Whether the ratio reaches the goal.
    pub fn met(&self) -> bool {
        if self.lower_is_better {
            self.ratio <= self.goal
        } else {
            self.ratio >= self.goal
        }
    }
}
