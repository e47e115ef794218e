//! `cairn sparkey writehash`: build or update the index of a log.

use std::io::Write;
use std::path::PathBuf;

use cairn::hash::{write_index, IndexOptions};

use crate::errors::{CliError, CliResult, EXIT_OK};

use super::names;
use super::options::HashSizeArg;

/// Write the index (x.spi) of a log (x.spl)
///
/// Like the reference: the hash size is chosen automatically (64-bit from 2^23 slots on)
/// and an existing index of the same log is updated incrementally (only entries appended
/// since it was written are added; its seed is kept). The log name must end with `.spl`.
///
/// Additions: `--hash-size 32|64` forces the hash width (the library's `hash_size`
/// argument); `--fresh` ignores an existing index and rebuilds from the whole log. The
/// index is written to a temporary file and renamed into place, so readers see the old or
/// the new index, never a partial one. A hash-size change never hangs (the reference can
/// loop forever) and does not double-count `garbage_size`. Errors print the engine's
/// message (file, offset, what is wrong); damaged files exit 3 instead of 1.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The log file (`x.spl`); the index is written to `x.spi`.
    #[arg(value_name = "FILE.spl")]
    log: PathBuf,
    /// Hash width: auto (the reference's rule), 32 or 64 bits.
    #[arg(long, value_enum, default_value_t = HashSizeArg::Auto)]
    hash_size: HashSizeArg,
    /// Rebuild from scratch even if an index for this log exists.
    #[arg(long)]
    fresh: bool,
}

pub fn run(args: &Args, _out: &mut dyn Write) -> CliResult<u8> {
    let index = names::index_for_log(&args.log)
        .ok_or_else(|| CliError::msg("log filename must end with .spl"))?;
    let options = IndexOptions::default()
        .hash_size(args.hash_size.into())
        .fresh(args.fresh);
    write_index(&index, &args.log, &options)?;
    Ok(EXIT_OK)
}
