//! `cairn load`: the tunable-durability load tester.
//!
//! A load runs for a fixed time on N threads against one backend (the in-memory
//! baseline, the ordered store with a chosen durability, or the read-only constant
//! store) and reports throughput, latency per operation kind, the engine's bytes written,
//! the space on disk and the acknowledged-but-not-yet-durable window. `--sweep` runs the
//! same load against the baseline and every durability mode and prints the trade-offs.
//!
//! One file per concept: `args.rs` (flags, the checked [`args::Plan`]), `keys.rs` (key
//! popularity, key and value sizes), `mix.rs` (operation kinds), `pattern.rs` (the rate
//! schedule), `backend/` (the stores), `runner.rs` (preload and the timed threads),
//! `report.rs` (text and JSON), `durability.rs` (what each mode can lose), `sweep.rs`.
//! The random generator, keys, values, latency histograms, write-cost counters, scratch
//! directories and durability spellings come from `cairn-harness` (crates/harness), as
//! for `cairn bench`.

mod args;
mod backend;
mod durability;
mod keys;
mod mix;
mod pattern;
mod report;
mod runner;
mod sweep;

use std::io::Write;

pub use args::Args;
use cairn_harness::ScratchDir as Dir;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;

/// Prefix of the temporary directories of `cairn load`.
const TEMP_PREFIX: &str = "cairn-load-";

/// Writes `text` and flushes, so the lines appear while a long load runs.
fn emit(out: &mut dyn Write, text: &str) -> CliResult<()> {
    out.write_all(text.as_bytes()).map_err(CliError::Output)?;
    out.flush().map_err(CliError::Output)
}

/// The directory of a load: `--dir` as given, or a new temporary one.
fn directory(plan: &args::Plan) -> CliResult<Dir> {
    match &plan.dir {
        Some(d) => Ok(Dir::given(d)),
        None => Dir::temporary(TEMP_PREFIX)
            .map_err(|e| CliError::msg(format!("creating a temporary directory failed: {e}"))),
    }
}

/// Keeps a temporary directory if asked (`--keep`); otherwise dropping removes it.
fn finish_dir(dir: Dir, keep: bool) {
    if keep {
        let _ = dir.keep();
    }
}

/// Runs `cairn load`.
pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let plan = args.plan()?;
    if plan.sweep {
        return sweep::run(&plan, out);
    }
    let dir = if plan.backend.has_files() {
        Some(directory(&plan)?)
    } else {
        None
    };
    let temporary = dir.as_ref().is_some_and(Dir::is_temporary);
    if !plan.json {
        let title = report::backend_title(&plan);
        emit(
            out,
            &report::header(&title, &plan, dir.as_ref().map(Dir::path), temporary),
        )?;
    }
    let place = dir.as_ref().map(|d| report::Place {
        path: d.path().to_path_buf(),
        kept: !temporary || plan.keep,
    });
    let outcome = runner::run(&plan, dir.as_ref().map(Dir::path), place)?;
    if let Some(d) = dir {
        finish_dir(d, plan.keep);
    }
    let text = if plan.json {
        format!("{}\n", outcome.json())
    } else {
        let mut text = String::new();
        if let Some((keys, took)) = outcome.preload {
            text.push_str(&format!(
                "  preloaded {} in {:.2} s ({} keys/s)\n",
                count(keys, "key", "keys"),
                took.as_secs_f64(),
                report::rate(keys as f64 / took.as_secs_f64().max(1e-9))
            ));
        }
        text.push('\n');
        text.push_str(&outcome.text());
        text
    };
    emit(out, &text)?;
    Ok(EXIT_OK)
}
