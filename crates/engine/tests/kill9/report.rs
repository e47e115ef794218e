//! Totals per (durability mode, crash type), printed as a table and written as JSON.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::workload::{Crash, Mode, QUEUE_DEPTH};

/// What the contract lets a crash lose, for the report.
fn allowed_loss(mode: Mode, crash: Crash) -> String {
    match (mode, crash) {
        (Mode::Mixed, _) => "per op, by its mode".into(),
        (Mode::Sync, _) | (Mode::Periodic | Mode::Buffered, Crash::Process) => "0".into(),
        (Mode::Async, Crash::Process) => format!("<= {QUEUE_DEPTH} ops"),
        (Mode::Periodic, Crash::PowerLoss) => "above durable_seqno (last sync)".into(),
        (Mode::None, _) | (_, Crash::PowerLoss) => "above durable_seqno".into(),
    }
}

/// Totals for one (mode, crash type).
#[derive(Default)]
pub(crate) struct Report {
    pub(crate) mode: Option<Mode>,
    pub(crate) crash: Option<Crash>,
    pub(crate) cycles: usize,
    pub(crate) kills_in_startup: usize,
    pub(crate) kills_in_open: usize,
    pub(crate) kills_while_writing: usize,
    pub(crate) kills_in_table_writes: usize,
    pub(crate) ops_acked: u64,
    pub(crate) ops_lost: u64,
    pub(crate) pending_kept: u64,
    pub(crate) max_loss_ops: u64,
    pub(crate) max_loss_ms: f64,
    pub(crate) flushes: u64,
    pub(crate) compactions: u64,
    /// Time the child's `Db::open` took, summed over the cycles that measured it.
    pub(crate) open_micros_total: u64,
    pub(crate) opens_timed: u64,
    pub(crate) violations: Vec<String>,
    pub(crate) seconds: f64,
    pub(crate) kept_dir: Option<PathBuf>,
}

impl Report {
    pub(crate) fn open_ms_avg(&self) -> f64 {
        self.open_micros_total as f64 / 1000.0 / self.opens_timed.max(1) as f64
    }
}

pub(crate) fn summary(reports: &[Report]) -> String {
    let mut out = format!(
        "{:<24} {:<10} {:>6} {:>15} {:>7} {:>9} {:>6} {:>8} {:>8} {:>9} {:>7} {:>7} {:>10}  {}\n",
        "mode",
        "crash",
        "cycles",
        "kills s/o/w",
        "in-tbl",
        "acked",
        "lost",
        "max-ops",
        "max-ms",
        "+pending",
        "flushes",
        "compact",
        "violations",
        "allowed loss"
    );
    for r in reports {
        let (Some(mode), Some(crash)) = (r.mode, r.crash) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{:<24} {:<10} {:>6} {:>15} {:>7} {:>9} {:>6} {:>8} {:>8.1} {:>9} {:>7} {:>7} {:>10}  {}",
            mode.label(),
            crash.name(),
            r.cycles,
            format!(
                "{}/{}/{}",
                r.kills_in_startup, r.kills_in_open, r.kills_while_writing
            ),
            r.kills_in_table_writes,
            r.ops_acked,
            r.ops_lost,
            r.max_loss_ops,
            r.max_loss_ms,
            r.pending_kept,
            r.flushes,
            r.compactions,
            r.violations.len(),
            allowed_loss(mode, crash)
        );
    }
    out
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(crate) fn json(
    reports: &[Report],
    seed: u64,
    cycles: usize,
    max_delay_ms: u64,
    seconds: f64,
) -> String {
    let mut out = format!(
        "{{\n  \"harness\": \"kill9\",\n  \"seed\": {seed},\n  \"cycles_per_combination\": \
         {cycles},\n  \"max_delay_ms\": {max_delay_ms},\n  \"wall_seconds\": {seconds:.1},\n  \
         \"results\": ["
    );
    for (i, r) in reports.iter().enumerate() {
        let (Some(mode), Some(crash)) = (r.mode, r.crash) else {
            continue;
        };
        let violations: Vec<String> = r.violations.iter().map(|v| json_string(v)).collect();
        let _ = write!(
            out,
            "{}\n    {{\"mode\": {}, \"durability\": {}, \"crash\": {}, \"cycles\": {}, \
             \"kills_in_startup\": {}, \"kills_in_open\": {}, \"kills_while_writing\": {}, \
             \"kills_in_table_writes\": {}, \"ops_acked\": {}, \"ops_lost\": {}, \
             \"max_loss_ops\": {}, \"max_loss_ms\": {:.1}, \"pending_kept\": {}, \
             \"flushes\": {}, \"compactions\": {}, \"allowed_loss\": {}, \"seconds\": {:.1}, \
             \"violations\": [{}]}}",
            if i == 0 { "" } else { "," },
            json_string(mode.name()),
            json_string(&mode.label()),
            json_string(crash.name()),
            r.cycles,
            r.kills_in_startup,
            r.kills_in_open,
            r.kills_while_writing,
            r.kills_in_table_writes,
            r.ops_acked,
            r.ops_lost,
            r.max_loss_ops,
            r.max_loss_ms,
            r.pending_kept,
            r.flushes,
            r.compactions,
            json_string(&allowed_loss(mode, crash)),
            r.seconds,
            violations.join(", ")
        );
    }
    out.push_str("\n  ]\n}\n");
    out
}
