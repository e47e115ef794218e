//! The `cairn-bench` command: see the library's documentation.

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    cairn_bench::main_with(&cairn_bench::Args::parse())
}
