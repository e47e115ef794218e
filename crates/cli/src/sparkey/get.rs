//! `cairn sparkey get`: look one key up and print its value.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use cairn::hash::Reader;

use crate::errors::{CliError, CliResult, EXIT_NOT_FOUND, EXIT_OK};
use crate::hexfmt;

use super::names;

/// Print the value of a key: raw bytes on standard output, no newline
///
/// The log is the index name with `.spi` replaced by `.spl` (the index name must end with
/// `.spi`). Exit status: 0 found, 2 not found, 1 error, 3 corrupt files.
///
/// Deviations from the reference: `--hex` gives the key in hex, so keys holding NUL or
/// other bytes a command line cannot carry can be queried (the reference stops a key at its
/// first NUL); a key starting with `-` needs no `--`. Damaged files exit 3 instead of 1.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The index file (`x.spi`).
    #[arg(value_name = "FILE.spi")]
    index: PathBuf,
    /// The key (its bytes as given; with --hex, hex digits).
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    /// The key is hex (two digits per byte, either case; the empty string is the empty key).
    #[arg(long)]
    hex: bool,
}

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let log = names::log_for_index(&args.index)
        .ok_or_else(|| CliError::msg("index filename must end with .spi"))?;
    let raw = args.key.as_bytes();
    let key = if args.hex {
        hexfmt::decode(raw).map_err(|e| CliError::msg(format!("--hex: the key {e}")))?
    } else {
        raw.to_vec()
    };
    let reader = Reader::open(&args.index, &log)?;
    let mut value = Vec::new();
    if reader.get_into(&key, &mut value)? {
        out.write_all(&value).map_err(CliError::Output)?;
        Ok(EXIT_OK)
    } else {
        Ok(EXIT_NOT_FOUND)
    }
}
