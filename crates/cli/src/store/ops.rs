//! `cairn keyspaces`, `drop-keyspace`, `flush`, `compact`: what an operator runs on a
//! store that no application has open (all but `keyspaces` open it for writing).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;

use super::{close, open, open_read, print_json};

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
///
/// Prints nothing, or with --json one object: keyspace (the name) and bytes (its table
/// files' bytes before the drop, as `keyspaces` lists them).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DropKeyspaceArgs {
    /// The store directory.
    store: PathBuf,
    /// The keyspace to drop.
    name: String,
    /// Print what was dropped as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn drop_keyspace(args: &DropKeyspaceArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open(&args.store, false)?;
    let Some(ks) = db.get_keyspace(&args.name) else {
        return Err(CliError::msg(format!(
            "no keyspace named {:?} in the store",
            args.name
        )));
    };
    let bytes = ks.disk_size();
    drop(ks);
    db.drop_keyspace(&args.name)?;
    close(db)?;
    if args.json {
        print_json(out, json!({"keyspace": args.name, "bytes": bytes}))?;
    }
    Ok(EXIT_OK)
}

/// Flush every write still in the log into tables
///
/// Prints the last seqno flushed; with --json, one object: seqno.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct FlushArgs {
    /// The store directory.
    store: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn flush(args: &FlushArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open(&args.store, false)?;
    db.flush()?;
    let last = db.last_seqno();
    close(db)?;
    if args.json {
        print_json(out, json!({ "seqno": last }))?;
    } else {
        writeln!(out, "flushed through seqno {last}").map_err(CliError::Output)?;
    }
    Ok(EXIT_OK)
}

/// Compact the whole store now: every keyspace into one level, every table rewritten
///
/// Drops overwritten versions, tombstones and expired entries, then collects value-log
/// garbage. Shows what it reclaimed; with --json, one object: compactions,
/// blob_files_removed, bytes_before and bytes_after (the store's bytes on disk).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompactArgs {
    /// The store directory.
    store: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
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
    if args.json {
        return print_json(
            out,
            json!({
                "compactions": runs,
                "blob_files_removed": removed,
                "bytes_before": before,
                "bytes_after": after,
            }),
        )
        .map(|()| EXIT_OK);
    }
    writeln!(
        out,
        "{}, {} removed; {before} bytes before, {after} after",
        count(runs, "compaction", "compactions"),
        count(removed, "blob file", "blob files")
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
