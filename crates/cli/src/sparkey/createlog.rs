//! `cairn sparkey createlog`: create an empty log.

use std::io::Write;
use std::path::PathBuf;

use cairn::hash::{LogOptions, LogWriter};

use crate::errors::{CliResult, EXIT_OK};

use super::options::{self, CompressionArg};

/// Create an empty log file, replacing any file of that name
///
/// Like the reference: any file name is accepted; `-b` is checked (16 ..= 2^30) even when
/// the log is uncompressed, and then ignored (stored as 0).
///
/// Deviations: `-c zstd` is accepted; the file is created under a temporary name and
/// renamed into place (the reference unlinks the old file first).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Compression of the entry stream.
    #[arg(short = 'c', value_enum, default_value_t = CompressionArg::None)]
    compression: CompressionArg,
    /// Compression block size in bytes (uncompressed bytes per block), 16 ..= 2^30.
    #[arg(short = 'b', value_name = "N", value_parser = options::parse_block_size,
          default_value_t = options::DEFAULT_BLOCK_SIZE, allow_negative_numbers = true)]
    block_size: u32,
    /// The log file to create.
    #[arg(value_name = "FILE.spl")]
    log: PathBuf,
}

pub fn run(args: &Args, _out: &mut dyn Write) -> CliResult<u8> {
    let options = LogOptions::default().compression(args.compression.into(), args.block_size);
    LogWriter::create(&args.log, &options)?.close()?;
    Ok(EXIT_OK)
}
