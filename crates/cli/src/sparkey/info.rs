//! `cairn sparkey info`: print the header of log and index files in the reference format.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cairn::hash::raw::{IndexHeader, LogHeader, INDEX_HEADER_LEN};

use crate::errors::{CliError, CliResult, EXIT_ERROR, EXIT_OK};

use super::names;
use super::returncode;

/// Show the header of log (.spl) and index (.spi) files
///
/// Each file is tried as a log, then as an index (by its magic number), and described from
/// its own header only (an index's log is not opened). The report goes to standard
/// output, one block per file followed by an empty line, in exactly the reference
/// `sparkey info` format:
///
///   Filename: <name>
///   Log file version 1.0
///   Identifier: <file identifier, %08x>
///   Puts: <n>, Deletes: <n>
///   Max key size: <n>, Max value size: <n>
///   Compression: <Uncompressed|Snappy|Zstd>, block size: <n>
///
///   Filename: <name>
///   Hash file version 1.1
///   Identifier: <file identifier, %08x>
///   Max key size: <n>, Max value size: <n>
///   Hash size: <32|64> bit Murmurhash3
///   Num entries: <n>, Capacity: <n>
///   Num collisions: <n>, Max displacement: <n>, Average displacement: <%.2f, -nan if empty>
///   Data size: <n>, Garbage size: <n>
///
/// A file that cannot be described gives `<file>: <reason>` on standard error, with the
/// reference's texts (`File not found`, `Encountered unexpected end of file`, ...) or
/// `<file>: Not a sparkey file.` when neither magic number matches.
///
/// Exit status: 0 if every file was described, else 1.
///
/// Deviation from the reference: an index shorter than its slot table, and a compressed
/// log whose block size is 0 or above 2^30, are reported (`Corrupt hash file - smaller
/// than the header indicates`, `Log header is corrupt`); the reference describes them.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Log or index files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let mut status = EXIT_OK;
    for file in &args.files {
        match describe(file, out) {
            Ok(()) => {}
            Err(Failure::Output(e)) => return Err(CliError::Output(e)),
            Err(Failure::File(reason)) => {
                // Keep stdout and stderr in order when both go to one terminal.
                out.flush().map_err(CliError::Output)?;
                let mut err = io::stderr().lock();
                let _ = err.write_all(names::raw(file));
                let _ = writeln!(err, ": {reason}");
                status = EXIT_ERROR;
            }
        }
    }
    Ok(status)
}

enum Failure {
    /// The file could not be described; the text to print after its name.
    File(&'static str),
    /// Writing the report failed.
    Output(io::Error),
}

fn describe(path: &Path, out: &mut dyn Write) -> Result<(), Failure> {
    let (head, file_len) =
        read_head(path).map_err(|(e, op)| Failure::File(returncode::of_io(&e, op).errstring()))?;
    let file_err = |e: cairn::Error| Failure::File(returncode::of_error(&e).errstring());
    match LogHeader::decode(path, &head, file_len) {
        Ok(h) => return print_log(out, path, &h).map_err(Failure::Output),
        Err(e) if !returncode::is_bad_magic(&e) => return Err(file_err(e)),
        Err(_) => {}
    }
    match IndexHeader::decode(path, &head, file_len) {
        Ok(h) => print_index(out, path, &h).map_err(Failure::Output),
        Err(e) if !returncode::is_bad_magic(&e) => Err(file_err(e)),
        Err(_) => Err(Failure::File("Not a sparkey file.")),
    }
}

/// The first bytes of the file (enough for either header) and its length.
fn read_head(path: &Path) -> Result<(Vec<u8>, u64), (io::Error, &'static str)> {
    let file = File::open(path).map_err(|e| (e, "open"))?;
    let len = file.metadata().map_err(|e| (e, "stat"))?.len();
    let mut head = Vec::with_capacity(INDEX_HEADER_LEN as usize);
    file.take(INDEX_HEADER_LEN)
        .read_to_end(&mut head)
        .map_err(|e| (e, "read"))?;
    Ok((head, len))
}

fn print_log(out: &mut dyn Write, path: &Path, h: &LogHeader) -> io::Result<()> {
    out.write_all(b"Filename: ")?;
    out.write_all(names::raw(path))?;
    writeln!(out)?;
    writeln!(out, "Log file version {}.{}", h.major, h.minor)?;
    writeln!(out, "Identifier: {:08x}", h.file_identifier)?;
    writeln!(out, "Puts: {}, Deletes: {}", h.num_puts, h.num_deletes)?;
    writeln!(
        out,
        "Max key size: {}, Max value size: {}",
        h.max_key_len, h.max_value_len
    )?;
    writeln!(
        out,
        "Compression: {}, block size: {}",
        h.compression.display_name(),
        h.block_size
    )?;
    writeln!(out)
}

/// `%.2f` of the average displacement as glibc prints it; 0/0 is `-nan` there.
fn average_displacement(h: &IndexHeader) -> String {
    if h.num_entries == 0 {
        "-nan".to_string()
    } else {
        // Rust, like glibc, rounds the exact binary value half to even.
        format!("{:.2}", h.total_displacement as f64 / h.num_entries as f64)
    }
}

fn print_index(out: &mut dyn Write, path: &Path, h: &IndexHeader) -> io::Result<()> {
    out.write_all(b"Filename: ")?;
    out.write_all(names::raw(path))?;
    writeln!(out)?;
    writeln!(out, "Hash file version {}.{}", h.major, h.minor)?;
    writeln!(out, "Identifier: {:08x}", h.file_identifier)?;
    writeln!(
        out,
        "Max key size: {}, Max value size: {}",
        h.max_key_len, h.max_value_len
    )?;
    writeln!(out, "Hash size: {} bit Murmurhash3", 8 * h.hash_size)?;
    writeln!(
        out,
        "Num entries: {}, Capacity: {}",
        h.num_entries, h.hash_capacity
    )?;
    writeln!(
        out,
        "Num collisions: {}, Max displacement: {}, Average displacement: {}",
        h.hash_collisions,
        h.max_displacement,
        average_displacement(h)
    )?;
    writeln!(
        out,
        "Data size: {}, Garbage size: {}",
        h.data_end, h.garbage_size
    )?;
    writeln!(out)
}
