//! `cairn sparkey verify`: full structural check of a log/index pair.

use std::io::Write;
use std::path::PathBuf;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::{count, plural};

use super::names;

/// Check a log/index pair from end to end and say what was checked
///
/// Sparkey files carry no checksums, so the check is structural (`cairn::hash::verify`):
/// every log entry decodes and the log header's counters (puts, deletes, sizes, longest
/// key and value, entries per block) match what the log holds; every occupied index slot
/// points at a PUT whose key has the slot's hash and which a lookup finds; the number of
/// occupied slots and of entries the hash iterator yields equal the index's num_entries.
///
/// Exit status: 0 all checks passed, 3 corruption (the message names the file, the byte
/// offset and what is wrong), 1 other errors (missing file, wrong suffix, I/O).
/// Not in the reference tool.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The index file (`x.spi`, with its log `x.spl`).
    #[arg(value_name = "FILE.spi")]
    index: PathBuf,
}

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let log = names::log_for_index(&args.index)
        .ok_or_else(|| CliError::msg("index filename must end with .spi"))?;
    let report = cairn::hash::verify(&args.index, &log)?;
    let (index, log) = (args.index.display(), log.display());
    let text = format!(
        "{index}: OK\n\
         log {log}: {entries} decoded ({puts}, {deletes}); header counters match\n\
         index {index}: {slots} {point} at PUTs with matching hashes, found by lookup\n\
         hash iterator: {live}, equal to the index's entry count\n",
        entries = count(report.puts + report.deletes, "entry", "entries"),
        puts = count(report.puts, "put", "puts"),
        deletes = count(report.deletes, "delete", "deletes"),
        slots = count(report.slots_checked, "occupied slot", "occupied slots"),
        point = plural(report.slots_checked, "points", "point"),
        live = count(report.live_entries, "live entry", "live entries"),
    );
    out.write_all(text.as_bytes()).map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
