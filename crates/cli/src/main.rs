//! `cairn`: the command-line tool of the Cairn storage engine.
//!
//! This file only parses the command line and dispatches; each command group lives in its
//! own module (`store/` for the ordered store: `cairn put`, `get`, `scan`, `dump`, ...;
//! `sparkey/` for the constant store, `bench/` for the benchmarks, `load/` for the load
//! tester, `demo.rs` for the built-in demonstration, `serve.rs` for `cairn serve`, the
//! Redis-protocol server of crate `cairn-server`).
//!
//! Exit codes, for every command: 0 ok, 1 error, 2 not found (`get`), 3 corruption (the
//! engine reported damaged files, see `cairn::Error::is_corruption`). Usage errors exit 1,
//! like the reference `sparkey` tool; `--help` and `--version` exit 0. A bare `cairn` (or
//! `cairn sparkey`, `cairn bench`) prints the help to standard error and exits 2, clap's
//! code for a command line that asks for nothing, so a script that runs `cairn` with an
//! empty argument list does not take the help for success.

mod bench;
mod demo;
mod errors;
mod hexfmt;
mod load;
mod plural;
mod progress;
mod serve;
mod sizes;
mod sparkey;
mod store;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

use errors::{CliError, CliResult};

/// Cairn: an embedded key-value storage engine.
///
/// Exit codes: 0 ok, 1 error, 2 not found (or no command given), 3 corruption.
#[derive(Debug, Parser)]
#[command(name = "cairn", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Constant store (Sparkey-compatible .spl/.spi files): everything the reference
    /// `sparkey` tool does, plus dump, build and verify.
    #[command(subcommand, arg_required_else_help = true)]
    Sparkey(sparkey::SparkeyCommand),
    /// Benchmarks in the shape of db_bench: `cairn bench ordered` runs fillseq,
    /// readrandom, ... against the ordered store.
    #[command(subcommand, arg_required_else_help = true)]
    Bench(bench::BenchCommand),
    Demo(demo::DemoArgs),
    Load(load::Args),
    Serve(serve::ServeArgs),
    /// The ordered store: put, get, head, delete, scan, incr, count, backup, verify,
    /// salvage, export, import, dump, restore, info, stats.
    #[command(flatten)]
    Store(store::StoreCommand),
}

fn run(cli: Cli, out: &mut dyn Write) -> CliResult<u8> {
    match cli.command {
        Command::Sparkey(cmd) => sparkey::run(cmd, out),
        Command::Bench(cmd) => bench::run(cmd, out),
        Command::Demo(args) => demo::run(&args, out),
        Command::Load(args) => load::run(&args, out),
        Command::Serve(args) => serve::run(&args, out),
        Command::Store(cmd) => store::run(cmd, out),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            let code = match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => errors::EXIT_OK,
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => errors::EXIT_NO_COMMAND,
                _ => errors::EXIT_ERROR,
            };
            return ExitCode::from(code);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = run(cli, &mut out).and_then(|code| {
        out.flush().map_err(CliError::Output)?;
        Ok(code)
    });
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader of our output went away (`cairn sparkey dump x.spi | head`): stop
        // quietly, as if the output had been consumed.
        Err(e) if e.is_broken_pipe() => ExitCode::from(errors::EXIT_OK),
        Err(e) => {
            let _ = out.flush();
            let _ = writeln!(io::stderr(), "{e}");
            ExitCode::from(e.exit_code())
        }
    }
}
