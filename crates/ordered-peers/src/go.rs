//! The Go stores (pebble, badger, bbolt), run by the Go driver in `go/`: a separate
//! program that runs the same workloads (same keys, values, batches, threads and latency
//! rule) and prints one JSON row per workload, which is read back here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _};

use crate::row::Row;
use crate::workload::Plan;
use crate::Args;

/// The Go driver, if it was built.
pub struct Driver {
    path: Option<PathBuf>,
    stores: Vec<String>,
}

impl Driver {
    /// The driver at `path` running `stores`; absent if the binary is not there.
    pub fn find(path: &Path, stores: &[String]) -> Driver {
        Driver {
            path: path.is_file().then(|| path.to_path_buf()),
            stores: stores.iter().filter(|s| !s.is_empty()).cloned().collect(),
        }
    }

    /// What the report says about the Go stores.
    pub fn note(&self) -> String {
        match (&self.path, self.stores.is_empty()) {
            (_, true) => "Go stores: none asked for.".to_owned(),
            (None, false) => format!(
                "Go stores ({}) skipped: the Go driver is not built (run crates/ordered-peers/install-peers.sh).",
                self.stores.join(", ")
            ),
            (Some(p), false) => format!(
                "Go stores ({}) run by the Go driver {}.",
                self.stores.join(", "),
                p.display()
            ),
        }
    }

    /// The stores to run (none without a driver).
    pub fn stores(&self) -> Vec<String> {
        if self.path.is_some() {
            self.stores.clone()
        } else {
            Vec::new()
        }
    }

    /// The ordered workloads `workloads` on `store`.
    pub fn ordered(
        &self,
        store: String,
        plan: &Plan,
        value_size: usize,
        workloads: &[String],
        cache_mb: usize,
        scratch: &Path,
    ) -> anyhow::Result<Vec<Row>> {
        let args = vec![
            format!("--num={}", plan.num),
            format!("--threads={}", plan.threads),
            format!("--batch={}", plan.batch),
            format!("--reads={}", plan.reads),
            format!("--seed={}", plan.seed),
            format!("--settle-seconds={}", plan.settle.as_secs()),
            format!("--value-size={value_size}"),
            format!("--cache-mb={cache_mb}"),
            format!("--workloads={}", workloads.join(",")),
        ];
        self.run(&store, args, "ordered", scratch)
    }

    /// The large-value workloads on `store`.
    pub fn large(&self, store: String, args: &Args, scratch: &Path) -> anyhow::Result<Vec<Row>> {
        let sizes: Vec<String> = args.large_sizes.iter().map(|s| s.to_string()).collect();
        let flags = vec![
            "--large".to_owned(),
            format!("--large-sizes={}", sizes.join(",")),
            format!("--large-bytes={}", args.large_bytes),
            format!("--batch={}", args.batch),
            format!("--seed={}", args.seed),
            format!("--cache-mb={}", args.cache_mb),
        ];
        self.run(&store, flags, "large", scratch)
    }

    fn run(
        &self,
        store: &str,
        mut flags: Vec<String>,
        suite: &str,
        scratch: &Path,
    ) -> anyhow::Result<Vec<Row>> {
        let Some(path) = &self.path else {
            return Ok(Vec::new());
        };
        let dir = scratch.join(format!("go-{store}"));
        std::fs::create_dir_all(&dir)?;
        flags.push(format!("--store={store}"));
        flags.push(format!("--dir={}", dir.display()));
        eprintln!("  {store} (Go driver): {suite}");
        crate::flush_os();
        let output = Command::new(path)
            .args(&flags)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", path.display()))?;
        if !output.status.success() {
            bail!(
                "the Go driver failed on {store} ({suite}): {}",
                output.status
            );
        }
        let text = String::from_utf8(output.stdout).context("the Go driver's output")?;
        let mut rows = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut row: Row = serde_json::from_str(line)
                .with_context(|| format!("a row of the Go driver: {line}"))?;
            row.suite = suite.to_owned();
            eprintln!(
                "  {:<14} {:<13} t={} {:>12.0} ops/s  p99.9 {:>9.1} us",
                row.store, row.workload, row.threads, row.ops_per_sec, row.p999_us
            );
            rows.push(row);
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(rows)
    }
}
