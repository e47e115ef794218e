//! `cairn dump`, `restore`, `export`, `import`: moving data in and out of a store
//! through `cairn::transfer`. Progress bars go to standard error when it is a terminal.

use std::io::{self, BufReader, Write};
use std::path::PathBuf;

use cairn::hash::{IndexOptions, LogOptions, LogReader};
use cairn::transfer::{self, ExportOptions, Format, ImportOptions, RestoreOptions};
use clap::ValueEnum;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::progress;
use crate::sparkey::options::{self, CompressionArg, HashSizeArg};

use super::{close, existing_keyspace, open, output_error, KeyspaceArg};

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
    let db = open(&args.store, false)?;
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
/// the keyspace they name, created if missing. Existing keys are overwritten, other keys
/// kept. Bad input stops the restore with an error naming the line (JSON lines) or
/// record (CBOR) and exit 1; the batches committed before it stay. Everything restored
/// is durable when the command returns.
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
}

pub fn restore(args: &RestoreArgs, out: &mut dyn Write) -> CliResult<u8> {
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
    writeln!(out, "restored {} entries", done.entries).map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Write a snapshot of a keyspace as a constant-store pair (OUT.spl and OUT.spi)
///
/// The files are written under temporary names and renamed into place only when both
/// are complete and synced; existing files of those names are replaced. Keys and values
/// only (Sparkey files carry no attributes). Read the result with `cairn sparkey get`.
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
}

pub fn export(args: &ExportArgs, out: &mut dyn Write) -> CliResult<u8> {
    let db = open(&args.store, false)?;
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
    writeln!(
        out,
        "exported {} entries to {}",
        done.entries,
        args.output.display()
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

/// Apply a constant-store log (every PUT and DELETE, in order) to a keyspace
///
/// The store and the keyspace are created if missing. Keys the log never mentions are
/// kept. With --index, the index must belong to the log (checked before anything is
/// written). Everything imported is durable when the command returns.
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
    writeln!(
        out,
        "imported {} puts and {} deletes into keyspace {:?}",
        stats.puts, stats.deletes, args.ks.keyspace
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}
