//! `cairn incr`, `cairn count`: counters and entry counts.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use crate::errors::CliResult;

use super::{arg_bytes, not_available, KeyspaceArg};

/// Add DELTA to the counter at KEY and print the new value
///
/// A counter is the decimal text of an i64 (a missing key counts as 0). DELTA may be
/// negative: `cairn incr s k -5`.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct IncrArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    /// The amount to add (may be negative).
    #[arg(allow_negative_numbers = true)]
    delta: i64,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
}

pub fn incr(args: &IncrArgs, _out: &mut dyn Write) -> CliResult<u8> {
    arg_bytes("key", &args.key, args.hex)?;
    Err(not_available("incr", "counters (Keyspace::incr)"))
}

/// Print the number of entries in the keyspace
#[derive(Debug, clap::Args)]
pub struct CountArgs {
    /// The store directory.
    store: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
}

pub fn count(_args: &CountArgs, _out: &mut dyn Write) -> CliResult<u8> {
    Err(not_available("count", "entry counts (Keyspace::len)"))
}
