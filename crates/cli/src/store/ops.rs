//! `cairn keyspaces`, `drop-keyspace`, `flush`, `compact`: what an operator runs on a
//! store that no application has open (all but `keyspaces` open it for writing).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;

use super::{close, open, open_read};

/// List the keyspaces of a store, with their table files and bytes
///
/// Opens the store read-only: works while an application has it open.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct KeyspacesArgs {
    /// The store directory.
    store: PathBuf,
    /// One JSON object per keyspace, one per line.
    #[arg(long)]
    json: bool,
}

pub fn keyspaces(args: &KeyspacesArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    let mut text = String::new();
    for name in db.keyspace_names() {
        let Some(ks) = db.get_keyspace(&name) else {
            continue;
        };
        let bytes = ks.disk_size();
        if args.json {
            text.push_str(&format!("{}\n", json!({ "name": name, "bytes": bytes })));
        } else {
            text.push_str(&format!("{name}\t{bytes} bytes\n"));
        }
    }
    out.write_all(text.as_bytes()).map_err(CliError::Output)?;
    db.close()?;
    Ok(EXIT_OK)
}

/// Drop a keyspace and all its data (the default keyspace cannot be dropped)
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DropKeyspaceArgs {
    /// The store directory.
    store: PathBuf,
    /// The keyspace to drop.
    name: String,
}

pub fn drop_keyspace(args: &DropKeyspaceArgs, _out: &mut dyn Write) -> CliResult<u8> {
    let db = open(&args.store, false)?;
    if db.get_keyspace(&args.name).is_none() {
        return Err(CliError::msg(format!(
            "no keyspace named {:?} in the store",
            args.name
        )));
    }
    db.drop_keyspace(&args.name)?;
    close(db)?;
    Ok(EXIT_OK)
}

/// Flush every write still in the log into tables
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct FlushArgs {
    /// The store directory.
    store: PathBuf,
}

pub fn flush(args: &FlushArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open(&args.store, false)?;
    db.flush()?;
    let last = db.last_seqno();
    close(db)?;
    writeln!(out, "flushed through seqno {last}").map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Compact the whole store now: every keyspace into one level, every table rewritten
///
/// Drops overwritten versions, tombstones and expired entries, then collects value-log
/// garbage. Shows what it reclaimed.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompactArgs {
    /// The store directory.
    store: PathBuf,
}

pub fn compact(args: &CompactArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open(&args.store, false)?;
    let before = db.disk_size()?;
    let runs = db.compact()?;
    let removed = db.collect_garbage()?;
    close(db)?;
    let reopened = open_read(&args.store)?;
    let after = reopened.disk_size()?;
    reopened.close()?;
    writeln!(
        out,
        "{}, {} removed; {before} bytes before, {after} after",
        count(runs, "compaction", "compactions"),
        count(removed, "blob file", "blob files")
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
