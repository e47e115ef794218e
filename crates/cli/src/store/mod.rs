//! `cairn <command> <store> ...`: the ordered store (a `cairn::Db` directory) from the
//! command line.
//!
//! One module per command group: `kv` (put, get, head, delete), `scan`, `counters` (incr,
//! count), `transfer` (dump, restore, export, import), `admin` (info, backup, verify,
//! salvage, pack, unpack), `ops` (keyspaces, drop-keyspace, flush, compact), `stats`.
//! `fields` encodes keys, values and metadata in the JSON every command prints.
//! This module holds what they share: the `--keyspace`/`--hex` arguments, opening the
//! store, and turning engine output errors into quiet broken-pipe exits; `contents` tells
//! what a store path holds.
//!
//! Keys and values on the command line are UTF-8 text (their bytes as given), or hex with
//! `--hex`. Commands that only read open the store read-only ([`open_read`]: no lock, no
//! write, so they work beside an application that has it open), and say "no store
//! here" (exit 1) where there is none; `put`, `incr`, `restore` and `import` create it if
//! missing, in a new or empty directory only: a directory holding other files and no store
//! is refused (exit 1), so a mistyped path does not scatter store files among someone
//! else's.

mod admin;
mod contents;
mod counters;
mod fields;
mod kv;
mod ops;
mod scan;
mod stats;
mod transfer;

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use cairn::{Db, Keyspace, Options, DEFAULT_KEYSPACE};
use clap::Subcommand;
use serde_json::Value;

use crate::errors::{CliError, CliResult};
use crate::hexfmt;
use crate::plural::count;

pub use contents::Contents;

/// The ordered-store commands (flattened into the top level: `cairn put ...`).
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    Put(kv::PutArgs),
    Get(kv::GetArgs),
    Head(kv::HeadArgs),
    Delete(kv::DeleteArgs),
    Scan(scan::Args),
    Incr(counters::IncrArgs),
    Count(counters::CountArgs),
    Backup(admin::BackupArgs),
    Verify(admin::VerifyArgs),
    Salvage(admin::SalvageArgs),
    Keyspaces(ops::KeyspacesArgs),
    DropKeyspace(ops::DropKeyspaceArgs),
    Flush(ops::FlushArgs),
    Compact(ops::CompactArgs),
    Export(transfer::ExportArgs),
    Import(transfer::ImportArgs),
    Dump(transfer::DumpArgs),
    Restore(transfer::RestoreArgs),
    Info(admin::InfoArgs),
    Stats(stats::Args),
    Pack(admin::PackArgs),
    Unpack(admin::UnpackArgs),
}

/// Runs one ordered-store command; returns its exit code.
pub fn run(command: StoreCommand, out: &mut dyn Write) -> CliResult<u8> {
    match command {
        StoreCommand::Put(a) => kv::put(&a, out),
        StoreCommand::Get(a) => kv::get(&a, out),
        StoreCommand::Head(a) => kv::head(&a, out),
        StoreCommand::Delete(a) => kv::delete(&a, out),
        StoreCommand::Scan(a) => scan::run(&a, out),
        StoreCommand::Incr(a) => counters::incr(&a, out),
        StoreCommand::Count(a) => counters::count(&a, out),
        StoreCommand::Backup(a) => admin::backup(&a, out),
        StoreCommand::Verify(a) => admin::verify(&a, out),
        StoreCommand::Salvage(a) => admin::salvage(&a, out),
        StoreCommand::Keyspaces(a) => ops::keyspaces(&a, out),
        StoreCommand::DropKeyspace(a) => ops::drop_keyspace(&a, out),
        StoreCommand::Flush(a) => ops::flush(&a, out),
        StoreCommand::Compact(a) => ops::compact(&a, out),
        StoreCommand::Export(a) => transfer::export(&a, out),
        StoreCommand::Import(a) => transfer::import(&a, out),
        StoreCommand::Dump(a) => transfer::dump(&a, out),
        StoreCommand::Restore(a) => transfer::restore(&a, out),
        StoreCommand::Info(a) => admin::info(&a, out),
        StoreCommand::Stats(a) => stats::run(&a, out),
        StoreCommand::Pack(a) => admin::pack(&a, out),
        StoreCommand::Unpack(a) => admin::unpack(&a, out),
    }
}

/// `--keyspace KS`, shared by the single-keyspace commands.
#[derive(Debug, Clone, clap::Args)]
pub struct KeyspaceArg {
    /// The keyspace.
    #[arg(long, value_name = "KS", default_value = DEFAULT_KEYSPACE)]
    pub keyspace: String,
}

/// Closes a store a command wrote to, after the flush and compactions its open started
/// (an open flushes the writes the previous command left in the log): a command-line
/// process lives too briefly for background work, so it finishes the work it caused.
pub fn close(db: Db) -> CliResult<()> {
    db.wait_for_compactions()?;
    db.close()?;
    Ok(())
}

/// The error of a read command pointed at a path that holds no store (exit 1).
pub fn no_store(path: &Path) -> CliError {
    CliError::msg(format!(
        "{}: no store here (no CURRENT file)",
        path.display()
    ))
}

/// Refuses to create a store at `path` if it is a directory holding other files and no
/// store (exit 1). A missing path, an empty directory and any store (even a damaged one,
/// which the engine then reports) pass.
///
/// # Errors
/// The refusal, naming one of the files; or if `path` cannot be listed.
pub fn check_creatable(path: &Path) -> CliResult<()> {
    let Contents::Foreign { example, entries } = Contents::of(path)? else {
        return Ok(());
    };
    let held = match entries.checked_sub(1) {
        Some(more) if more > 0 => format!(
            "{example} and {}",
            count(more, "other entry", "other entries")
        ),
        _ => example,
    };
    Err(CliError::msg(format!(
        "{}: refusing to create a store here: the directory is not empty (it holds {held}) \
         and is not a Cairn store (no CURRENT file); use a new or empty directory",
        path.display()
    )))
}

/// Opens the store at `path`; creates it only if `create`, and then only where
/// [`check_creatable`] allows. An existing store opens with the options that shape its
/// files as its application recorded them (`Options::from_store`), so the tables and
/// blob files the command writes match the application's.
pub fn open(path: &Path, create: bool) -> CliResult<Db> {
    open_tuned(path, create, |_| {})
}

/// As [`open`], with `tune` applied to the options first (the settings that are not
/// recorded in the store, such as `memtable_huge_pages`).
pub fn open_tuned(path: &Path, create: bool, tune: impl FnOnce(&mut Options)) -> CliResult<Db> {
    let exists = path.join("CURRENT").exists();
    if create && !exists {
        check_creatable(path)?;
    } else if !exists {
        return Err(no_store(path));
    }
    let mut options = stored_options(path)?;
    options.create_if_missing = create;
    tune(&mut options);
    Db::open(path, options).map_err(|e| open_error(path, e))
}

/// The options recorded in the store at `path` (the defaults for a new store).
pub fn stored_options(path: &Path) -> CliResult<Options> {
    if !path.join("CURRENT").exists() {
        return Ok(Options::default());
    }
    Options::from_store(path).map_err(|e| open_error(path, e))
}

/// Opens the store at `path` read-only, for the commands that only read: it takes no
/// lock and writes nothing, so it works while an application holds the store, and it
/// sees the store as it is at the open (`Db::open_read_only`). A pack file (`cairn pack`)
/// opens in place (`Db::open_pack`).
pub fn open_read(path: &Path) -> CliResult<Db> {
    if path.is_file() {
        // A file that does not start as a pack does is no store (exit 1, as `verify`
        // says), not a damaged pack (exit 3).
        if !starts_as_pack(path) {
            return Err(no_store(path));
        }
        return Db::open_pack(path, Options::default()).map_err(|e| open_error(path, e));
    }
    if !path.join("CURRENT").exists() {
        return Err(no_store(path));
    }
    Db::open_read_only(path, Options::default()).map_err(|e| open_error(path, e))
}

/// The first bytes of a pack file, its header's magic (crates/engine/src/pack/FORMAT.md).
const PACK_MAGIC: &[u8; 4] = b"CPAK";

/// False if the file at `path` is readable and does not begin with [`PACK_MAGIC`]; a file
/// that cannot be read is left to the pack open to report.
fn starts_as_pack(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    match std::fs::File::open(path) {
        Ok(mut file) => match io::Read::read_exact(&mut file, &mut magic) {
            Ok(()) => &magic == PACK_MAGIC,
            Err(e) => e.kind() != io::ErrorKind::UnexpectedEof,
        },
        Err(_) => true,
    }
}

/// An open's error, with a hint to salvage when the log is damaged.
fn open_error(path: &Path, e: cairn::Error) -> CliError {
    match e.as_corruption() {
        Some(c) if c.file == cairn::FileKind::Wal => {
            let hint = format!(
                "`cairn salvage {}` opens it keeping every write that can be read, and \
                 lists the writes it drops",
                path.display()
            );
            CliError::Hinted(e, hint)
        }
        _ => CliError::Engine(e),
    }
}

/// The existing keyspace `name` (an error naming it if it does not exist).
pub fn existing_keyspace(db: &Db, name: &str) -> CliResult<Keyspace> {
    db.get_keyspace(name)
        .ok_or_else(|| CliError::msg(format!("no keyspace named {name:?} in the store")))
}

/// The bytes of a command-line key or value: as given, or decoded from hex.
pub fn arg_bytes(what: &str, raw: &OsStr, hex: bool) -> CliResult<Vec<u8>> {
    if hex {
        hexfmt::decode(raw.as_bytes()).map_err(|e| CliError::msg(format!("--hex: the {what} {e}")))
    } else {
        Ok(raw.as_bytes().to_vec())
    }
}

/// Like [`arg_bytes`] for an optional argument.
pub fn opt_bytes(what: &str, raw: Option<&OsString>, hex: bool) -> CliResult<Option<Vec<u8>>> {
    raw.map(|r| arg_bytes(what, r, hex)).transpose()
}

/// Prints `value` as one line of JSON (the output of a command's `--json`).
pub fn print_json(out: &mut dyn Write, value: impl Into<Value>) -> CliResult<()> {
    writeln!(out, "{}", value.into()).map_err(CliError::Output)
}

/// An engine error from writing to standard output: a closed pipe becomes the quiet
/// broken-pipe exit, anything else stays an engine error.
pub fn output_error(e: cairn::Error) -> CliError {
    match e {
        cairn::Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe => {
            CliError::Output(source)
        }
        other => CliError::Engine(other),
    }
}
