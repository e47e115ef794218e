//! `cairn incr`, `cairn count`: counters and entry counts.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use crate::errors::{CliError, CliResult, EXIT_OK};

use super::{arg_bytes, close, existing_keyspace, open, open_read, KeyspaceArg};

/// Add DELTA to the counter at KEY and print the new value
///
/// A counter is the decimal text of an i64 (a missing key counts as 0). DELTA may be
/// negative: `cairn incr s k -5`. The write is durable when the command returns; the
/// entry keeps its tag, metadata and expiry. Exit 1 if the value is not a counter or the
/// sum overflows (nothing is written then). Creates the store if missing, like `put`.
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

pub fn incr(args: &IncrArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open(&args.store, true)?;
    let value = db.keyspace(&args.ks.keyspace)?.incr(&key, args.delta)?;
    close(db)?;
    writeln!(out, "{value}").map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Print the exact number of live keys in the keyspace (walks every key; values are not
/// copied)
#[derive(Debug, clap::Args)]
pub struct CountArgs {
    /// The store directory.
    store: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
}

pub fn count(args: &CountArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    let n = existing_keyspace(&db, &args.ks.keyspace)?.len()?;
    writeln!(out, "{n}").map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
