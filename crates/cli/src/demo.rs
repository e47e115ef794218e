//! `cairn demo`: build a constant store, look every key up two ways, report how fast.
//!
//! This is the project's "run the main job" command until the load tester exists: it
//! exercises the write path (`LogWriter` + `write_index`) and both read paths
//! (`Reader::get_into` one key at a time, `Reader::get_many` in batches), checking every
//! value it reads, so a wrong answer fails the demo (exit 1) rather than skewing a number.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader};
use cairn_harness::Rng;

use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::plural::count;
use crate::progress;
use crate::sparkey::options::CompressionArg;

/// Keys per `get_many` call.
const BATCH: usize = 1024;

/// Build a constant store of N entries `key_<i>` → `value_<i>`, then look keys up
///
/// Writes N entries with the log writer and indexes them, then does random lookups one at
/// a time (`get_into`, reusing one buffer) and the same keys again in batches of 1024
/// (`get_many`), checking every value. Prints entries, file sizes, build time and puts/s,
/// lookups/s for both modes, and where the files were. Files go to a fresh temporary
/// directory that is removed at the end, unless --dir is given (they are kept there).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DemoArgs {
    /// Number of entries to write.
    #[arg(long, default_value_t = 1_000_000)]
    entries: u64,
    /// Number of random lookups (done once per mode).
    #[arg(long, default_value_t = 1_000_000)]
    lookups: u64,
    /// Compression of the log (compressed logs use 4096-byte blocks).
    #[arg(long, value_enum, default_value_t = CompressionArg::None)]
    compression: CompressionArg,
    /// Write the files (demo.spl, demo.spi) into this directory and keep them.
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
}

/// Writes `key_<i>` / `value_<i>` into `buf` (cleared first).
fn fill(buf: &mut Vec<u8>, prefix: &[u8], i: u64) {
    buf.clear();
    buf.extend_from_slice(prefix);
    let mut digits = [0u8; 20];
    let mut n = i;
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(digits.get(at..).unwrap_or_default());
}

/// `count` per second over `time`, e.g. `3.09 M puts/s`.
fn per_second(count: u64, time: Duration, what: &str) -> String {
    let secs = time.as_secs_f64();
    if secs <= 0.0 {
        return format!("- {what}/s");
    }
    let rate = count as f64 / secs;
    if rate >= 1e6 {
        format!("{:.2} M {what}/s", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1} k {what}/s", rate / 1e3)
    } else {
        format!("{rate:.0} {what}/s")
    }
}

fn mib(bytes: u64) -> String {
    format!(
        "{:.1} MiB ({bytes} bytes)",
        bytes as f64 / (1024.0 * 1024.0)
    )
}

fn file_len(path: &Path) -> CliResult<u64> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| CliError::msg(format!("stat {} failed: {e}", path.display())))
}

fn mismatch(i: u64, mode: &str) -> CliError {
    CliError::msg(format!(
        "demo: {mode} lookup of key_{i} did not return value_{i}"
    ))
}

pub fn run(args: &DemoArgs, out: &mut dyn Write) -> CliResult<u8> {
    if args.entries == 0 && args.lookups > 0 {
        return Err(CliError::msg(
            "demo: --lookups needs --entries of at least 1",
        ));
    }
    let temp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::msg(format!("create {} failed: {e}", d.display())))?;
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("cairn-demo-")
                .tempdir()
                .map_err(|e| {
                    CliError::msg(format!("creating a temporary directory failed: {e}"))
                })?;
            temp.path().to_path_buf()
        }
    };
    let log_path = dir.join("demo.spl");
    let index_path = dir.join("demo.spi");
    let say = |out: &mut dyn Write, text: String| writeln!(out, "{text}").map_err(CliError::Output);

    say(
        out,
        format!(
            "cairn demo: constant store (Sparkey format), {} key_<i> -> value_<i>, compression {}",
            count(args.entries, "entry", "entries"),
            args.compression.name()
        ),
    )?;
    out.flush().map_err(CliError::Output)?;

    // 1. Build.
    let start = Instant::now();
    let options = LogOptions::default().compression(args.compression.into(), 4096);
    let mut writer = LogWriter::create(&log_path, &options)?;
    let bar = progress::items(args.entries, "writing");
    let (mut key, mut value) = (Vec::with_capacity(32), Vec::with_capacity(32));
    for i in 0..args.entries {
        fill(&mut key, b"key_", i);
        fill(&mut value, b"value_", i);
        writer.put(&key, &value)?;
        if i.is_multiple_of(8192) {
            bar.set_position(i);
        }
    }
    bar.finish_and_clear();
    writer.close()?;
    let log_time = start.elapsed();
    write_index(&index_path, &log_path, &IndexOptions::default())?;
    let build_time = start.elapsed();
    let (log_len, index_len) = (file_len(&log_path)?, file_len(&index_path)?);
    say(
        out,
        format!(
            "  build:    {} in {:.3} s ({}; log {:.3} s, index {:.3} s)",
            count(args.entries, "put", "puts"),
            build_time.as_secs_f64(),
            per_second(args.entries, build_time, "puts"),
            log_time.as_secs_f64(),
            (build_time - log_time).as_secs_f64(),
        ),
    )?;
    say(out, format!("  log:      {}", mib(log_len)))?;
    say(out, format!("  index:    {}", mib(index_len)))?;
    out.flush().map_err(CliError::Output)?;

    // 2. Lookups: the same random keys, one at a time and in batches.
    let reader = Reader::open_with(&index_path, &log_path, &ReadOptions::default())?;
    let mut rng = Rng::from_state(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5EED, |d| d.as_nanos() as u64),
    );
    let picks: Vec<u64> = (0..args.lookups)
        .map(|_| rng.next_u64() % args.entries.max(1))
        .collect();

    let start = Instant::now();
    let mut found = Vec::new();
    for &i in &picks {
        fill(&mut key, b"key_", i);
        fill(&mut value, b"value_", i);
        if !reader.get_into(&key, &mut found)? || found != value {
            return Err(mismatch(i, "get_into"));
        }
    }
    let single_time = start.elapsed();
    say(
        out,
        format!(
            "  get_into: {} in {:.3} s ({}), every value checked",
            count(picks.len(), "random lookup", "random lookups"),
            single_time.as_secs_f64(),
            per_second(picks.len() as u64, single_time, "lookups"),
        ),
    )?;

    let start = Instant::now();
    let mut keys: Vec<Vec<u8>> = (0..BATCH).map(|_| Vec::with_capacity(32)).collect();
    let mut bad: Option<u64> = None;
    for batch in picks.chunks(BATCH) {
        for (k, &i) in keys.iter_mut().zip(batch) {
            fill(k, b"key_", i);
        }
        let slice = keys.get(..batch.len()).unwrap_or_default();
        reader.get_many(slice, |j, v| {
            let Some(&i) = batch.get(j) else { return };
            fill(&mut value, b"value_", i);
            if v != Some(value.as_slice()) && bad.is_none() {
                bad = Some(i);
            }
        })?;
        if let Some(i) = bad {
            return Err(mismatch(i, "get_many"));
        }
    }
    let batch_time = start.elapsed();
    say(
        out,
        format!(
            "  get_many: {} in batches of {BATCH} in {:.3} s ({}), every value checked",
            count(picks.len(), "random lookup", "random lookups"),
            batch_time.as_secs_f64(),
            per_second(picks.len() as u64, batch_time, "lookups"),
        ),
    )?;
    drop(reader);

    let place = if args.dir.is_some() {
        format!("{} and {} (kept)", log_path.display(), index_path.display())
    } else {
        format!(
            "{} and {} (temporary directory, removed)",
            log_path.display(),
            index_path.display()
        )
    };
    say(out, format!("  files:    {place}"))?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_formats_decimal() {
        let mut buf = Vec::new();
        fill(&mut buf, b"key_", 0);
        assert_eq!(buf, b"key_0");
        fill(&mut buf, b"value_", 1_234_567);
        assert_eq!(buf, b"value_1234567");
        fill(&mut buf, b"", u64::MAX);
        assert_eq!(buf, u64::MAX.to_string().as_bytes());
    }
}
