//! `cairn info`, `backup`, `verify`: looking at and protecting a whole store.
//!
//! `info` opens the store (so the figures are those after recovery) and reads its
//! manifest through `cairn::inspect` for the per-keyspace levels.

use std::io::Write;
use std::path::{Path, PathBuf};

use cairn::inspect::{self, ManifestImage};
use cairn::{Db, LossCause, Options};
use serde_json::{json, Value};

use crate::errors::{CliError, CliResult, EXIT_CORRUPTION, EXIT_OK};
use crate::plural::{count, plural};

use super::{close, no_store, open_read, print_json, Contents};

/// Describe a store: keyspaces, levels, tables and sizes, seqnos, WAL files, options
///
/// Readable text by default, one JSON object with --json. The options shown are the ones
/// this command opened the store with (options are not stored in the store).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct InfoArgs {
    /// The store directory.
    store: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn read(path: &Path) -> CliResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| CliError::msg(format!("read {} failed: {e}", path.display())))
}

/// The manifest `CURRENT` names, decoded, with its file name and size.
fn manifest(dir: &Path) -> CliResult<(String, u64, ManifestImage)> {
    let current = dir.join("CURRENT");
    let id = inspect::decode_current(&read(&current)?, &current)?;
    let name = format!("MANIFEST-{id:020}");
    let path = dir.join(&name);
    let bytes = read(&path)?;
    let image = inspect::decode_manifest(&bytes, &path)?;
    Ok((name, bytes.len() as u64, image))
}

/// `(name, bytes)` of the WAL files, sorted.
fn wal_files(dir: &Path) -> CliResult<Vec<(String, u64)>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError::msg(format!("list {} failed: {e}", dir.display())))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.ends_with(".wal") {
            out.push((name, entry.metadata().map(|m| m.len()).unwrap_or(0)));
        }
    }
    out.sort();
    Ok(out)
}

fn describe(db: &Db, options: &Options) -> CliResult<Value> {
    let dir = db.path();
    let stats = db.stats();
    let (manifest_name, manifest_bytes, image) = manifest(dir)?;
    let mut keyspaces = Vec::new();
    let mut sorted = image.keyspaces.clone();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for ks in &sorted {
        let levels: Vec<Value> = ks
            .tables
            .iter()
            .zip(&ks.level_bytes)
            .enumerate()
            .filter(|(_, (tables, _))| **tables > 0)
            .map(|(level, (tables, bytes))| json!({"level": level, "tables": tables, "bytes": bytes}))
            .collect();
        keyspaces.push(json!({
            "name": ks.name,
            "id": ks.id,
            "tables": ks.tables.iter().sum::<usize>(),
            "bytes": ks.level_bytes.iter().sum::<u64>(),
            "levels": levels,
        }));
    }
    let wal: Vec<Value> = wal_files(dir)?
        .into_iter()
        .map(|(name, bytes)| json!({"file": name, "bytes": bytes}))
        .collect();
    Ok(json!({
        "path": dir.display().to_string(),
        "seqno": {
            "last": db.last_seqno(),
            "durable": db.durable_seqno(),
            "flushed": image.flushed_seqno,
        },
        "keyspaces": keyspaces,
        "tables_per_level": stats.tables_per_level,
        "table_bytes": stats.table_bytes,
        "memtable_bytes": stats.memtable_bytes,
        "wal": {"files": wal, "min_id": image.wal_min_id},
        "manifest": {"file": manifest_name, "bytes": manifest_bytes, "edits": image.edits},
        "next_file_id": image.next_file_id,
        "options": {
            "durability": format!("{:?}", options.durability),
            "memtable_size": options.memtable_size,
            "memtables_per_flush": options.memtables_per_flush,
            "max_immutable_memtables": options.max_immutable_memtables,
            "max_wal_size": options.max_wal_size,
            "block_cache_size": options.block_cache_size,
            "block_size": options.block_size,
            "compression": format!("{:?}", options.compression),
            "bloom_bits_per_key": options.bloom_bits_per_key,
            "l0_compaction_trigger": options.l0_compaction_trigger,
            "level1_size": options.level1_size,
            "level_size_multiplier": options.level_size_multiplier,
            "table_size": options.table_size,
        },
    }))
}

/// Text form of the JSON object `describe` builds.
fn text(v: &Value) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "store: {}", v["path"].as_str().unwrap_or(""));
    let seq = &v["seqno"];
    let _ = writeln!(
        s,
        "seqno: last {} durable {} flushed {}",
        seq["last"], seq["durable"], seq["flushed"]
    );
    let _ = writeln!(s, "keyspaces:");
    for ks in v["keyspaces"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {} (id {}): {}, {} bytes",
            ks["name"].as_str().unwrap_or(""),
            ks["id"],
            count(ks["tables"].as_u64().unwrap_or(0), "table", "tables"),
            ks["bytes"]
        );
        for l in ks["levels"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "    L{}: {}, {} bytes",
                l["level"],
                count(l["tables"].as_u64().unwrap_or(0), "table", "tables"),
                l["bytes"]
            );
        }
    }
    let _ = writeln!(s, "memtable bytes: {}", v["memtable_bytes"]);
    let wal = &v["wal"];
    let _ = writeln!(s, "wal (min id {}):", wal["min_id"]);
    for f in wal["files"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {} {} bytes",
            f["file"].as_str().unwrap_or(""),
            f["bytes"]
        );
    }
    let m = &v["manifest"];
    let _ = writeln!(
        s,
        "manifest: {} ({} bytes, {})",
        m["file"].as_str().unwrap_or(""),
        m["bytes"],
        count(m["edits"].as_u64().unwrap_or(0), "edit", "edits")
    );
    let _ = writeln!(s, "options (as opened by this command):");
    if let Some(o) = v["options"].as_object() {
        for (k, val) in o {
            let shown = val.as_str().map_or_else(|| val.to_string(), str::to_string);
            let _ = writeln!(s, "  {k}: {shown}");
        }
    }
    s
}

pub fn info(args: &InfoArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    let options = super::stored_options(&args.store)?;
    let v = describe(&db, &options)?;
    close(db)?;
    let rendered = if args.json {
        format!("{v}\n")
    } else {
        text(&v)
    };
    out.write_all(rendered.as_bytes())
        .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Copy a consistent snapshot of the store to DEST (a new directory)
///
/// Prints what was copied; with --json, one object: seqno, dest, tables, wal_files,
/// files_linked, bytes_linked, files_copied, bytes_copied.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct BackupArgs {
    /// The store directory.
    store: PathBuf,
    /// Where to write the backup (must not exist).
    dest: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn backup(args: &BackupArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    let info = db.backup(&args.dest)?;
    close(db)?;
    if args.json {
        print_json(
            out,
            json!({
                "seqno": info.seqno,
                "dest": args.dest.display().to_string(),
                "tables": info.tables,
                "wal_files": info.wal_files,
                "files_linked": info.files_linked,
                "bytes_linked": info.bytes_linked,
                "files_copied": info.files_copied,
                "bytes_copied": info.bytes_copied,
            }),
        )?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "backup of seqno {} in {}: {}, {}; {} linked ({} bytes), {} copied ({} bytes)",
        info.seqno,
        args.dest.display(),
        count(info.tables, "table", "tables"),
        count(info.wal_files, "log file", "log files"),
        count(info.files_linked, "file", "files"),
        info.bytes_linked,
        info.files_copied,
        info.bytes_copied
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Check every file of a store (checksums, structure) without opening it for writes
///
/// Works on a closed store, a backup and a pack file, and on a store another process has
/// open: that store is checked at one point, the view a read-only open reads (every file
/// of it through the handles the view holds, while the writer goes on).
/// Lists each file checked, then every problem found.
/// Exit status: 0 intact, 3 damage found, 1 error (also for a path that holds no store
/// at all: no CURRENT and no other store file). Store files without CURRENT are damage.
/// With --json, one object: store, clean, files_checked, files (name, kind, bytes,
/// items), unreferenced, notes and problems (message, and kind, file, offset, reason
/// for damage; null where the problem is not damage at a place).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    /// The store directory.
    store: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn verify(args: &VerifyArgs, out: &mut dyn Write) -> CliResult<u8> {
    // A pack file is checked in place.
    if args.store.is_file() {
        let db = open_read(&args.store)?;
        let report = db.verify_report()?;
        close(db)?;
        return print_verify(args, &report, out);
    }
    // Nothing of a store here is a mistaken path, not damage: say so as `get` does.
    if !Contents::of(&args.store)?.has_store() {
        return Err(no_store(&args.store));
    }
    let report = match cairn::verify_report(&args.store) {
        // Open elsewhere: check the view a read-only open holds, at one point.
        Err(cairn::Error::Io { ref source, .. })
            if source.kind() == std::io::ErrorKind::WouldBlock =>
        {
            let db = open_read(&args.store)?;
            let mut report = db.verify_report()?;
            report.notes.push(format!(
                "the store is open in another process: checked the view a read-only open \
                 read at seqno {} (every file of it as held at that point)",
                db.last_seqno()
            ));
            close(db)?;
            report
        }
        other => other?,
    };
    print_verify(args, &report, out)
}

/// Prints a verification report; returns the exit code.
fn print_verify(
    args: &VerifyArgs,
    report: &cairn::VerifyReport,
    out: &mut dyn Write,
) -> CliResult<u8> {
    let code = if report.is_clean() {
        EXIT_OK
    } else {
        EXIT_CORRUPTION
    };
    if args.json {
        print_json(out, verify_json(&args.store, report))?;
        return Ok(code);
    }
    let mut text = String::new();
    for f in &report.files {
        text.push_str(&format!(
            "ok       {:<24} {:<9} {:>12} bytes {:>10} {}\n",
            f.name,
            f.kind.to_string(),
            f.bytes,
            f.items,
            plural(f.items, "item", "items")
        ));
    }
    for name in &report.unreferenced {
        text.push_str(&format!("unused   {name}\n"));
    }
    for note in &report.notes {
        text.push_str(&format!("note     {note}\n"));
    }
    for problem in &report.problems {
        text.push_str(&format!("DAMAGED  {problem}\n"));
    }
    text.push_str(&format!(
        "{} checked, {}\n",
        count(report.files.len() + report.problems.len(), "file", "files"),
        count(report.problems.len(), "problem", "problems")
    ));
    out.write_all(text.as_bytes()).map_err(CliError::Output)?;
    Ok(code)
}

/// The JSON form of a verify report (the facts of the text, one object).
fn verify_json(store: &Path, report: &cairn::VerifyReport) -> Value {
    let files: Vec<Value> = report
        .files
        .iter()
        .map(|f| json!({"name": f.name, "kind": f.kind.to_string(), "bytes": f.bytes, "items": f.items}))
        .collect();
    let problems: Vec<Value> = report
        .problems
        .iter()
        .map(|e| {
            let c = e.as_corruption();
            json!({
                "message": e.to_string(),
                "kind": c.map(|c| c.file.to_string()),
                "file": c.map(|c| c.path.display().to_string()),
                "offset": c.map(|c| c.offset),
                "reason": c.map(|c| c.reason.to_string()),
            })
        })
        .collect();
    json!({
        "store": store.display().to_string(),
        "clean": report.is_clean(),
        "files_checked": report.files.len() + report.problems.len(),
        "files": files,
        "unreferenced": report.unreferenced,
        "notes": report.notes,
        "problems": problems,
    })
}

/// Open a damaged store, keeping what can be read, and report exactly what was dropped
///
/// Opens the store with WAL salvage: damaged ranges of the log, and durable writes whose
/// separated value is damaged or missing, are skipped instead of refusing the open. Each
/// range left out is printed with its cause, file, byte range and the seqnos lost where
/// known; the writes kept are flushed into tables, so the store then opens normally.
/// Torn tails (what any crash leaves) are listed too; they held no durable write.
/// Exit status: 0 done (whatever was dropped), 1 error, 3 damage salvage cannot skip
/// (a damaged table or manifest: restore from a backup).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct SalvageArgs {
    /// The store directory.
    store: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn salvage(args: &SalvageArgs, out: &mut dyn Write) -> CliResult<u8> {
    if !args.store.join("CURRENT").exists() {
        return Err(no_store(&args.store));
    }
    let mut options = super::stored_options(&args.store)?;
    options.create_if_missing = false;
    options.salvage_wal = true;
    let db = Db::open(&args.store, options)?;
    let report = db.recovery_report().clone();
    close(db)?;
    let text = if args.json {
        let losses: Vec<serde_json::Value> = report
            .losses
            .iter()
            .map(|l| {
                json!({
                    "cause": cause_name(l.cause),
                    "durable_writes_lost": l.cause.loses_durable_writes(),
                    "file": l.path.display().to_string(),
                    "kind": l.file.to_string(),
                    "offset": l.offset,
                    "len": l.len,
                    "reason": l.reason.to_string(),
                    "first_seqno": l.seqnos.map(|s| s.0),
                    "last_seqno": l.seqnos.map(|s| s.1),
                    "detail": l.detail,
                })
            })
            .collect();
        let json = json!({
            "store": args.store.display().to_string(),
            "log_files": report.log_files,
            "replayed_records": report.replayed_records,
            "last_seqno": report.last_seqno,
            "durable_writes_lost": report.lost_durable_writes(),
            "losses": losses,
        });
        format!("{json}\n")
    } else {
        let mut text = format!(
            "salvaged {}: {} log {} read, {} {} replayed, last seqno {}\n",
            args.store.display(),
            report.log_files,
            plural(report.log_files, "file", "files"),
            report.replayed_records,
            plural(report.replayed_records, "write", "writes"),
            report.last_seqno
        );
        for l in &report.losses {
            let tag = if l.cause.loses_durable_writes() {
                "LOST   "
            } else {
                "dropped"
            };
            text.push_str(&format!("{tag}  {l}\n"));
        }
        let lost = report
            .losses
            .iter()
            .filter(|l| l.cause.loses_durable_writes())
            .count();
        text.push_str(&format!(
            "{} left out, {lost} of them with durable writes\n",
            count(report.losses.len(), "range", "ranges")
        ));
        text
    };
    out.write_all(text.as_bytes()).map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// The JSON name of a loss cause.
fn cause_name(cause: LossCause) -> &'static str {
    match cause {
        LossCause::TornTail => "torn_tail",
        LossCause::UnsyncedValue => "unsynced_value",
        LossCause::Salvaged => "salvaged",
        LossCause::DamagedValue => "damaged_value",
        _ => "other",
    }
}

/// Write a consistent checkpoint of the store as one file (restore it with `cairn unpack`)
///
/// The pack holds every file of the checkpoint with a CRC32C each, and a checksummed
/// directory. The store is opened read-only: it may be open in another process, and the
/// pack holds every write acknowledged when the command started.
/// With --json, one object: seqno, file, files, member_bytes, file_bytes.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct PackArgs {
    /// The store directory (or a backup).
    store: PathBuf,
    /// The pack file to write (must not exist).
    file: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn pack(args: &PackArgs, out: &mut dyn Write) -> CliResult<u8> {
    // Through a read-only view: works while an application has the store open, and the
    // pack holds exactly the view (every acknowledged write when the command started).
    let db = open_read(&args.store)?;
    let info = db.pack(&args.file)?;
    db.close()?;
    if args.json {
        print_json(
            out,
            json!({
                "seqno": info.seqno,
                "file": args.file.display().to_string(),
                "files": info.members,
                "member_bytes": info.member_bytes,
                "file_bytes": info.file_bytes,
            }),
        )?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "packed seqno {}: {}, {} bytes into {} ({} bytes)",
        info.seqno,
        count(info.members, "file", "files"),
        info.member_bytes,
        args.file.display(),
        info.file_bytes
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Restore a pack file into a new store directory
///
/// Every byte of the pack is checked before anything is written.
/// With --json, one object: seqno, file, dest, files, member_bytes.
/// Exit status: 0 ok, 3 the pack is damaged, 1 error.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct UnpackArgs {
    /// The pack file.
    file: PathBuf,
    /// The store directory to create (must not exist).
    dest: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn unpack(args: &UnpackArgs, out: &mut dyn Write) -> CliResult<u8> {
    let info = cairn::pack::unpack(&args.file, &args.dest)?;
    if args.json {
        print_json(
            out,
            json!({
                "seqno": info.seqno,
                "file": args.file.display().to_string(),
                "dest": args.dest.display().to_string(),
                "files": info.members,
                "member_bytes": info.member_bytes,
            }),
        )?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "unpacked seqno {}: {}, {} bytes into {}",
        info.seqno,
        count(info.members, "file", "files"),
        info.member_bytes,
        args.dest.display()
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
