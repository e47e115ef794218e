//! `cairn bench <store>`: db_bench-style benchmarks of Cairn's stores.
//!
//! `ordered.rs` is the command (flags, the store's life, the list of benchmarks);
//! `workloads.rs` holds the timed loops, `keys.rs` what they write, `report.rs` how the
//! results are printed, `store.rs` the benchmark directory. `cairn load` (`load/`)
//! reuses the key and value generators, the latency helpers, the directory handling and
//! the durability spellings.

pub(crate) mod keys;
pub(crate) mod ordered;
pub(crate) mod report;
pub(crate) mod store;
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
