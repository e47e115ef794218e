//! `cairn put`, `get`, `head`, `delete`: one key at a time.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use crate::errors::{CliError, CliResult, EXIT_NOT_FOUND, EXIT_OK};

use super::{arg_bytes, existing_keyspace, not_available, open, KeyspaceArg};

/// Set a key to a value (creates the store and the keyspace if missing)
///
/// The write is durable (fsynced) when the command returns. With --hex, KEY and VALUE
/// are hex digits. A value starting with `-` needs no `--`.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct PutArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    /// The value.
    #[arg(allow_hyphen_values = true)]
    value: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY and VALUE are hex (two digits per byte).
    #[arg(long)]
    hex: bool,
    /// Expire the entry after SECS seconds.
    #[arg(long, value_name = "SECS")]
    ttl: Option<u64>,
    /// Application tag (a u32; 0 is none).
    #[arg(long, value_name = "N")]
    tag: Option<u32>,
    /// Application metadata, hex (at most 4 KiB).
    #[arg(long, value_name = "HEX")]
    meta: Option<String>,
}

pub fn put(args: &PutArgs, _out: &mut dyn Write) -> CliResult<u8> {
    if args.ttl.is_some() || args.tag.is_some() || args.meta.is_some() {
        return Err(not_available(
            "put --ttl/--tag/--meta",
            "entry attributes (Keyspace::insert_entry)",
        ));
    }
    let key = arg_bytes("key", &args.key, args.hex)?;
    let value = arg_bytes("value", &args.value, args.hex)?;
    let db = open(&args.store, true)?;
    db.keyspace(&args.ks.keyspace)?.insert(&key, &value)?;
    db.close()?;
    Ok(EXIT_OK)
}

/// Print the value of a key: raw bytes on standard output, no newline
///
/// Exit status: 0 found, 2 not found, 1 error, 3 corruption. With --hex, KEY is hex.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct GetArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
}

pub fn get(args: &GetArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open(&args.store, false)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    match ks.get(&key)? {
        Some(value) => {
            out.write_all(&value).map_err(CliError::Output)?;
            Ok(EXIT_OK)
        }
        None => Ok(EXIT_NOT_FOUND),
    }
}

/// Print a key's attributes as one JSON object: value_len, tag, meta, seqno
///
/// Exit status: 0 found, 2 not found, 1 error, 3 corruption.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct HeadArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
}

pub fn head(args: &HeadArgs, _out: &mut dyn Write) -> CliResult<u8> {
    arg_bytes("key", &args.key, args.hex)?;
    Err(not_available("head", "entry attributes (Keyspace::head)"))
}

/// Remove a key (no error if it is absent)
///
/// The removal is durable (fsynced) when the command returns.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DeleteArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
}

pub fn delete(args: &DeleteArgs, _out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open(&args.store, false)?;
    existing_keyspace(&db, &args.ks.keyspace)?.remove(&key)?;
    db.close()?;
    Ok(EXIT_OK)
}
