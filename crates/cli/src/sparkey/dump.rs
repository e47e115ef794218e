//! `cairn sparkey dump`: print every live entry of a pair, or every entry of a log, in hex.

use std::io::Write;
use std::path::PathBuf;

use cairn::hash::{EntryKind, LogReader, Reader};

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::hexfmt::push_hex;

use super::names;

/// Print entries as lowercase hex, one per line
///
/// `dump FILE.spi`: every live entry, in the order the hash iterator yields them (the log
/// order of each key's surviving PUT), as `hex(key)<TAB>hex(value)`.
/// `dump --log FILE.spl`: every log entry in file order (overwritten and deleted ones
/// included), as `PUT<TAB>hex(key)<TAB>hex(value)` or `DELETE<TAB>hex(key)`.
///
/// An empty key or value is an empty field. This is the format of the test vectors'
/// `.expected` and `.log.expected` files. Not in the reference tool.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Dump the log itself (every PUT and DELETE) instead of the live entries of a pair.
    #[arg(long)]
    log: bool,
    /// The index (`x.spi`, with its log `x.spl`), or with --log the log file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let mut line = Vec::with_capacity(1024);
    let mut emit = |line: &[u8]| out.write_all(line).map_err(CliError::Output);
    if args.log {
        let log = LogReader::open(&args.file)?;
        for entry in log.iter() {
            let entry = entry?;
            line.clear();
            match entry.kind {
                EntryKind::Put => {
                    line.extend_from_slice(b"PUT\t");
                    push_hex(&mut line, &entry.key);
                    line.push(b'\t');
                    push_hex(&mut line, &entry.value);
                }
                EntryKind::Delete => {
                    line.extend_from_slice(b"DELETE\t");
                    push_hex(&mut line, &entry.key);
                }
            }
            line.push(b'\n');
            emit(&line)?;
        }
    } else {
        let log = names::log_for_index(&args.file)
            .ok_or_else(|| CliError::msg("index filename must end with .spi"))?;
        let reader = Reader::open(&args.file, &log)?;
        for item in reader.iter() {
            let (key, value) = item?;
            line.clear();
            push_hex(&mut line, &key);
            line.push(b'\t');
            push_hex(&mut line, &value);
            line.push(b'\n');
            emit(&line)?;
        }
    }
    Ok(EXIT_OK)
}
