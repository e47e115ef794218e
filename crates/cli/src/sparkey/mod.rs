//! `cairn sparkey <command>`: the constant store's files (Sparkey-compatible `.spl` log and
//! `.spi` index) from the command line.
//!
//! The commands of the reference `sparkey` tool (`info`, `get`, `writehash`, `createlog`,
//! `appendlog`, `rewrite`) keep its output formats and exit codes, with its bugs fixed;
//! each command's help lists its deviations (also collected in the crate's README).
//! `dump`, `build` and `verify` are Cairn's additions. One module per command.

mod appendlog;
mod build;
mod createlog;
mod dump;
mod get;
mod info;
mod names;
pub(crate) mod options;
mod returncode;
mod rewrite;
mod staged;
mod verify;
mod writehash;

use std::io::Write;

use clap::Subcommand;

use crate::errors::CliResult;

/// The `sparkey` commands (each one's help text is the doc comment of its `Args`).
/// Exit codes: 0 ok, 1 error, 2 not found, 3 corruption.
#[derive(Debug, Subcommand)]
pub enum SparkeyCommand {
    Info(info::Args),
    Get(get::Args),
    Writehash(writehash::Args),
    Createlog(createlog::Args),
    Appendlog(appendlog::Args),
    Rewrite(rewrite::Args),
    Dump(dump::Args),
    Build(build::Args),
    Verify(verify::Args),
}

/// Runs one `sparkey` command; returns its exit code.
pub fn run(command: SparkeyCommand, out: &mut dyn Write) -> CliResult<u8> {
    match command {
        SparkeyCommand::Info(args) => info::run(&args, out),
        SparkeyCommand::Get(args) => get::run(&args, out),
        SparkeyCommand::Writehash(args) => writehash::run(&args, out),
        SparkeyCommand::Createlog(args) => createlog::run(&args, out),
        SparkeyCommand::Appendlog(args) => appendlog::run(&args, out),
        SparkeyCommand::Rewrite(args) => rewrite::run(&args, out),
        SparkeyCommand::Dump(args) => dump::run(&args, out),
        SparkeyCommand::Build(args) => build::run(&args, out),
        SparkeyCommand::Verify(args) => verify::run(&args, out),
    }
}
