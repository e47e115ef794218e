//! `cairn dump`, `restore`, `export`, `import`: moving data in and out of a store
//! through `cairn::transfer`. Progress bars go to standard error when it is a terminal.
//!
//! A restore that fails leaves no store it created behind ([`Created`]): it removes the
//! store directory (and the directories above it) it created, or the files it put into
//! an empty directory; a directory that held anything before is never touched.

use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use cairn::hash::{IndexOptions, LogOptions, LogReader};
use cairn::transfer::{self, ExportOptions, Format, ImportOptions, Progress, RestoreOptions};
use clap::ValueEnum;
use serde_json::json;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;
use crate::progress;
use crate::sparkey::options::{self, CompressionArg, HashSizeArg};

use super::{close, existing_keyspace, open, open_read, output_error, print_json, KeyspaceArg};

/// `--format jsonl|cbor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One JSON object per line.
    Jsonl,
    /// A CBOR sequence with a header and a checksummed trailer.
    Cbor,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Jsonl => Format::Jsonl,
            FormatArg::Cbor => Format::Cbor,
        }
    }
}

/// Write every entry of a snapshot to standard output (JSON lines or CBOR)
///
/// Without --keyspace, every keyspace is dumped (entries of keyspaces other than
/// `default` carry a "keyspace" field); with --keyspace, only that one, without the field
/// (so it restores into any keyspace). The dump is of one snapshot: writes made while it
/// runs are not in it. Formats: crates/engine/src/transfer/FORMAT.md.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DumpArgs {
    /// The store directory.
    store: PathBuf,
    /// Dump only this keyspace [default: every keyspace].
    #[arg(long, value_name = "KS")]
    keyspace: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Jsonl)]
    format: FormatArg,
}

pub fn dump(args: &DumpArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    if let Some(name) = &args.keyspace {
        existing_keyspace(&db, name)?;
    }
    let snapshot = db.snapshot();
    let bar = progress::bytes(None, "dump");
    transfer::dump(
        &db,
        &snapshot,
        args.keyspace.as_deref(),
        args.format.into(),
        out,
        &mut |p| bar.set_position(p.bytes),
    )
    .map_err(output_error)?;
    bar.finish_and_clear();
    Ok(EXIT_OK)
}

/// Read a dump from standard input into the store (created if missing)
///
/// Entries without a "keyspace" field go to --keyspace (default `default`); others to
/// the keyspace they name, created if missing (separating large values into the value
/// log if the dumped keyspace did). Existing keys are overwritten, other keys kept.
/// The whole input is checked (for CBOR, also its trailer's count and checksum) before
/// anything is written, in a temporary copy in $TMPDIR (or /tmp): bad input writes
/// nothing and exits 1 with an error naming the line (JSON lines) or record (CBOR). A
/// store the command created is removed again when it fails. Everything restored is
/// durable when the command returns. A store is created only in a new or empty
/// directory: one holding other files and no store is refused (exit 1).
/// Prints the number of entries restored; with --json, one object: entries and
/// input_bytes.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct RestoreArgs {
    /// The store directory.
    store: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// Input format.
    #[arg(long, value_enum, default_value_t = FormatArg::Jsonl)]
    format: FormatArg,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn restore(args: &RestoreArgs, out: &mut dyn Write) -> CliResult<u8> {
    let created = Created::before_open(&args.store);
    let done = match restore_into(args) {
        Ok(done) => done,
        Err(e) => {
            created.remove();
            return Err(e);
        }
    };
    if args.json {
        print_json(
            out,
            json!({"entries": done.entries, "input_bytes": done.bytes}),
        )?;
    } else {
        writeln!(out, "restored {}", count(done.entries, "entry", "entries"))
            .map_err(CliError::Output)?;
    }
    Ok(EXIT_OK)
}

/// Opens (or creates) the store, restores standard input into it and closes it; the store
/// is closed whatever the outcome.
fn restore_into(args: &RestoreArgs) -> CliResult<Progress> {
    let db = open(&args.store, true)?;
    let stdin = io::stdin();
    let input = BufReader::with_capacity(1 << 16, stdin.lock());
    let options = RestoreOptions::default().keyspace(&args.ks.keyspace);
    let bar = progress::bytes(None, "restore");
    let done = transfer::restore(&db, input, args.format.into(), &options, &mut |p| {
        bar.set_position(p.bytes)
    })?;
    bar.finish_and_clear();
    close(db)?;
    Ok(done)
}

/// What opening a store at a path is about to create there, so that a failed restore can
/// remove it again, and nothing else.
#[derive(Debug)]
enum Created {
    /// The path holds something already (a store, other files, a file, a symbolic
    /// link): nothing is removed.
    Nothing,
    /// The path is an empty directory: the entries found in it later are the store's.
    EmptyDir(PathBuf),
    /// The path does not exist: the store directory, then each missing directory above
    /// it, innermost first.
    Dirs(Vec<PathBuf>),
}

impl Created {
    /// Looks at `store` before it is opened.
    fn before_open(store: &Path) -> Created {
        match std::fs::symlink_metadata(store) {
            Ok(meta) if meta.is_dir() => {
                if std::fs::read_dir(store).is_ok_and(|mut entries| entries.next().is_none()) {
                    Created::EmptyDir(store.to_path_buf())
                } else {
                    Created::Nothing
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut dirs = vec![store.to_path_buf()];
                let mut up = store.parent();
                while let Some(dir) = up.filter(|d| !d.as_os_str().is_empty()) {
                    if std::fs::symlink_metadata(dir).is_ok() {
                        break;
                    }
                    dirs.push(dir.to_path_buf());
                    up = dir.parent();
                }
                Created::Dirs(dirs)
            }
            _ => Created::Nothing,
        }
    }

    /// Removes what was created (the store must be closed). A directory above the store
    /// is removed only if empty; failures are reported on standard error, not fatal.
    fn remove(&self) {
        let warn = |path: &Path, e: io::Error| {
            eprintln!(
                "cairn: could not remove {} (created by this restore): {e}",
                path.display()
            );
        };
        match self {
            Created::Nothing => {}
            Created::EmptyDir(dir) => {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    return;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    let removed = match entry.file_type() {
                        Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                        _ => std::fs::remove_file(&path),
                    };
                    if let Err(e) = removed {
                        warn(&path, e);
                    }
                }
            }
            Created::Dirs(dirs) => {
                let mut dirs = dirs.iter();
                if let Some(store) = dirs.next() {
                    match std::fs::remove_dir_all(store) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => return warn(store, e),
                    }
                }
                for dir in dirs {
                    if std::fs::remove_dir(dir).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Write a snapshot of a keyspace as a constant-store pair (OUT.spl and OUT.spi)
///
/// The files are written under temporary names and renamed into place only when both
/// are complete and synced; existing files of those names are replaced. Keys and values
/// only (Sparkey files carry no attributes). Read the result with `cairn sparkey get`.
/// With --json, one object: keyspace, entries, bytes (of keys and values), log, index.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// The store directory.
    store: PathBuf,
    /// The log to write (must end with .spl); the index goes to the same name with .spi.
    #[arg(value_name = "OUT.spl")]
    output: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// Compression of the log.
    #[arg(short = 'c', long = "compression", value_enum, default_value_t = CompressionArg::None)]
    compression: CompressionArg,
    /// Compression block size in bytes, 16 ..= 2^30 (ignored when uncompressed).
    #[arg(short = 'b', long = "block-size", value_name = "N",
          value_parser = options::parse_block_size,
          default_value_t = options::DEFAULT_BLOCK_SIZE, allow_negative_numbers = true)]
    block_size: u32,
    /// Hash width of the index.
    #[arg(long, value_enum, default_value_t = HashSizeArg::Auto)]
    hash_size: HashSizeArg,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn export(args: &ExportArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open_read(&args.store)?;
    existing_keyspace(&db, &args.ks.keyspace)?;
    let options = ExportOptions::default()
        .log(LogOptions::default().compression(args.compression.into(), args.block_size))
        .index(IndexOptions::default().hash_size(args.hash_size.into()));
    let snapshot = db.snapshot();
    let bar = progress::bytes(None, "export");
    let done = transfer::export(
        &db,
        &args.ks.keyspace,
        &snapshot,
        &args.output,
        &options,
        &mut |p| bar.set_position(p.bytes),
    )?;
    bar.finish_and_clear();
    if args.json {
        let index = cairn::hash::index_path_for(&args.output).map(|p| p.display().to_string());
        print_json(
            out,
            json!({
                "keyspace": args.ks.keyspace,
                "entries": done.entries,
                "bytes": done.bytes,
                "log": args.output.display().to_string(),
                "index": index,
            }),
        )?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "exported {} to {}",
        count(done.entries, "entry", "entries"),
        args.output.display()
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Apply a constant-store log (every PUT and DELETE, in order) to a keyspace
///
/// The store (in a new or empty directory only) and the keyspace are created if missing.
/// Keys the log never mentions are
/// kept. With --index, the index must belong to the log (checked before anything is
/// written). Everything imported is durable when the command returns.
/// With --json, one object: keyspace, puts, deletes, bytes (of keys and values applied).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ImportArgs {
    /// The log to read (`x.spl`).
    #[arg(value_name = "IN.spl")]
    input: PathBuf,
    /// The store directory.
    store: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// The log's index, checked to belong to it.
    #[arg(long, value_name = "FILE.spi")]
    index: Option<PathBuf>,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn import(args: &ImportArgs, out: &mut dyn Write) -> CliResult<u8> {
    let header = LogReader::open(&args.input)?.header().clone();
    let db = open(&args.store, true)?;
    let mut options = ImportOptions::default().keyspace(&args.ks.keyspace);
    if let Some(index) = &args.index {
        options = options.index(index);
    }
    let bar = progress::items(header.num_puts + header.num_deletes, "import");
    let stats = transfer::import(&db, &args.input, &options, &mut |p| {
        bar.set_position(p.entries)
    })?;
    bar.finish_and_clear();
    close(db)?;
    if args.json {
        print_json(
            out,
            json!({
                "keyspace": args.ks.keyspace,
                "puts": stats.puts,
                "deletes": stats.deletes,
                "bytes": stats.bytes,
            }),
        )?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "imported {} and {} into keyspace {:?}",
        count(stats.puts, "put", "puts"),
        count(stats.deletes, "delete", "deletes"),
        args.ks.keyspace
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
