//! `cairn incr`, `cairn count`: counters and entry counts.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::errors::{CliError, CliResult, EXIT_OK};

use super::fields::{self, written};
use super::{arg_bytes, close, existing_keyspace, open, open_read, print_json, KeyspaceArg};

/// Add DELTA to the counter at KEY and print the new value
///
/// A counter is the decimal text of an i64 (a missing key counts as 0). DELTA may be
/// negative: `cairn incr s k -5`. The write is durable when the command returns; the
/// entry keeps its tag, metadata and expiry. Exit 1 if the value is not a counter or the
/// sum overflows (nothing is written then). Creates the store if missing, like `put`.
/// With --json, one object: keyspace, key (or key_b64), value (the new value, a number)
/// and the write's seqno.
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
    /// Print the new value as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn incr(args: &IncrArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open(&args.store, true)?;
    let value = db.keyspace(&args.ks.keyspace)?.incr(&key, args.delta)?;
    // This process holds the store's lock: the last seqno is this write's.
    let seqno = db.last_seqno();
    close(db)?;
    if args.json {
        let mut obj = written(&args.ks.keyspace, seqno);
        fields::insert_bytes(&mut obj, "key", &key);
        obj.insert("value".to_string(), Value::from(value));
        print_json(out, obj)?;
    } else {
        writeln!(out, "{value}").map_err(CliError::Output)?;
    }
    Ok(EXIT_OK)
}

/// Print the exact number of live keys in the keyspace (walks every key; values are not
/// copied)
///
/// With --json, one object: keyspace and count.
#[derive(Debug, clap::Args)]
pub struct CountArgs {
    /// The store directory.
    store: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// Print the count as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn count(args: &CountArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    let n = existing_keyspace(&db, &args.ks.keyspace)?.len()?;
    if args.json {
        print_json(out, json!({"keyspace": args.ks.keyspace, "count": n}))?;
    } else {
        writeln!(out, "{n}").map_err(CliError::Output)?;
    }
    Ok(EXIT_OK)
}
