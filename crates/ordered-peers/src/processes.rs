//! Workloads across processes ("many processes, one store"):
//!
//! - `open-ro`: how long a fresh process takes to open a store another process wrote and
//!   closed. The store is loaded with `fillrandom` (the suite's loader), flushed and fully
//!   compacted, and closed; then every read mode of the store is opened `--open-repeats`
//!   times, each time in a fresh process: warm (the files in the page cache, as the
//!   writer left them) and cold (every file of the store dropped from the page cache
//!   first, `posix_fadvise(DONTNEED)`). A sample is the open call, then, apart, the first
//!   lookup of a random key; the row's figures are medians.
//! - `mp-readers`: `N` reader processes beside one writer process, on the same loaded
//!   store. The writer makes single puts of random keys at a steady `--mp-write-rate`
//!   (the suite's `putrandom` at a fixed pace; 0: as fast as it can); each reader opens
//!   the store once in its read mode and makes random point lookups, on one thread, for
//!   `--mp-seconds`. A follower (Cairn's `Db::open_follower`, RocksDB's secondary
//!   instance) calls [`Store::refresh`] `--refresh-ms` after its previous refresh ended,
//!   as Cairn's own refresh thread schedules them, inline, so the readers' throughput and
//!   latency include the refreshes. The row's throughput is the sum of the readers';
//!   the writer's puts are counted over the same window (from `go` to `stop`).
//!
//! Every process is this program re-executed with a role (`--role`): `load`, `open`,
//! `writer` or `reader`. A child prints its result as one JSON line on stdout; the writer
//! and the readers first print `ready` once the store is open and wait for `go` on stdin
//! (the writer then for `stop`, or the end of its stdin), so the readers read in one
//! window while the writer writes.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use cairn_harness::latency::{nanos, Lap};
use cairn_harness::{KeyFormat, ValueSource};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::data::{thread_rng, KEY_LEN};
use crate::report::Report;
use crate::row::{Labels, Row};
use crate::stores::{Config, Kind, Op, ReadMode, Store};
use crate::workload::{Outcome, Plan, Workload};

/// The workload of read-only opens.
pub const OPEN_RO: &str = "open-ro";
/// The workload of reader processes beside a writer process.
pub const MP_READERS: &str = "mp-readers";
/// Both, as `--workloads` names them.
pub const NAMES: [&str; 2] = [OPEN_RO, MP_READERS];

/// The random streams of the roles (see [`thread_rng`]): far from the ordered
/// workloads' numbers.
const STREAM_OPEN: u64 = 40;
const STREAM_WRITER: u64 = 41;
const STREAM_READER: u64 = 42;

/// The settings of the process workloads, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Keys loaded (16-byte keys `0..num`).
    pub num: u64,
    /// Bytes of every value.
    pub value_size: usize,
    /// Puts per batch of the load.
    pub batch: usize,
    /// Cache of every store that has one, MiB.
    pub cache_mb: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Cairn's memtable size, MiB, if not its default.
    pub cairn_memtable_mb: Option<usize>,
    /// Whether Cairn reads its tables through memory maps.
    pub cairn_mmap_reads: bool,
    /// Cairn's block compression, if not its default.
    pub cairn_compression: Option<cairn::Compression>,
    /// Run `open-ro`.
    pub open: bool,
    /// Run `mp-readers`.
    pub mp: bool,
    /// Opens per store, read mode and cache state.
    pub open_repeats: usize,
    /// Reader process counts of `mp-readers`.
    pub readers: Vec<usize>,
    /// Seconds every reader reads.
    pub mp_seconds: f64,
    /// Times every reader run is repeated (the row is the median).
    pub mp_rounds: usize,
    /// The writer's puts per second (0: as fast as it can).
    pub write_rate: u64,
    /// Milliseconds from the end of a follower's refresh to its next one.
    pub refresh_ms: u64,
}

impl Settings {
    fn config(&self) -> Config {
        Config {
            cache_bytes: self.cache_mb << 20,
            cairn_memtable_bytes: self.cairn_memtable_mb.map(|mb| mb << 20),
            cairn_mmap_reads: self.cairn_mmap_reads,
            cairn_compression: self.cairn_compression,
        }
    }

    /// The arguments a child process needs to rebuild these settings.
    fn child_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--num={}", self.num),
            format!("--value-size={}", self.value_size),
            format!("--batch={}", self.batch),
            format!("--cache-mb={}", self.cache_mb),
            format!("--seed={}", self.seed),
            format!("--mp-seconds={}", self.mp_seconds),
            format!("--mp-write-rate={}", self.write_rate),
            format!("--refresh-ms={}", self.refresh_ms),
        ];
        if let Some(mb) = self.cairn_memtable_mb {
            args.push(format!("--cairn-memtable-mb={mb}"));
        }
        if self.cairn_mmap_reads {
            args.push("--cairn-mmap-reads".into());
        }
        if let Some(c) = self.cairn_compression {
            args.push(format!(
                "--cairn-compression={}",
                crate::stores::compression_name(c)
            ));
        }
        args
    }
}

/// What a child process is asked to do.
#[derive(Debug, Clone)]
pub struct RoleArgs {
    /// `load`, `open`, `writer` or `reader`.
    pub role: String,
    /// The store.
    pub kind: Kind,
    /// The store's directory.
    pub dir: PathBuf,
    /// How a reader opens it.
    pub mode: ReadMode,
    /// Which reader or open this is (its random stream).
    pub index: u64,
    /// Drop the store's files from the page cache before the open.
    pub cold: bool,
}

/// The name of a store read in `mode`, in rows: the store's own name read-only, a
/// follower's name otherwise.
pub fn label(kind: Kind, mode: ReadMode) -> String {
    match (kind, mode) {
        (_, ReadMode::ReadOnly) => kind.name().to_owned(),
        (Kind::Cairn, ReadMode::Follower) => "cairn-follower".to_owned(),
        (_, ReadMode::Follower) => format!("{}-secondary", kind.name()),
    }
}

/// Runs a child's role in this process and prints its result.
pub fn child(s: &Settings, r: &RoleArgs) -> anyhow::Result<()> {
    match r.role.as_str() {
        "load" => load(s, r),
        "open" => open(s, r),
        "writer" => writer(s, r),
        "reader" => reader(s, r),
        other => bail!("unknown role {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// The parent's side.

/// Runs the selected process workloads on every store of `kinds` that has a read-only
/// open and adds the rows (and notes, and failures) to `report`. Every store is loaded
/// first, into a directory of its own; then the opens and the reader runs go round the
/// stores (every store's first open, then every store's second, ...; every store with
/// one reader, then with two, ..., `--mp-rounds` times over), so that whatever else the
/// machine does in the meantime falls on every store alike.
pub fn run(s: &Settings, kinds: &[Kind], scratch: &Path, report: &mut Report) {
    let mut loaded: Vec<(Kind, PathBuf)> = Vec::new();
    for &kind in kinds {
        let open_modes = if s.open {
            kind.read_modes()
        } else {
            Vec::new()
        };
        if s.mp && kind.shared_read_modes().is_empty() && !open_modes.is_empty() {
            report.notes.push(format!(
                "{}: no reader processes beside a writer process (mp-readers): its default \
                 ExclusiveWriter writer locks the file against read-only handles",
                kind.name()
            ));
        }
        if kind.read_modes().is_empty() {
            report.notes.push(format!(
                "{}: skipped by open-ro and mp-readers: no read-only open",
                kind.name()
            ));
            continue;
        }
        if !s.open && kind.shared_read_modes().is_empty() {
            continue;
        }
        match load_store(s, kind, scratch) {
            Ok((dir, note)) => {
                report.notes.push(note);
                loaded.push((kind, dir));
            }
            Err(e) => report.failed(format!(
                "{} (loading for open-ro / mp-readers): {e:#}",
                kind.name()
            )),
        }
    }
    if s.open {
        all_opens(s, &loaded, report);
    }
    if s.mp {
        all_readers(s, &loaded, report);
    }
    for (_, dir) in &loaded {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Loads `kind` into a fresh directory by a process of its own; returns the directory
/// and a note of what the load took.
fn load_store(s: &Settings, kind: Kind, scratch: &Path) -> anyhow::Result<(PathBuf, String)> {
    let dir = crate::fresh_dir(scratch, &format!("processes-{}", kind.name()))?;
    let loaded: Loaded = run_child(s, "load", kind, &dir, ReadMode::ReadOnly, 0, false)?;
    let note = format!(
        "{}: loaded {} keys in {:.1} s ({} puts/s, batches of {}), flushed and fully compacted in {:.1} s; {:.1} MB on disk; the machine's load average (1 min) {}",
        kind.name(),
        cairn_harness::report::thousands(s.num as f64),
        loaded.load_seconds,
        cairn_harness::report::thousands(s.num as f64 / loaded.load_seconds.max(1e-9)),
        s.batch,
        loaded.compact_seconds,
        loaded.disk_bytes as f64 / 1e6,
        load_average()
    );
    eprintln!("  {note}");
    Ok((dir, note))
}

/// One series of measurements of a store in a read mode, and its first error.
struct Series<T> {
    kind: Kind,
    mode: ReadMode,
    dir: PathBuf,
    samples: Vec<T>,
    error: Option<String>,
}

impl<T> Series<T> {
    fn new(kind: Kind, mode: ReadMode, dir: &Path) -> Series<T> {
        Series {
            kind,
            mode,
            dir: dir.to_owned(),
            samples: Vec::new(),
            error: None,
        }
    }

    /// Adds a sample, or remembers the first error (a series with one stops sampling).
    fn add(&mut self, sample: anyhow::Result<T>) {
        match sample {
            Ok(sample) => self.samples.push(sample),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(format!("{e:#}"));
                }
            }
        }
    }
}

/// `--open-repeats` opens of every store in every read mode, warm then cold, each in a
/// fresh process, round the stores: one row per store, mode and cache state.
fn all_opens(s: &Settings, loaded: &[(Kind, PathBuf)], report: &mut Report) {
    for cold in [false, true] {
        let mut series: Vec<Series<OpenSample>> = loaded
            .iter()
            .flat_map(|(kind, dir)| {
                kind.read_modes()
                    .into_iter()
                    .map(move |m| Series::new(*kind, m, dir))
            })
            .collect();
        if cold {
            crate::flush_os();
        }
        for i in 0..s.open_repeats.max(1) {
            for one in series.iter_mut().filter(|x| x.error.is_none()) {
                let sample = run_child(s, "open", one.kind, &one.dir, one.mode, i as u64, cold);
                one.add(sample);
            }
        }
        for one in series {
            let workload = if cold {
                format!("{OPEN_RO}-cold")
            } else {
                OPEN_RO.to_owned()
            };
            let row = match &one.error {
                Some(e) => Err(e.clone()),
                None => open_row(s, &one, &workload).map_err(|e| format!("{e:#}")),
            };
            match row {
                Ok(row) => report.rows.push(row),
                Err(e) => report.failed(format!("{} {workload}: {e}", label(one.kind, one.mode))),
            }
        }
    }
}

/// The reader runs of every store in every shared read mode, for every reader count,
/// `--mp-rounds` times, round the stores: one row per store, mode and reader count, the
/// round with the median reads per second (with the slowest and fastest beside it).
fn all_readers(s: &Settings, loaded: &[(Kind, PathBuf)], report: &mut Report) {
    let mut series: Vec<(usize, Series<Row>)> = Vec::new();
    for &n in &s.readers {
        for (kind, dir) in loaded {
            for mode in kind.shared_read_modes() {
                series.push((n, Series::new(*kind, mode, dir)));
            }
        }
    }
    for round in 0..s.mp_rounds.max(1) {
        eprintln!("  mp-readers round {} of {}", round + 1, s.mp_rounds.max(1));
        for (n, one) in series.iter_mut().filter(|(_, x)| x.error.is_none()) {
            crate::flush_os();
            let row = readers(s, one.kind, one.mode, *n, &one.dir);
            one.add(row);
        }
    }
    for (n, mut one) in series {
        if let Some(e) = &one.error {
            report.failed(format!(
                "{} {MP_READERS} with {n} reader(s): {e}",
                label(one.kind, one.mode)
            ));
            continue;
        }
        one.samples
            .sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
        let rounds = one.samples.len();
        let slowest = one.samples.first().map(|r| r.ops_per_sec);
        let fastest = one.samples.last().map(|r| r.ops_per_sec);
        let Some(mut row) = one.samples.get(rounds / 2).cloned() else {
            continue;
        };
        row.rounds = Some(rounds as u64);
        row.ops_per_sec_min = slowest;
        row.ops_per_sec_max = fastest;
        report.rows.push(row);
    }
}

/// A child process, killed (if still running) and reaped when dropped.
struct Kid {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    what: String,
}

impl Kid {
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        s: &Settings,
        role: &str,
        kind: Kind,
        dir: &Path,
        mode: ReadMode,
        index: u64,
        cold: bool,
    ) -> anyhow::Result<Kid> {
        let exe = std::env::current_exe().context("finding this program")?;
        let mut cmd = Command::new(exe);
        cmd.arg(format!("--worker={}", kind.name()))
            .arg(format!("--role={role}"))
            .arg(format!("--role-mode={}", mode.name()))
            .arg(format!("--role-index={index}"))
            .arg(format!("--dir={}", dir.display()))
            .args(s.child_args());
        if cold {
            cmd.arg("--role-cold");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting a {role} process"))?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .map(BufReader::new)
            .context("a child's stdout")?;
        Ok(Kid {
            child,
            stdin,
            stdout,
            what: format!("the {role} process of {}", label(kind, mode)),
        })
    }

    /// The child's next line of output, without its newline.
    fn line(&mut self) -> anyhow::Result<String> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line)?;
        if n == 0 {
            let status = self.child.wait()?;
            bail!("{} ended ({status}) without a result", self.what);
        }
        Ok(line.trim_end().to_owned())
    }

    /// Waits for the child's `ready`.
    fn ready(&mut self) -> anyhow::Result<()> {
        let line = self.line()?;
        if line != "ready" {
            bail!("{} said {line:?}, not ready", self.what);
        }
        Ok(())
    }

    /// Sends the child one line.
    fn say(&mut self, word: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("a child's stdin")?;
        writeln!(stdin, "{word}")?;
        stdin.flush()?;
        Ok(())
    }

    /// The child's result line, parsed, after which it must exit successfully.
    fn result<T: for<'de> Deserialize<'de>>(mut self) -> anyhow::Result<T> {
        let line = self.line()?;
        let value = serde_json::from_str(&line)
            .with_context(|| format!("{}'s result: {line}", self.what))?;
        self.stdin = None;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("{} failed: {status}", self.what);
        }
        Ok(value)
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Runs a child to its end and returns its result.
fn run_child<T: for<'de> Deserialize<'de>>(
    s: &Settings,
    role: &str,
    kind: Kind,
    dir: &Path,
    mode: ReadMode,
    index: u64,
    cold: bool,
) -> anyhow::Result<T> {
    Kid::spawn(s, role, kind, dir, mode, index, cold)?.result()
}

/// A row of `workload` for `kind` read in `mode` by `threads` readers.
fn make_row(
    kind: Kind,
    mode: ReadMode,
    workload: &str,
    threads: usize,
    s: &Settings,
    outcome: &Outcome,
    dir: &Path,
) -> Row {
    let labels = Labels {
        suite: if workload == MP_READERS {
            "readers"
        } else {
            "open"
        },
        store: &label(kind, mode),
        config: kind.reader_api(mode).unwrap_or(""),
        durability: kind.durability(),
        workload: workload.to_owned(),
        threads,
        num: s.num,
        value_size: s.value_size,
        batch: s.batch,
    };
    Row::new(labels, outcome, Some(crate::dir_size(dir)))
}

/// The row of a series of opens.
fn open_row(s: &Settings, one: &Series<OpenSample>, workload: &str) -> anyhow::Result<Row> {
    let mut open = histogram()?;
    let mut first_get = Vec::new();
    let mut files = Vec::new();
    let mut rss = Vec::new();
    let mut total = Duration::ZERO;
    for sample in &one.samples {
        open.saturating_record(sample.open_ns);
        total += Duration::from_nanos(sample.open_ns);
        first_get.push(sample.first_get_ns as f64 / 1e3);
        files.push(sample.files as f64);
        rss.push(sample.rss_bytes as f64 / 1e6);
    }
    let outcome = Outcome {
        ops: open.len(),
        elapsed: total,
        found: None,
        latency: open,
        write_latency: None,
    };
    let mut row = make_row(one.kind, one.mode, workload, 1, s, &outcome, &one.dir);
    row.first_get_us = Some(median(&mut first_get));
    row.files_opened = Some(median(&mut files));
    row.rss_mb = Some(median(&mut rss));
    eprintln!(
        "  {:<24} {:<13} open {:>10.2} ms (median of {}), first get {:>8.1} us, {} files, {:.1} MB",
        label(one.kind, one.mode),
        workload,
        row.p50_us / 1e3,
        row.ops,
        row.first_get_us.unwrap_or(0.0),
        row.files_opened.unwrap_or(0.0),
        row.rss_mb.unwrap_or(0.0)
    );
    Ok(row)
}

/// `n` reader processes beside one writer process: one row.
fn readers(s: &Settings, kind: Kind, mode: ReadMode, n: usize, dir: &Path) -> anyhow::Result<Row> {
    let mut writer = Kid::spawn(s, "writer", kind, dir, mode, 0, false)?;
    writer.ready()?;
    let mut kids = Vec::with_capacity(n);
    for i in 0..n {
        kids.push(Kid::spawn(s, "reader", kind, dir, mode, i as u64, false)?);
    }
    for kid in &mut kids {
        kid.ready()?;
    }
    writer.say("go")?;
    for kid in &mut kids {
        kid.say("go")?;
    }
    let mut results: Vec<ReaderDone> = Vec::with_capacity(n);
    for kid in kids {
        results.push(kid.result()?);
    }
    writer.say("stop")?;
    let wrote: WriterDone = writer.result()?;

    let mut latency = histogram()?;
    let mut ops = 0;
    let mut rate = 0.0;
    let mut longest = Duration::ZERO;
    let mut open_ns = 0.0;
    let (mut refreshes, mut refresh_ns, mut refresh_max) = (0u64, 0u64, 0u64);
    for r in &results {
        ops += r.ops;
        let elapsed = Duration::from_nanos(r.elapsed_ns);
        rate += r.ops as f64 / elapsed.as_secs_f64().max(1e-9);
        longest = longest.max(elapsed);
        open_ns += r.open_ns as f64 / n.max(1) as f64;
        refreshes += r.refreshes;
        refresh_ns += r.refresh_ns;
        refresh_max = refresh_max.max(r.refresh_max_ns);
        for &(value, count) in &r.latency {
            latency.saturating_record_n(value, count);
        }
    }
    let mut write_latency = histogram()?;
    for &(value, count) in &wrote.latency {
        write_latency.saturating_record_n(value, count);
    }
    let outcome = Outcome {
        ops,
        elapsed: longest,
        found: Some(ops),
        latency,
        write_latency: Some(write_latency),
    };
    let mut row = make_row(kind, mode, MP_READERS, n, s, &outcome, dir);
    // Readers run side by side for the same time: their rates add up.
    row.ops_per_sec = rate;
    row.mb_per_sec = rate * (KEY_LEN + s.value_size) as f64 / 1e6;
    row.writer_ops_per_sec = Some(wrote.ops as f64 / (wrote.elapsed_ns as f64 / 1e9).max(1e-9));
    row.open_us = Some(open_ns / 1e3);
    if mode == ReadMode::Follower {
        row.refreshes = Some(refreshes);
        row.refresh_mean_us = Some(refresh_ns as f64 / refreshes.max(1) as f64 / 1e3);
        row.refresh_max_us = Some(refresh_max as f64 / 1e3);
    }
    eprintln!(
        "  {:<24} {} readers {:>12.0} reads/s total, writer {:>9.0} puts/s, read p99.9 {:>8.1} us",
        label(kind, mode),
        n,
        row.ops_per_sec,
        row.writer_ops_per_sec.unwrap_or(0.0),
        row.p999_us
    );
    Ok(row)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values.get(n / 2).copied().unwrap_or(0.0),
        n => {
            let a = values.get(n / 2 - 1).copied().unwrap_or(0.0);
            let b = values.get(n / 2).copied().unwrap_or(0.0);
            (a + b) / 2.0
        }
    }
}

fn histogram() -> anyhow::Result<Histogram<u64>> {
    cairn_harness::histogram().context("creating a histogram")
}

/// A histogram as (value, count) pairs, to cross a process boundary.
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The children's side.

/// A loader's result.
#[derive(Debug, Serialize, Deserialize)]
struct Loaded {
    load_seconds: f64,
    compact_seconds: f64,
    disk_bytes: u64,
}

/// One open's result.
#[derive(Debug, Serialize, Deserialize)]
struct OpenSample {
    open_ns: u64,
    first_get_ns: u64,
    /// File descriptors the open added.
    files: u64,
    /// Resident memory the open and the first lookup added.
    rss_bytes: u64,
}

/// A reader's result.
#[derive(Debug, Serialize, Deserialize)]
struct ReaderDone {
    ops: u64,
    elapsed_ns: u64,
    open_ns: u64,
    /// Refreshes that moved the view (for a RocksDB secondary, every call).
    refreshes: u64,
    /// Their time.
    refresh_ns: u64,
    /// The longest refresh call.
    refresh_max_ns: u64,
    latency: Vec<(u64, u64)>,
}

/// The writer's result over the readers' window.
#[derive(Debug, Serialize, Deserialize)]
struct WriterDone {
    ops: u64,
    elapsed_ns: u64,
    latency: Vec<(u64, u64)>,
}

fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

fn say_ready() -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    Ok(())
}

/// Loads the store with `fillrandom` (the suite's loader, one thread), flushes and
/// compacts it fully, and closes it.
fn load(s: &Settings, r: &RoleArgs) -> anyhow::Result<()> {
    let store = r.kind.open(&r.dir, s.config())?;
    let plan = Plan {
        num: s.num,
        threads: 1,
        batch: s.batch,
        reads: s.num,
        seed: s.seed,
        settle: Duration::ZERO,
        scan_passes: 1,
        read_passes: 1,
    };
    let values = ValueSource::new(s.value_size, s.seed);
    let outcome = crate::timed(&*store, Workload::FillRandom, &plan, &values, 1, r.kind)?;
    store.settle()?;
    let start = Instant::now();
    store.compact()?;
    let compact_seconds = start.elapsed().as_secs_f64();
    drop(store);
    print_json(&Loaded {
        load_seconds: outcome.elapsed.as_secs_f64(),
        compact_seconds,
        disk_bytes: crate::dir_size(&r.dir),
    })
}

/// The key of `n` in the suite's format.
fn key(n: u64) -> [u8; KEY_LEN] {
    let mut buf = [0u8; KEY_LEN];
    KeyFormat::Decimal.fill(n, &mut buf);
    buf
}

/// Looks `k` up, which must be there with a value of the size written.
fn must_get(store: &dyn Store, k: &[u8], out: &mut Vec<u8>, size: usize) -> anyhow::Result<()> {
    if !store.get(k, out)? {
        bail!("key {} is missing", String::from_utf8_lossy(k));
    }
    if out.len() != size {
        bail!(
            "key {} read back {} bytes, {size} were written",
            String::from_utf8_lossy(k),
            out.len()
        );
    }
    Ok(())
}

/// Opens the store once in its read mode and looks one random key up.
fn open(s: &Settings, r: &RoleArgs) -> anyhow::Result<()> {
    if r.cold {
        drop_from_page_cache(&r.dir)?;
    }
    let files_before = open_files();
    let resident_before = resident_bytes();
    let start = Instant::now();
    let store = r.kind.open_reader(&r.dir, s.config(), r.mode)?;
    let opened = Instant::now();
    let mut rng = thread_rng(s.seed, STREAM_OPEN, r.index);
    let k = key(rng.below(s.num));
    let mut out = Vec::new();
    let before_get = Instant::now();
    must_get(&*store, &k, &mut out, s.value_size)?;
    let got = Instant::now();
    let files = open_files().saturating_sub(files_before);
    let sample = OpenSample {
        open_ns: nanos(start, opened),
        first_get_ns: nanos(before_get, got),
        files,
        rss_bytes: resident_bytes().saturating_sub(resident_before),
    };
    print_json(&sample)?;
    // The close that follows is not measured.
    drop(store);
    Ok(())
}

/// What the parent has told a writer so far.
const WAITING: u8 = 0;
const GO: u8 = 1;
const STOP: u8 = 2;

/// Reads the parent's `go` and `stop` from stdin into `state` (the end of stdin is a
/// stop).
fn listen(state: Arc<AtomicU8>) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            match line.as_deref().map(str::trim) {
                Ok("go") => state.store(GO, Ordering::Release),
                Ok("stop") | Err(_) => break,
                Ok(_) => {}
            }
        }
        state.store(STOP, Ordering::Release);
    });
}

/// Opens the store for writing and makes single puts of random keys at the steady
/// rate until told to stop; counts those made between `go` and `stop`, then flushes
/// (untimed), so the next run starts with nothing in the log.
fn writer(s: &Settings, r: &RoleArgs) -> anyhow::Result<()> {
    let store = r.kind.open(&r.dir, s.config())?;
    let values = ValueSource::new(s.value_size, s.seed);
    let mut values = values.cursor_at(7919);
    let mut rng = thread_rng(s.seed, STREAM_WRITER, 0);
    let state = Arc::new(AtomicU8::new(WAITING));
    listen(Arc::clone(&state));
    let mut latency = histogram()?;
    let period = (s.write_rate > 0).then(|| Duration::from_secs_f64(1.0 / s.write_rate as f64));
    let mut due = Instant::now();
    let mut counting = false;
    let mut ops = 0u64;
    let mut window = Instant::now();
    say_ready()?;
    loop {
        match state.load(Ordering::Acquire) {
            STOP => break,
            GO if !counting => {
                counting = true;
                window = Instant::now();
            }
            _ => {}
        }
        if let Some(period) = period {
            let now = Instant::now();
            if due > now + Duration::from_millis(1) {
                std::thread::sleep((due - now).min(Duration::from_millis(10)));
                continue;
            }
            // Behind by more than 100 ms (a stall): carry on from now, no burst.
            if now > due + Duration::from_millis(100) {
                due = now;
            }
            due += period;
        }
        let k = key(rng.below(s.num));
        let start = Instant::now();
        store.write(&[Op::Put(&k, values.next_value())])?;
        if counting {
            latency.saturating_record(nanos(start, Instant::now()));
            ops += 1;
        }
    }
    let elapsed = if counting {
        window.elapsed()
    } else {
        Duration::ZERO
    };
    store.flush()?;
    drop(store);
    print_json(&WriterDone {
        ops,
        elapsed_ns: elapsed.as_nanos() as u64,
        latency: buckets(&latency),
    })
}

/// Opens the store once in its read mode, says `ready`, and after `go` makes random
/// point lookups for `--mp-seconds`; a follower refreshes `--refresh-ms` after its
/// previous refresh ended.
fn reader(s: &Settings, r: &RoleArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    let store = r.kind.open_reader(&r.dir, s.config(), r.mode)?;
    let open_ns = nanos(start, Instant::now());
    say_ready()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if line.trim() != "go" {
        bail!("a reader was told {:?}, not go", line.trim());
    }
    let follower = r.mode == ReadMode::Follower;
    let refresh_every = Duration::from_millis(s.refresh_ms);
    let mut rng = thread_rng(s.seed, STREAM_READER, r.index);
    let mut out = Vec::new();
    let mut latency = histogram()?;
    let (mut refreshes, mut refresh_ns, mut refresh_max_ns) = (0u64, 0u64, 0u64);
    let mut ops = 0u64;
    let begin = Instant::now();
    let end = begin + Duration::from_secs_f64(s.mp_seconds);
    let mut clock = Lap::at(begin);
    let mut last_refresh = begin;
    while clock.last() < end {
        if follower && clock.last() >= last_refresh + refresh_every {
            let t = Instant::now();
            let moved = store.refresh()?;
            let done = Instant::now();
            let ns = nanos(t, done);
            refresh_max_ns = refresh_max_ns.max(ns);
            if moved {
                refreshes += 1;
                refresh_ns += ns;
            }
            last_refresh = done;
        }
        let k = key(rng.below(s.num));
        must_get(&*store, &k, &mut out, s.value_size)?;
        latency.saturating_record(clock.lap());
        ops += 1;
    }
    let elapsed = clock.last() - begin;
    print_json(&ReaderDone {
        ops,
        elapsed_ns: elapsed.as_nanos() as u64,
        open_ns,
        refreshes,
        refresh_ns,
        refresh_max_ns,
        latency: buckets(&latency),
    })?;
    drop(store);
    Ok(())
}

/// The machine's load average over the last minute, as `/proc/loadavg` says it (other
/// processes share the machine's cores with the stores).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// File descriptors this process has open (0 if `/proc` cannot tell).
fn open_files() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// This process's resident memory (0 if `/proc` cannot tell).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Drops every file under `dir` from the page cache (`posix_fadvise(DONTNEED)`: the
/// clean pages of these files only, nothing else of the machine's).
fn drop_from_page_cache(dir: &Path) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd as _;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            drop_from_page_cache(&path)?;
            continue;
        }
        let file = std::fs::File::open(&path)?;
        // SAFETY: a plain system call on a descriptor this function owns for the call's
        // duration; it reads no memory of this process.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            bail!("posix_fadvise on {}: error {rc}", path.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn labels_name_the_read_mode() {
        assert_eq!(label(Kind::Cairn, ReadMode::ReadOnly), "cairn");
        assert_eq!(label(Kind::Cairn, ReadMode::Follower), "cairn-follower");
        assert_eq!(
            label(Kind::RocksDb, ReadMode::Follower),
            "rocksdb-secondary"
        );
    }

    #[test]
    fn histograms_cross_processes_whole() {
        let mut h = histogram().unwrap();
        for v in [10u64, 20, 20, 5000, 1_000_000] {
            h.saturating_record(v);
        }
        let mut back = histogram().unwrap();
        for (v, c) in buckets(&h) {
            back.saturating_record_n(v, c);
        }
        assert_eq!(back.len(), h.len());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
    }
}
