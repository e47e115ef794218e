//! `cairn load --sweep`: the same load against the memory baseline and each durability
//! mode of the ordered store, and the trade-off table.
//!
//! The modes, in order of decreasing safety after the baseline:
//!
//! | mode | why this value |
//! |---|---|
//! | `memory` | the baseline: no engine, nothing survives |
//! | `sync` | every write fsynced (group commit) |
//! | `periodic:1000` | fsync every 1 ms: a power loss window shorter than most disks' fsync |
//! | `periodic:100000` | fsync every 100 ms: a window a person would not notice, few fsyncs |
//! | `buffered` | handed to the OS; fsync only every 4 MiB of log (the `cairn load` default) |
//! | `async:1024` | queued for the log thread; up to 1024 writes in flight |
//! | `none` | in-process log buffer only; durable at the next fsync or flush |
//!
//! Each ordered-store mode gets a fresh store in its own subdirectory (`sync/`,
//! `periodic-1000/`, ...) of the sweep's directory, removed after its run unless the
//! directory is kept. Rows are printed as each mode finishes.

use std::io::Write;
use std::time::Duration;

use cairn::Durability;
use cairn_harness::report::duration_ns;
use cairn_harness::Summary;
use serde_json::{json, Value};

use super::args::Plan;
use super::backend::Kind;
use super::mix::OpKind;
use super::report::{self, mode_name, Outcome};
use super::{directory, emit, finish_dir, runner};
use crate::errors::{CliError, CliResult, EXIT_OK};

/// The modes of a sweep, in order (the baseline first).
pub fn modes() -> Vec<(Kind, Durability)> {
    vec![
        (Kind::Memory, Durability::Buffered),
        (Kind::Cairn, Durability::Sync),
        (
            Kind::Cairn,
            Durability::Periodic(Duration::from_micros(1000)),
        ),
        (
            Kind::Cairn,
            Durability::Periodic(Duration::from_micros(100_000)),
        ),
        (Kind::Cairn, Durability::Buffered),
        (Kind::Cairn, Durability::Async { queue_depth: 1024 }),
        (Kind::Cairn, Durability::None),
    ]
}

/// Widths of the table's columns.
const W: [usize; 8] = [16, 11, 9, 9, 10, 18, 22, 28];

fn row(cells: [&str; 8]) -> String {
    let mut line = String::new();
    for (i, (cell, width)) in cells.iter().zip(W).enumerate() {
        if i == 0 || i >= 6 {
            line.push_str(&format!("{cell:<width$}"));
        } else {
            line.push_str(&format!("{cell:>width$}"));
        }
        line.push_str("  ");
    }
    line.truncate(line.trim_end().len());
    line.push('\n');
    line
}

fn p99(h: &hdrhistogram::Histogram<u64>) -> String {
    let s = Summary::of(h);
    if s.is_empty() {
        "-".into()
    } else {
        duration_ns(s.p99_ns)
    }
}

/// The table row of one mode.
fn text_row(o: &Outcome, baseline: Option<f64>) -> String {
    let loss = o.loss();
    let share = baseline.filter(|b| *b > 0.0).map_or_else(
        || "-".into(),
        |b| format!("{:.1}%", o.ops_per_sec() * 100.0 / b),
    );
    let gap = o.seqnos.map_or_else(
        || "-".to_string(),
        |s| format!("{} ({})", s.gap(), s.max_gap_seen),
    );
    row([
        &o.mode(),
        &report::rate(o.ops_per_sec()),
        &share,
        &p99(&o.latency_all),
        &p99(o.hist(OpKind::Write)),
        &gap,
        &loss.crash_short,
        &loss.power_short,
    ])
}

/// Runs the sweep.
pub fn run(plan: &Plan, out: &mut dyn Write) -> CliResult<u8> {
    let dir = directory(plan)?;
    let keep = plan.keep || !dir.is_temporary();
    if !plan.json {
        let header = report::header(
            "--sweep: the baseline, then the ordered store in each durability mode, each running",
            plan,
            Some(dir.path()),
            dir.is_temporary(),
        );
        emit(out, &header)?;
        emit(out, "\n")?;
        emit(
            out,
            &row([
                "mode",
                "ops/s",
                "% memory",
                "p99",
                "p99 write",
                "not durable (max)",
                "process crash loses",
                "power loss loses",
            ]),
        )?;
    }
    let mut baseline = None;
    let mut rows = Vec::new();
    for (backend, durability) in modes() {
        let mut p = plan.clone();
        p.backend = backend;
        p.durability = durability;
        let sub = dir.path().join(mode_name(&p).replace(':', "-"));
        if backend.has_files() && sub.exists() {
            return Err(CliError::msg(format!(
                "load --sweep: {} exists; each mode needs a fresh store (remove it or pick another --dir)",
                sub.display()
            )));
        }
        let place = backend.has_files().then(|| report::Place {
            path: sub.clone(),
            kept: keep,
        });
        let outcome = runner::run(&p, backend.has_files().then_some(sub.as_path()), place)?;
        if backend.has_files() && !keep {
            std::fs::remove_dir_all(&sub)
                .map_err(|e| CliError::msg(format!("removing {} failed: {e}", sub.display())))?;
        }
        if backend == Kind::Memory {
            baseline = Some(outcome.ops_per_sec());
        }
        if plan.json {
            let mut v = outcome.json();
            if let Value::Object(m) = &mut v {
                m.insert(
                    "percent_of_memory".into(),
                    json!(baseline
                        .filter(|b| *b > 0.0)
                        .map(|b| outcome.ops_per_sec() * 100.0 / b)),
                );
                let loss = outcome.loss();
                m.insert(
                    "loss_window_short".into(),
                    json!({ "process_crash": loss.crash_short, "power_loss": loss.power_short }),
                );
            }
            rows.push(v);
        } else {
            emit(out, &text_row(&outcome, baseline))?;
        }
    }
    let dir_path = dir.path().display().to_string();
    finish_dir(dir, plan.keep);
    if plan.json {
        let v = json!({
            "sweep": rows,
            "baseline_ops_per_sec": baseline,
            "dir": dir_path,
            "kept": keep,
        });
        emit(out, &format!("{v}\n"))?;
    } else {
        let fate = if keep { "kept in" } else { "removed from" };
        emit(
            out,
            &format!(
                "\nnot durable: acknowledged writes above durable_seqno when the load ended (most seen while it ran,\n\
                 sampled every 50 ms); a power loss at that moment would have taken them. The loss columns are the\n\
                 documented worst case (README, \"Ordered store durability\"). Stores {fate} {dir_path}.\n"
            ),
        )?;
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_comes_first_and_every_mode_is_distinct() {
        let m = modes();
        assert_eq!(m.first().map(|(k, _)| *k), Some(Kind::Memory));
        let mut names: Vec<String> = m
            .iter()
            .map(|(k, d)| match k {
                Kind::Cairn => cairn_harness::durability_name(*d),
                other => other.name().to_string(),
            })
            .collect();
        names.dedup();
        assert_eq!(names.len(), 7);
        assert_eq!(row(["a"; 8]).lines().count(), 1);
    }
}
