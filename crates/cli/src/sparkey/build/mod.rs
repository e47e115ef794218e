//! `cairn sparkey build`: build a log and its index from TSV, JSON lines or CSV input.
//!
//! The pair is written under temporary names in the output's directory and renamed into
//! place only when both are complete (see `staged`), so bad input or a failure half-way
//! leaves no partial `out.spl`/`out.spi` behind.

mod input;

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter};

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;
use crate::progress;

use super::options::{self, CompressionArg, HashSizeArg};
use super::staged::StagedPair;
use input::{Format, Record};

/// Build a log (OUT.spl) and its index (OUT.spi) from TSV, JSON lines or CSV
///
/// Input formats (--format; by default from the input's extension: .csv → csv,
/// .jsonl/.ndjson/.json → jsonl, anything else and `-` (standard input) → tsv):
///
///   tsv    `key<TAB>value<LF>` per line. Raw bytes: the line is split at the FIRST TAB
///          (the value may contain TABs; the key cannot); only the LF is removed, so a CR
///          stays in the value. A final line without LF counts. Keys and values cannot
///          contain LF. Only PUTs.
///
///   jsonl  one JSON object per line: {"key": "k", "value": "v"} puts, {"key": "k",
///          "delete": true} deletes. Strings are stored as their UTF-8 bytes; a key or
///          value that is not valid UTF-8 is given as "key_b64" / "value_b64" instead,
///          in standard base64 (RFC 4648, with padding). Blank lines are skipped; unknown
///          fields are an error.
///
///   csv    two columns key,value per record, RFC 4180 quoting ("..." with "" for a
///          quote), so any bytes, commas, CR and LF included, can be stored. No header
///          row (a first line key,value would be stored as a PUT). Blank lines are
///          skipped. Only PUTs.
///
/// Later lines win: a key written twice keeps its last value, a delete removes it. A bad
/// line stops the build with an error naming the line number (exit 1) and nothing is
/// left at the output names. A progress bar on standard error (only when it is a
/// terminal) shows the input bytes consumed; at the end one summary line is printed.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Input format [default: from the input's extension, else tsv].
    #[arg(long, value_enum)]
    format: Option<Format>,
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
    /// The input file, or `-` for standard input.
    #[arg(value_name = "INPUT|-")]
    input: PathBuf,
    /// The log to write (must end with .spl); the index goes to the same name with .spi.
    #[arg(value_name = "OUT.spl")]
    output: PathBuf,
}

#[derive(Debug, Default)]
struct Counts {
    puts: u64,
    deletes: u64,
}

fn open_input(path: &Path) -> CliResult<(Box<dyn Read>, Option<u64>, String)> {
    if path.as_os_str() == "-" {
        return Ok((
            Box::new(io::stdin().lock()),
            None,
            "standard input".to_string(),
        ));
    }
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| CliError::msg(format!("open {name} failed: {e}")))?;
    let len = file.metadata().ok().map(|m| m.len());
    Ok((Box::new(file), len, name))
}

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let format = args.format.unwrap_or_else(|| Format::infer(&args.input));
    let staged = StagedPair::new(&args.output)?;
    let (reader, total, name) = open_input(&args.input)?;
    let start = Instant::now();

    let options = LogOptions::default().compression(args.compression.into(), args.block_size);
    let mut writer = LogWriter::create(staged.tmp_log(), &options)?;
    let bar = progress::bytes(total, "reading input");
    let mut counts = Counts::default();
    let read = input::read_records(format, bar.wrap_read(reader), &name, |record| {
        match record {
            Record::Put(key, value) => {
                writer.put(key, value)?;
                counts.puts += 1;
            }
            Record::Delete(key) => {
                writer.delete(key)?;
                counts.deletes += 1;
            }
        }
        Ok(())
    });
    let input_bytes = bar.position();
    bar.finish_and_clear();
    read?;
    writer.close()?;

    let index_options = IndexOptions::default()
        .hash_size(args.hash_size.into())
        .fresh(true);
    let (_, index) = write_index(staged.tmp_index(), staged.tmp_log(), &index_options)?;
    let log_len = file_len(staged.tmp_log());
    let index_len = file_len(staged.tmp_index());
    let (log_name, index_name) = (
        staged.log().display().to_string(),
        staged.index().display().to_string(),
    );
    staged.commit()?;

    let seconds = start.elapsed().as_secs_f64();
    let rate = if seconds > 0.0 {
        counts.puts as f64 / seconds
    } else {
        0.0
    };
    writeln!(
        out,
        "built {log_name} ({log_len} bytes) and {index_name} ({index_len} bytes): \
         {entries} ({puts}, {deletes}, {live}) \
         from {input_bytes} input bytes in {seconds:.3} s, {rate:.0} puts/s",
        entries = count(counts.puts + counts.deletes, "entry", "entries"),
        puts = count(counts.puts, "put", "puts"),
        deletes = count(counts.deletes, "delete", "deletes"),
        live = count(index.num_entries, "live key", "live keys"),
    )
    .map_err(CliError::Output)?;
    Ok(EXIT_OK)
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}
