//! `cairn put`, `get`, `head`, `delete`: one key at a time.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use cairn::{EntryOptions, Meta};

use crate::errors::{CliError, CliResult, EXIT_NOT_FOUND, EXIT_OK};

use super::{arg_bytes, close, existing_keyspace, open, open_read, KeyspaceArg};
use crate::hexfmt;

/// Set a key to a value (creates the store and the keyspace if missing)
///
/// The write is durable (fsynced) when the command returns. With --hex, KEY and VALUE
/// are hex digits. A value starting with `-` needs no `--`. A store is created only in a
/// new or empty directory: one holding other files and no store is refused (exit 1).
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
    let key = arg_bytes("key", &args.key, args.hex)?;
    let value = arg_bytes("value", &args.value, args.hex)?;
    let mut options = EntryOptions::new();
    if args.tag.is_some() || args.meta.is_some() {
        let meta = match &args.meta {
            Some(text) => hexfmt::decode(text.as_bytes())
                .map_err(|e| CliError::msg(format!("--meta: the metadata {e}")))?,
            None => Vec::new(),
        };
        options = options.meta(Meta::new(args.tag.unwrap_or(0), meta));
    }
    if let Some(secs) = args.ttl {
        options = options.ttl(Duration::from_secs(secs));
    }
    let db = open(&args.store, true)?;
    db.keyspace(&args.ks.keyspace)?
        .insert_entry(&key, &value, &options)?;
    close(db)?;
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
    let db = open_read(&args.store)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    match ks.get(&key)? {
        Some(value) => {
            out.write_all(&value).map_err(CliError::Output)?;
            Ok(EXIT_OK)
        }
        None => Ok(EXIT_NOT_FOUND),
    }
}

/// Print a key's attributes as one JSON object: value_len, tag, meta (hex), seqno,
/// expires_at (Unix ms or null), separated; the value itself is not read
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

pub fn head(args: &HeadArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open_read(&args.store)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    let Some(head) = ks.head(&key)? else {
        return Ok(EXIT_NOT_FOUND);
    };
    let mut meta = Vec::new();
    hexfmt::push_hex(&mut meta, &head.meta);
    let json = serde_json::json!({
        "value_len": head.value_len,
        "tag": head.tag,
        "meta": String::from_utf8_lossy(&meta),
        "seqno": head.seqno,
        "expires_at": head.expires_at,
        "separated": head.separated,
    });
    writeln!(out, "{json}").map_err(CliError::Output)?;
    Ok(EXIT_OK)
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
    close(db)?;
    Ok(EXIT_OK)
}
