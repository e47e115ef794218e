//! `cairn bench <store>`: db_bench-style benchmarks of Cairn's stores.
//!
//! `ordered.rs` is the command (flags, the store's life, the list of benchmarks);
//! `workloads.rs` holds the timed loops, `keys.rs` what they write, `report.rs` how the
//! results are printed, `store.rs` the benchmark directory.

mod keys;
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
