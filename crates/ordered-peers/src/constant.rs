//! The constant stores: `cairn-bench`'s benchmark (after Sparkey's `bench.c`) of Cairn's
//! Sparkey-format store against Sparkey C, tinycdb and cdb2, uncompressed and with snappy
//! blocks of 1 KiB, run in this process so its rows land in the same report.

use std::path::Path;

use anyhow::Context as _;
use clap::Parser as _;

/// Builds `n` entries per size in every constant store and does `lookups` checked random
/// lookups in each.
pub fn run(
    sizes: &[u64],
    lookups: u64,
    seed: u64,
    scratch: &Path,
) -> anyhow::Result<Vec<cairn_bench::Row>> {
    let sizes: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    let dir = scratch.join("constant");
    let args = cairn_bench::Args::try_parse_from([
        "cairn-bench".to_owned(),
        format!("--sizes={}", sizes.join(",")),
        format!("--lookups={lookups}"),
        format!("--seed={seed}"),
        "--peers=cairn,sparkey-c,tinycdb,cdb2".to_owned(),
        "--compressions=none,snappy:1024".to_owned(),
        format!("--dir={}", dir.display()),
    ])
    .context("the constant-store benchmark's arguments")?;
    let rows = cairn_bench::rows(&args)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(rows)
}
