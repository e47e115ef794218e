//! `cairn stats`: the engine's statistics of a store (`Db::stats`, `Db::space_stats`,
//! `Db::disk_size`), from a read-only open.
//!
//! A read-only open sees the store as it is at the open, and its counters count what
//! the open itself did, not what the application that writes the store did: the sizes,
//! seqnos and tables per level describe the store; the work counters (bytes written,
//! flushes, compactions, cache hits, stalls) describe this command's open, and are kept
//! apart under "this_open" so no one reads them as the application's.

use std::io::Write;
use std::path::PathBuf;

use cairn::{Db, SpaceStats, Stats};
use serde_json::{json, Value};

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;
use crate::sizes::human_exact;

use super::{open_read, print_json};

/// Print a store's statistics: seqnos, tables per level, sizes, value-log garbage
///
/// Db::stats, Db::space_stats and Db::disk_size of the store: seqnos, tables per level,
/// table, blob, log and memtable bytes, live and garbage bytes of each blob file, and
/// the bytes of every file on disk.
/// Opens the store read-only, so it works on a store an application has open (and on a
/// pack file), and shows it as it is when the command starts. The sizes, seqnos and
/// tables describe the store. The work counters (bytes written, flushes, compactions,
/// block-cache hits, stalls) are those of this command's own open, not of the
/// application writing the store: they are shown apart, as "this open" ("this_open" in
/// JSON), with the open's memory (block cache, index and filter blocks of the tables it
/// opened). Memtable bytes are the writes in the log not yet flushed into tables (the open
/// replays them). Readable text by default; one JSON object with --json.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The store directory (or a pack file).
    store: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    let v = describe(&db, &args.store)?;
    db.close()?;
    if args.json {
        print_json(out, v)?;
    } else {
        out.write_all(text(&v).as_bytes())
            .map_err(CliError::Output)?;
    }
    Ok(EXIT_OK)
}

/// The statistics as one JSON object (the text is made from it).
fn describe(db: &Db, path: &std::path::Path) -> CliResult<Value> {
    let stats: Stats = db.stats();
    let space: SpaceStats = db.space_stats()?;
    let disk = db.disk_size()?;
    let blob_files: Vec<Value> = space
        .blob_files
        .iter()
        .map(|b| {
            json!({
                "id": b.id,
                "file_bytes": b.file_bytes,
                "value_bytes": b.value_bytes,
                "live_bytes": b.live_bytes,
                "garbage_bytes": b.garbage_bytes,
            })
        })
        .collect();
    Ok(json!({
        "path": path.display().to_string(),
        "pack": path.is_file(),
        "last_seqno": stats.last_seqno,
        "durable_seqno": stats.durable_seqno,
        "tables_per_level": stats.tables_per_level,
        "tables": stats.tables_per_level.iter().sum::<usize>(),
        "table_bytes": stats.table_bytes,
        "blob_bytes": stats.blob_bytes,
        "memtable_bytes": stats.memtable_bytes,
        "wal_bytes": space.wal_bytes,
        "disk_bytes": disk,
        "space": {
            "table_bytes": space.table_bytes,
            "wal_bytes": space.wal_bytes,
            "blob_bytes": space.blob_bytes,
            "live_blob_bytes": space.live_blob_bytes,
            "garbage_blob_bytes": space.garbage_blob_bytes,
            "unflushed_blob_files": space.unflushed_blob_files,
            "unflushed_blob_bytes": space.unflushed_blob_bytes,
            "blob_files": blob_files,
        },
        "this_open": {
            "wal_bytes_written": stats.wal_bytes_written,
            "wal_syncs": stats.wal_syncs,
            "flush_bytes_written": stats.flush_bytes_written,
            "compaction_bytes_written": stats.compaction_bytes_written,
            "blob_bytes_written": stats.blob_bytes_written,
            "user_bytes_written": stats.user_bytes_written,
            "flushes": stats.flushes,
            "compactions": stats.compactions,
            "cache_hits": stats.cache_hits,
            "cache_misses": stats.cache_misses,
            "cache_refused": stats.cache_refused,
            "write_stalls": stats.write_stalls,
            "memory": {
                "memory_budget": stats.memory_budget,
                "memtable_bytes": stats.memtable_bytes,
                "memtable_limit": stats.memtable_limit,
                "block_cache_bytes": stats.block_cache_bytes,
                "block_cache_capacity": stats.block_cache_capacity,
                "index_filter_bytes": stats.index_filter_bytes,
                "index_filter_limit": stats.index_filter_limit,
            },
        },
    }))
}

/// The width of the label column of the text: the longest label ("unflushed blobs") and
/// two spaces, whichever lines are shown.
const LABEL_WIDTH: usize = 17;

/// A number field of `v` (0 if absent).
fn num(v: &Value, name: &str) -> u64 {
    v.get(name).and_then(Value::as_u64).unwrap_or(0)
}

/// A size field of `v`, for people.
fn size(v: &Value, name: &str) -> String {
    human_exact(num(v, name))
}

/// Text form of the object [`describe`] builds: one fact per line, labels aligned.
fn text(v: &Value) -> String {
    use std::fmt::Write as _;
    let mut lines: Vec<(&str, String)> = Vec::new();
    let kind = if v["pack"] == true { " (a pack)" } else { "" };
    lines.push((
        "store",
        format!("{}{kind}", v["path"].as_str().unwrap_or("")),
    ));
    lines.push((
        "seqno",
        format!(
            "last {}, durable {}",
            num(v, "last_seqno"),
            num(v, "durable_seqno")
        ),
    ));
    let levels: Vec<String> = v["tables_per_level"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(level, n)| {
            n.as_u64()
                .filter(|n| *n > 0)
                .map(|n| format!("L{level} {n}"))
        })
        .collect();
    let tables = count(num(v, "tables"), "table", "tables");
    lines.push((
        "tables",
        if levels.is_empty() {
            tables
        } else {
            format!("{tables} ({})", levels.join(", "))
        },
    ));
    lines.push(("table bytes", size(v, "table_bytes")));
    let space = &v["space"];
    let blob_files = space["blob_files"].as_array().map_or(0, Vec::len);
    lines.push((
        "blob files",
        format!(
            "{}, {}",
            count(blob_files, "file", "files"),
            size(v, "blob_bytes")
        ),
    ));
    if blob_files > 0 {
        lines.push((
            "blob values",
            format!(
                "live {}, garbage {}",
                size(space, "live_blob_bytes"),
                size(space, "garbage_blob_bytes")
            ),
        ));
    }
    let unflushed = num(space, "unflushed_blob_files");
    if unflushed > 0 {
        lines.push((
            "unflushed blobs",
            format!(
                "{}, {}: written since the last flush",
                count(unflushed, "file", "files"),
                size(space, "unflushed_blob_bytes")
            ),
        ));
    }
    lines.push((
        "memtable bytes",
        format!(
            "{}: log writes not yet in tables",
            size(v, "memtable_bytes")
        ),
    ));
    lines.push(("wal bytes", size(v, "wal_bytes")));
    let on_disk = if v["pack"] == true {
        "the pack's members"
    } else {
        "every file in the directory"
    };
    lines.push((
        "disk bytes",
        format!("{}: {on_disk}", size(v, "disk_bytes")),
    ));

    let mut s = String::new();
    for (label, value) in &lines {
        let _ = writeln!(s, "{label:<LABEL_WIDTH$}{value}");
    }
    let o = &v["this_open"];
    let _ = writeln!(
        s,
        "this open (read-only; counts this command's own work, not the application's):"
    );
    let _ = writeln!(
        s,
        "  {}, {}, {}",
        count(num(o, "flushes"), "flush", "flushes"),
        count(num(o, "compactions"), "compaction", "compactions"),
        count(num(o, "write_stalls"), "write stall", "write stalls")
    );
    let _ = writeln!(
        s,
        "  written: log {}, flushes {}, compactions {}, blobs {}, user {}",
        size(o, "wal_bytes_written"),
        size(o, "flush_bytes_written"),
        size(o, "compaction_bytes_written"),
        size(o, "blob_bytes_written"),
        size(o, "user_bytes_written")
    );
    let _ = writeln!(
        s,
        "  block cache: {}, {}, {} refused",
        count(num(o, "cache_hits"), "hit", "hits"),
        count(num(o, "cache_misses"), "miss", "misses"),
        num(o, "cache_refused")
    );
    let m = &o["memory"];
    let _ = writeln!(
        s,
        "  memory: block cache {} of {}, index and filter blocks of open tables {}",
        size(m, "block_cache_bytes"),
        size(m, "block_cache_capacity"),
        size(m, "index_filter_bytes")
    );
    s
}
