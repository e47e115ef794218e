//! `cairn sparkey appendlog`: append PUTs read from standard input to a log.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use cairn::hash::LogWriter;

use crate::errors::{CliError, CliResult, EXIT_OK};

/// Append PUTs from standard input to an existing log, one per line: key<C>value<LF>
///
/// The delimiter C is a TAB unless `-d` gives another single byte. Keys and values are raw
/// bytes; only the final LF is removed (a CR before it stays in the value). A line without
/// the delimiter (an empty line included) stops the command with `Cannot split input line,
/// aborting early.` and exit status 1; the lines before it are kept (the log is flushed and
/// closed). The index is not updated: run `writehash` afterwards.
///
/// Deviations from the reference (its `strtok` quirks are fixed): the line is split at the
/// FIRST delimiter, so an empty key (line starting with the delimiter) and an empty value
/// (line ending with it) are allowed; later delimiters belong to the value; a final line
/// without LF is applied instead of silently dropped; keys and values may contain NUL.
/// Errors print the engine's message; a damaged log exits 3 instead of 1.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Delimiter between key and value: exactly one character (byte).
    #[arg(short = 'd', value_name = "C", value_parser = parse_delimiter, default_value = "\t",
          hide_default_value = true)]
    delimiter: u8,
    /// The log file to append to.
    #[arg(value_name = "FILE.spl")]
    log: PathBuf,
}

fn parse_delimiter(text: &str) -> Result<u8, String> {
    match text.as_bytes() {
        [b] => Ok(*b),
        _ => Err(format!("delimiter must be one character, but was '{text}'")),
    }
}

pub fn run(args: &Args, _out: &mut dyn Write) -> CliResult<u8> {
    let mut writer = LogWriter::append(&args.log)?;
    let appended = append_lines(&mut writer, io::stdin().lock(), args.delimiter);
    // Close (flush the last block, rewrite the header) even after a bad line, so the lines
    // before it are kept.
    let closed = writer.close();
    appended?;
    closed?;
    Ok(EXIT_OK)
}

fn append_lines(writer: &mut LogWriter, mut input: impl BufRead, delimiter: u8) -> CliResult<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| CliError::msg(format!("reading standard input failed: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let at = body
            .iter()
            .position(|&b| b == delimiter)
            .ok_or_else(|| CliError::msg("Cannot split input line, aborting early."))?;
        let (key, rest) = body.split_at(at);
        let value = rest.get(1..).unwrap_or_default();
        writer.put(key, value).map_err(|e| {
            CliError::msg(format!(
                "Cannot append line to log file, aborting early: {e}"
            ))
        })?;
    }
}
