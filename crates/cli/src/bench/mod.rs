//! `cairn bench <store>`: db_bench-style benchmarks of Cairn's stores.
//!
//! `ordered.rs` is the command (flags, the store's life, the list of benchmarks);
//! `workloads.rs` holds the timed loops, `report.rs` how the results are printed,
//! `memory.rs` the memory line each benchmark ends with (resident memory and the store's
//! shares),
//! `store.rs` the benchmark directory. What they write (keys, values), how they time
//! (latency histograms, the per-operation clock) and how durability is spelled come from
//! `cairn-harness` (crates/harness), which `cairn load` and the peer suites use too.

mod memory;
mod ordered;
mod report;
mod store;
mod workloads;

use std::io::Write;

use clap::Subcommand;

use crate::errors::CliResult;

/// The benchmark commands.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    Ordered(ordered::Args),
}

/// Runs one benchmark command.
pub fn run(cmd: BenchCommand, out: &mut dyn Write) -> CliResult<u8> {
    match cmd {
        BenchCommand::Ordered(args) => ordered::run(&args, out),
    }
}
