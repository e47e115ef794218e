//! `cairn-ordered-peers`: Cairn's ordered store side by side with other embedded ordered
//! stores, in one run.
//!
//! The same workloads (see [`workload`]) run on Cairn and on every peer, one store at a
//! time on a fresh directory and in a fresh process of this program (`--worker`), so no
//! store inherits another's heap, threads or mappings; the rows go to a Markdown report,
//! a JSON file and an SVG chart of Cairn's ratio to each peer. The Go stores (pebble,
//! badger, bbolt) run in the Go driver (`go/`), which prints rows of the same shape; the
//! constant stores run through `cairn-bench` (crates/bench, its `stores` module). Keys,
//! values, the random generator and latency recording are `cairn-harness`'s.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use cairn_harness::scratch::{dir_size as walk_size, Measure};
use cairn_harness::{ScratchDir, ValueSource};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

mod constant;
mod data;
mod go;
mod markdown;
mod noise;
mod plot;
mod processes;
mod report;
mod resources;
mod row;
mod stores;
mod txn;
mod txn_report;
mod workload;

use row::{Labels, Row};
use stores::{Config, Kind, ReadMode, TxKind};
use workload::{Plan, Workload};

/// Cairn and its peers, the same workloads in one run, with a report of the ratios.
#[derive(Parser, Debug)]
#[command(name = "cairn-ordered-peers", version)]
struct Args {
    /// Keys of the ordered workloads (16-byte keys).
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Operations of readrandom and the read/write mixes (default: --num).
    #[arg(long)]
    reads: Option<u64>,
    /// Bytes of every value of the ordered workloads.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Thread counts to run every ordered workload with.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2])]
    threads: Vec<usize>,
    /// Writes per batch of the batched writes.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Block or page cache of every store that has one, MiB.
    #[arg(long, default_value_t = 64)]
    cache_mb: usize,
    /// Rust stores: cairn, rocksdb, rocksdb-tuned, fjall, redb, lmdb, sled.
    #[arg(long, value_delimiter = ',', default_values = ["cairn", "rocksdb", "rocksdb-tuned", "fjall", "redb", "lmdb", "sled"])]
    stores: Vec<String>,
    /// Go stores, run by the Go driver: pebble, badger, bbolt (none without --go-driver).
    #[arg(long, value_delimiter = ',', default_values = ["pebble", "badger", "bbolt"])]
    go_stores: Vec<String>,
    /// The Go driver's binary (built by install-peers.sh as
    /// target/cairn-ordered-peers-go); the Go stores are skipped, and the report says so,
    /// when it is missing.
    #[arg(long, default_value = "target/cairn-ordered-peers-go")]
    go_driver: PathBuf,
    /// Workloads to run (default: every ordered workload, in their fixed order). Also
    /// `open-ro` (read-only opens in fresh processes) and `mp-readers` (reader processes
    /// beside a writer process), which run only when named; see `src/processes.rs`; and
    /// `txn-transfer`, `txn-rmw`, `txn-cas` (transactions), which run only when named;
    /// see `src/txn.rs`.
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
    /// `open-ro`: opens per store, read mode and cache state (warm, cold), each in a
    /// fresh process.
    #[arg(long, default_value_t = 5)]
    open_repeats: usize,
    /// `mp-readers`: reader process counts, each beside one writer process.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 4])]
    readers: Vec<usize>,
    /// `mp-readers`: seconds every reader reads.
    #[arg(long, default_value_t = 10.0)]
    mp_seconds: f64,
    /// `mp-readers`: times every run is repeated, round the stores (the report gives the
    /// median and the range).
    #[arg(long, default_value_t = 3)]
    mp_rounds: usize,
    /// `mp-readers`: the writer's single puts per second (0: as fast as it can).
    #[arg(long, default_value_t = 10_000)]
    mp_write_rate: u64,
    /// `mp-readers`: milliseconds from the end of a follower's refresh to its next one.
    #[arg(long, default_value_t = 100)]
    refresh_ms: u64,
    /// Transactions: stores (cairn, cairn-serializable, fjall-optimistic,
    /// fjall-single-writer, rocksdb-optimistic, rocksdb-pessimistic, redb, lmdb).
    #[arg(long, value_delimiter = ',', default_values = ["cairn", "cairn-serializable", "fjall-optimistic", "fjall-single-writer", "rocksdb-optimistic", "rocksdb-pessimistic", "redb", "lmdb"])]
    txn_stores: Vec<String>,
    /// Transactions: account counts (a fresh store per count; 1,000 contended, 1,000,000
    /// uncontended).
    #[arg(long, value_delimiter = ',', default_values_t = [1_000u64, 1_000_000])]
    txn_accounts: Vec<u64>,
    /// Transactions: thread counts, each running every named transaction workload.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 8])]
    txn_threads: Vec<usize>,
    /// Transactions: committed operations per workload and thread count.
    #[arg(long, default_value_t = 100_000)]
    txn_ops: u64,
    /// Transactions: the hot accounts of `txn-cas`.
    #[arg(long, default_value_t = 8)]
    txn_hot_keys: u64,
    /// Internal: run this store's transaction workloads in this process, in `--dir`.
    #[arg(long, hide = true)]
    txn_worker: Option<String>,
    /// Internal: the transaction worker's account count.
    #[arg(long, hide = true, default_value_t = 1_000)]
    txn_worker_accounts: u64,
    /// Value sizes of the large-value workloads.
    #[arg(long, value_delimiter = ',', default_values_t = [4096usize, 65536, 1048576])]
    large_sizes: Vec<usize>,
    /// Bytes of values written per large-value size.
    #[arg(long, default_value_t = 256 << 20)]
    large_bytes: u64,
    /// Entry counts of the constant-store benchmark.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000_000u64])]
    constant_sizes: Vec<u64>,
    /// Random lookups per constant store.
    #[arg(long, default_value_t = 1_000_000)]
    constant_lookups: u64,
    /// Skip the ordered workloads (run only the large-value and constant-store ones).
    #[arg(long)]
    no_ordered: bool,
    /// Skip the large-value workloads.
    #[arg(long)]
    no_large: bool,
    /// Skip the constant-store benchmark.
    #[arg(long)]
    no_constant: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Scratch directory for the stores (default: a fresh one under the temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where the report goes: `<out>.md`, `<out>.json` and `<out>.svg`.
    #[arg(long, default_value = "docs/bench/peers")]
    out: PathBuf,
    /// Cairn's memtable size, MiB (default: Cairn's default, `Options::memtable_size`).
    #[arg(long)]
    cairn_memtable_mb: Option<usize>,
    /// Cairn reads its tables through memory maps (`Options::mmap_reads`; default: `pread`).
    #[arg(long)]
    cairn_mmap_reads: bool,
    /// Cairn's block compression: none, lz4, snappy, zstd or zstd:<level> (default:
    /// Cairn's default, `Options::compression`).
    #[arg(long, value_parser = stores::parse_compression)]
    cairn_compression: Option<cairn::Compression>,
    /// Passes each thread of readseq and readreverse makes over the whole store (ops: the
    /// entries of every pass). One pass over 1M keys takes tens of milliseconds, so on a
    /// shared machine more passes give steadier rates. The Go stores scan once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    scan_passes: u64,
    /// Passes each thread of readrandom and readmissing makes over its share of `--reads`
    /// (each pass draws new keys). With more than one, the first pass warms the store up
    /// (its maps' page faults, its caches, as a reader's first reads do) and is not
    /// counted: ops, rates and latencies are those of the later passes. The Go stores
    /// read once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    read_passes: u64,
    /// Seconds to measure the machine's latency floor before the stores run (0: skip).
    #[arg(long, default_value_t = 5)]
    noise_seconds: u64,
    /// Seconds of idle time after each write workload before a store's space is measured
    /// a second time, the same for every store, so that space left to background work
    /// (flushes, compactions) is compared once it has had the time to run (0: measured
    /// only when the workload ends).
    #[arg(long, default_value_t = 3)]
    settle_seconds: u64,
    /// Close and reopen every store after its write workloads and before its reads (a
    /// `reopen` row: the time the open took, WAL replay included); the reads then run on
    /// the reopened store. Not for the Go stores.
    #[arg(long)]
    reopen: bool,
    /// Flush and fully compact every store after its write workloads and before its first
    /// read workload, untimed (a `compact` row gives the time it took), so the reads run
    /// on settled data: Cairn `Db::compact`, RocksDB `compact_range`, fjall
    /// `major_compact`; the B-trees only flush. Not for the Go stores, which the report
    /// then says read as they are.
    #[arg(long)]
    compact_before_reads: bool,
    /// Only measure the machine's latency floor (`--noise-seconds`) and print it.
    #[arg(long)]
    noise_only: bool,
    /// Do not run anything: re-render the report from an earlier run's JSON file.
    #[arg(long)]
    from_json: Option<PathBuf>,
    /// Internal: run this one store's part in this process, in `--dir`, and print its
    /// rows as JSON lines (every store runs in a fresh process of its own).
    #[arg(long, hide = true)]
    worker: Option<String>,
    /// Internal: the worker's thread count (ordered workloads).
    #[arg(long, hide = true, default_value_t = 1)]
    worker_threads: usize,
    /// Internal: the worker's large-value size (absent: the ordered workloads).
    #[arg(long, hide = true)]
    worker_size: Option<usize>,
    /// Internal: the worker's role in `open-ro` or `mp-readers` (load, open, writer,
    /// reader).
    #[arg(long, hide = true)]
    role: Option<String>,
    /// Internal: how the role's reader opens the store (ro, follower).
    #[arg(long, hide = true, default_value = "ro")]
    role_mode: String,
    /// Internal: which reader or open of its series the role is.
    #[arg(long, hide = true, default_value_t = 0)]
    role_index: u64,
    /// Internal: drop the store's files from the page cache before the open.
    #[arg(long, hide = true)]
    role_cold: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let (Some(store), Some(role)) = (&args.worker, &args.role) {
        let role = processes::RoleArgs {
            role: role.clone(),
            kind: Kind::parse(store).with_context(|| format!("unknown store {store:?}"))?,
            dir: args.dir.clone().context("a role needs --dir")?,
            mode: ReadMode::parse(&args.role_mode)
                .with_context(|| format!("unknown read mode {:?}", args.role_mode))?,
            index: args.role_index,
            cold: args.role_cold,
        };
        return processes::child(&process_settings(&args), &role);
    }
    if let Some(store) = &args.txn_worker {
        let kind = TxKind::parse(store).with_context(|| format!("unknown store {store:?}"))?;
        let dir = args.dir.clone().context("a worker needs --dir")?;
        let rows = txn::worker(&txn_settings(&args), kind, args.txn_worker_accounts, &dir)?;
        let mut out = std::io::stdout().lock();
        for row in rows {
            serde_json::to_writer(&mut out, &row)?;
            writeln!(out)?;
        }
        return Ok(());
    }
    if let Some(store) = &args.worker {
        return worker(&args, store);
    }
    if args.noise_only {
        let noise = noise::measure(Duration::from_secs(args.noise_seconds.max(1)));
        println!("{}", noise.describe());
        return Ok(());
    }
    let report = match &args.from_json {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => run(&args)?,
    };
    write_report(&report, &args.out)?;
    eprintln!(
        "report: {}.md, {}.json, {}.svg",
        args.out.display(),
        args.out.display(),
        args.out.display()
    );
    Ok(())
}

/// The selected ordered workloads, in their fixed order (none when only process
/// workloads are named).
fn selected_workloads(args: &Args) -> anyhow::Result<Vec<Workload>> {
    if args.workloads.is_empty() {
        return Ok(Workload::ORDERED.to_vec());
    }
    args.workloads
        .iter()
        .filter(|s| !processes::NAMES.contains(&s.as_str()) && !txn::NAMES.contains(&s.as_str()))
        .map(|s| Workload::parse(s).with_context(|| format!("unknown workload {s:?}")))
        .collect()
}

/// The settings of the process workloads (`open-ro`, `mp-readers`), and whether each is
/// selected.
fn process_settings(args: &Args) -> processes::Settings {
    let named = |w: &str| args.workloads.iter().any(|s| s == w);
    processes::Settings {
        num: args.num,
        value_size: args.value_size,
        batch: args.batch,
        cache_mb: args.cache_mb,
        seed: args.seed,
        cairn_memtable_mb: args.cairn_memtable_mb,
        cairn_mmap_reads: args.cairn_mmap_reads,
        cairn_compression: args.cairn_compression,
        open: named(processes::OPEN_RO),
        mp: named(processes::MP_READERS),
        open_repeats: args.open_repeats,
        readers: args.readers.clone(),
        mp_seconds: args.mp_seconds,
        mp_rounds: args.mp_rounds,
        write_rate: args.mp_write_rate,
        refresh_ms: args.refresh_ms,
    }
}

/// The settings of the transaction workloads, and which are selected.
fn txn_settings(args: &Args) -> txn::Settings {
    txn::Settings {
        workloads: txn::Settings::pick(&args.workloads),
        accounts: args.txn_accounts.clone(),
        threads: args.txn_threads.clone(),
        ops: args.txn_ops,
        hot_keys: args.txn_hot_keys,
        seed: args.seed,
        cache_mb: args.cache_mb,
    }
}

/// Runs one store's part in this process and prints its rows, one JSON object a line.
fn worker(args: &Args, store: &str) -> anyhow::Result<()> {
    let kind = Kind::parse(store).with_context(|| format!("unknown store {store:?}"))?;
    let scratch = args.dir.clone().context("a worker needs --dir")?;
    let config = Config {
        cache_bytes: args.cache_mb << 20,
        cairn_memtable_bytes: args.cairn_memtable_mb.map(|mb| mb << 20),
        cairn_mmap_reads: args.cairn_mmap_reads,
        cairn_compression: args.cairn_compression,
    };
    let rows = match args.worker_size {
        Some(size) => large(kind, size, args, config, &scratch)?,
        None => {
            let plan = Plan {
                num: args.num,
                threads: args.worker_threads,
                batch: args.batch,
                reads: args.reads.unwrap_or(args.num),
                seed: args.seed,
                settle: Duration::from_secs(args.settle_seconds),
                scan_passes: args.scan_passes,
                read_passes: args.read_passes,
            };
            let workloads = selected_workloads(args)?;
            let run = OrderedRun {
                value_size: args.value_size,
                workloads: &workloads,
                reopen: args.reopen,
                compact: args.compact_before_reads,
            };
            ordered(kind, &plan, &run, config, &scratch)?
        }
    };
    let mut out = std::io::stdout().lock();
    for row in rows {
        serde_json::to_writer(&mut out, &row)?;
        writeln!(out)?;
    }
    Ok(())
}

/// Runs one store's part in a fresh process of this program, so no store inherits
/// another's heap, threads or mappings, and returns its rows.
fn in_worker(
    args: &Args,
    kind: Kind,
    threads: usize,
    size: Option<usize>,
    scratch: &Path,
) -> anyhow::Result<Vec<Row>> {
    let exe = std::env::current_exe().context("finding this program")?;
    let dir = scratch.join(format!("worker-{}", kind.name()));
    std::fs::create_dir_all(&dir)?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(format!("--worker={}", kind.name()))
        .arg(format!("--worker-threads={threads}"))
        .arg(format!("--num={}", args.num))
        .arg(format!("--value-size={}", args.value_size))
        .arg(format!("--batch={}", args.batch))
        .arg(format!("--cache-mb={}", args.cache_mb))
        .arg(format!("--seed={}", args.seed))
        .arg(format!("--settle-seconds={}", args.settle_seconds))
        .arg(format!("--scan-passes={}", args.scan_passes))
        .arg(format!("--read-passes={}", args.read_passes))
        .arg(format!("--large-bytes={}", args.large_bytes))
        .arg(format!("--dir={}", dir.display()));
    if args.reopen {
        cmd.arg("--reopen");
    }
    if args.compact_before_reads {
        cmd.arg("--compact-before-reads");
    }
    if let Some(reads) = args.reads {
        cmd.arg(format!("--reads={reads}"));
    }
    if let Some(mb) = args.cairn_memtable_mb {
        cmd.arg(format!("--cairn-memtable-mb={mb}"));
    }
    if args.cairn_mmap_reads {
        cmd.arg("--cairn-mmap-reads");
    }
    if let Some(c) = args.cairn_compression {
        cmd.arg(format!(
            "--cairn-compression={}",
            stores::compression_name(c)
        ));
    }
    if let Some(size) = size {
        cmd.arg(format!("--worker-size={size}"));
    }
    if !args.workloads.is_empty() {
        cmd.arg(format!("--workloads={}", args.workloads.join(",")));
    }
    let output = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running a worker")?;
    let _ = std::fs::remove_dir_all(&dir);
    if !output.status.success() {
        anyhow::bail!("the worker for {} failed: {}", kind.name(), output.status);
    }
    let text = String::from_utf8(output.stdout).context("a worker's output")?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("a worker's row: {l}")))
        .collect()
}

/// Writes `<out>.json`, `<out>.md` and `<out>.svg`.
fn write_report(report: &report::Report, out: &Path) -> anyhow::Result<()> {
    if let Some(parent) = out.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    let with = |ext: &str| out.with_extension(ext);
    let json = serde_json::to_string_pretty(report)?;
    std::fs::write(with("json"), json + "\n").context("writing the JSON report")?;
    std::fs::write(with("md"), markdown::markdown(report))
        .context("writing the Markdown report")?;
    std::fs::write(with("svg"), plot::ratios(report)).context("writing the chart")?;
    Ok(())
}

fn run(args: &Args) -> anyhow::Result<report::Report> {
    let kinds = args
        .stores
        .iter()
        .map(|s| Kind::parse(s).with_context(|| format!("unknown store {s:?}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let workloads = selected_workloads(args)?;
    let scratch = match &args.dir {
        Some(d) => ScratchDir::temporary_in(d, "cairn-ordered-peers-")?,
        None => ScratchDir::temporary("cairn-ordered-peers-")?,
    };
    let go = go::Driver::find(&args.go_driver, &args.go_stores);
    let mut report = report::Report::new(args_line(), args.num, args.cache_mb, go.note());
    if args.compact_before_reads {
        report.notes.push(
            "Reads ran on compacted stores (`--compact-before-reads`): each Rust store was \
             flushed and fully compacted after its writes, untimed (the `compact` row gives \
             the time); the Go stores, if any, read as they were."
                .to_owned(),
        );
    }
    if args.noise_seconds > 0 {
        eprintln!("noise floor: {} s", args.noise_seconds);
        report.noise = Some(noise::measure(Duration::from_secs(args.noise_seconds)));
    }

    let thread_counts: &[usize] = if args.no_ordered || workloads.is_empty() {
        &[]
    } else {
        &args.threads
    };
    for &threads in thread_counts {
        let plan = Plan {
            num: args.num,
            threads,
            batch: args.batch,
            reads: args.reads.unwrap_or(args.num),
            seed: args.seed,
            settle: Duration::from_secs(args.settle_seconds),
            scan_passes: args.scan_passes,
            read_passes: args.read_passes,
        };
        for &kind in &kinds {
            match in_worker(args, kind, threads, None, scratch.path()) {
                Ok(rows) => report.rows.extend(rows),
                Err(e) => report.failed(format!("{} with {threads} thread(s): {e:#}", kind.name())),
            }
        }
        for store in go.stores() {
            let names: Vec<String> = workloads.iter().map(|w| w.name()).collect();
            let rows = go.ordered(
                store,
                &plan,
                args.value_size,
                &names,
                args.cache_mb,
                scratch.path(),
            )?;
            report.rows.extend(rows);
        }
    }
    let settings = process_settings(args);
    if settings.open || settings.mp {
        processes::run(&settings, &kinds, scratch.path(), &mut report);
    }
    let txn = txn_settings(args);
    if !txn.workloads.is_empty() {
        let tx_kinds = args
            .txn_stores
            .iter()
            .map(|s| TxKind::parse(s).with_context(|| format!("unknown store {s:?}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        txn::run(&txn, &tx_kinds, scratch.path(), &mut report);
    }
    let large_sizes: &[usize] = if args.no_large {
        &[]
    } else {
        &args.large_sizes
    };
    for &size in large_sizes {
        for &kind in &kinds {
            match in_worker(args, kind, 1, Some(size), scratch.path()) {
                Ok(rows) => report.rows.extend(rows),
                Err(e) => report.failed(format!("{} with {size}-byte values: {e:#}", kind.name())),
            }
        }
    }
    if !large_sizes.is_empty() {
        for store in go.stores() {
            let rows = go.large(store, args, scratch.path())?;
            report.rows.extend(rows);
        }
    }
    if !args.no_constant {
        report.constant = constant::run(
            &args.constant_sizes,
            args.constant_lookups,
            args.seed,
            scratch.path(),
        )?;
    }
    Ok(report)
}

fn args_line() -> String {
    let mut line = String::from("cairn-ordered-peers");
    for a in std::env::args().skip(1) {
        line.push(' ');
        line.push_str(&a);
    }
    line
}

fn bar(label: String, total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        eprintln!("{label}");
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{msg:<40} [{bar:30}] {human_pos}/{human_len} {per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(label);
    bar
}

/// What one store's ordered run does, besides its [`Plan`].
struct OrderedRun<'a> {
    value_size: usize,
    workloads: &'a [Workload],
    /// Close and reopen the store (timed) before its first read workload.
    reopen: bool,
    /// Compact the store (untimed for the reads, its time a row of its own) before its
    /// first read workload.
    compact: bool,
}

/// Runs the ordered workloads on one store: `fillseq` on a fresh store of its own, the
/// rest on one store that `fillrandom` fills first (run even when not asked for, unrecorded,
/// when a later workload needs the keys). Every row carries the process's peak resident
/// memory so far; a write workload's row also the bytes it sent toward storage, its idle
/// time after it included (see [`resources`]).
fn ordered(
    kind: Kind,
    plan: &Plan,
    run: &OrderedRun<'_>,
    config: Config,
    scratch: &Path,
) -> anyhow::Result<Vec<Row>> {
    let value_size = run.value_size;
    let workloads = run.workloads;
    let values = ValueSource::new(value_size, plan.seed);
    let mut rows = Vec::new();
    let config_label = kind.config_label(&config);
    let labels = |w: String| Labels {
        suite: "ordered",
        store: kind.name(),
        config: &config_label,
        durability: kind.durability(),
        workload: w,
        threads: plan.threads,
        num: plan.num,
        value_size,
        batch: plan.batch,
    };
    if workloads.contains(&Workload::FillSeq) {
        let dir = fresh_dir(scratch, kind.name())?;
        let store = kind.open(&dir, config)?;
        let written = resources::bytes_written();
        let outcome = timed(&*store, Workload::FillSeq, plan, &values, 0, kind)?;
        store.settle()?;
        let row = with_space(
            Row::new(labels(Workload::FillSeq.name()), &outcome, None),
            &dir,
            plan,
        );
        rows.push(with_resources(row, written));
        drop(store);
        std::fs::remove_dir_all(&dir)?;
    }
    let rest: Vec<Workload> = workloads
        .iter()
        .copied()
        .filter(|&w| w != Workload::FillSeq)
        .collect();
    if rest.is_empty() {
        return Ok(rows);
    }
    let dir = fresh_dir(scratch, kind.name())?;
    let mut store = kind.open(&dir, config)?;
    let mut filled = false;
    let mut reopened = !(run.reopen && kind.reopens_in_process());
    let mut compacted = !run.compact;
    for &w in Workload::ORDERED.iter() {
        let wanted = rest.contains(&w);
        let needed = w == Workload::FillRandom && !filled;
        if !wanted && !needed {
            continue;
        }
        if !w.writes() && !reopened {
            drop(store);
            flush_os();
            let started = std::time::Instant::now();
            store = kind.open(&dir, config)?;
            rows.push(one_off_row(
                kind,
                labels("reopen".into()),
                started.elapsed(),
            )?);
            reopened = true;
        }
        if !w.writes() && !compacted {
            let started = std::time::Instant::now();
            store
                .compact()
                .map_err(|e| e.context("compacting before the reads failed"))?;
            rows.push(one_off_row(
                kind,
                labels("compact".into()),
                started.elapsed(),
            )?);
            compacted = true;
        }
        let written = resources::bytes_written();
        let outcome = timed(&*store, w, plan, &values, w.seed_index(), kind)
            .map_err(|e| e.context(format!("{} failed", w.name())))?;
        if w.writes() {
            store.settle()?;
        }
        if w == Workload::FillRandom {
            filled = true;
        }
        if wanted {
            let row = Row::new(labels(w.name()), &outcome, None);
            let row = if w.writes() {
                with_resources(with_space(row, &dir, plan), written)
            } else {
                with_resources(
                    Row {
                        disk_bytes: Some(dir_size(&dir)),
                        ..row
                    },
                    None,
                )
            };
            rows.push(row);
        }
    }
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(rows)
}

/// The row of a timed one-off step before a store's reads (a reopen, a compaction): one
/// operation that took `took`, with the process's resources; the step is also printed.
fn one_off_row(kind: Kind, labels: Labels<'_>, took: Duration) -> anyhow::Result<Row> {
    eprintln!(
        "  {:<14} {:<13} {:>12.1} ms",
        kind.name(),
        labels.workload,
        took.as_secs_f64() * 1e3
    );
    let mut latency = cairn_harness::histogram().context("creating a histogram")?;
    latency.saturating_record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    let outcome = workload::Outcome {
        ops: 1,
        elapsed: took,
        latency,
        write_latency: None,
        found: None,
    };
    Ok(with_resources(Row::new(labels, &outcome, None), None))
}

/// `row` with the process's peak resident memory so far and, when `written_before` is the
/// byte count of [`resources::bytes_written`] from before the workload, what it wrote
/// since (its idle time included).
fn with_resources(row: Row, written_before: Option<u64>) -> Row {
    let disk_write_bytes = written_before
        .zip(resources::bytes_written())
        .map(|(before, now)| now.saturating_sub(before));
    Row {
        peak_rss_bytes: resources::peak_resident_bytes(),
        disk_write_bytes,
        ..row
    }
}

fn timed(
    store: &dyn stores::Store,
    w: Workload,
    plan: &Plan,
    values: &ValueSource,
    index: u64,
    kind: Kind,
) -> anyhow::Result<workload::Outcome> {
    // Keys must all be there from the end of fillrandom until deleterandom.
    let must_find = !matches!(
        w,
        Workload::FillSeq | Workload::FillRandom | Workload::DeleteRandom
    );
    let entries = plan.num;
    let bar = bar(
        format!("{} {} t={}", kind.name(), w.name(), plan.threads),
        workload::total_ops(w, plan, entries),
    );
    let outcome = workload::run(store, w, plan, values, index, must_find, &bar)?;
    bar.finish_and_clear();
    eprintln!(
        "  {:<14} {:<13} t={} {:>12.0} ops/s  p99.9 {:>9.1} us",
        kind.name(),
        w.name(),
        plan.threads,
        outcome.ops as f64 / outcome.elapsed.as_secs_f64().max(1e-9),
        outcome.latency.value_at_quantile(0.999) as f64 / 1000.0
    );
    Ok(outcome)
}

/// Large values on one store: a fresh store per size, `fillrandom` of `large_bytes` of
/// values, then `readrandom` of as many gets as there are keys.
fn large(
    kind: Kind,
    size: usize,
    args: &Args,
    config: Config,
    scratch: &Path,
) -> anyhow::Result<Vec<Row>> {
    let num = (args.large_bytes / size.max(1) as u64).max(1);
    let config_label = kind.config_label(&config);
    let batch = (args.batch).min((4usize << 20) / size.max(1)).max(1);
    let plan = Plan {
        num,
        threads: 1,
        batch,
        reads: num,
        seed: args.seed,
        settle: Duration::ZERO,
        scan_passes: 1,
        read_passes: 1,
    };
    let values = ValueSource::new(size, args.seed);
    let dir = fresh_dir(scratch, kind.name())?;
    let store = kind.open(&dir, config)?;
    let mut rows = Vec::new();
    for (index, w) in [Workload::FillRandom, Workload::ReadRandom]
        .into_iter()
        .enumerate()
    {
        let outcome = timed(&*store, w, &plan, &values, index as u64, kind)?;
        if w.writes() {
            store.settle()?;
        }
        let labels = Labels {
            suite: "large",
            store: kind.name(),
            config: &config_label,
            durability: kind.durability(),
            workload: w.name(),
            threads: 1,
            num,
            value_size: size,
            batch,
        };
        rows.push(Row::new(labels, &outcome, Some(dir_size(&dir))));
    }
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(rows)
}

/// Writes every dirty page of the machine out (`sync`), so a store does not start while
/// the kernel is still writing back what the previous one left in the page cache (which
/// throttled the first workload of the next store by up to 7x).
pub fn flush_os() {
    let _ = std::process::Command::new("sync").status();
}

/// A new empty directory for one store, after [`flush_os`]. Every call gets a new name:
/// some stores (LMDB) refuse to open a path they have open already, even after it was
/// removed.
fn fresh_dir(scratch: &Path, name: &str) -> anyhow::Result<PathBuf> {
    flush_os();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = scratch.join(format!("{name}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `row` with the space of `dir` now and, if `plan.settle` is not zero, again after that
/// much idle time.
fn with_space(row: Row, dir: &Path, plan: &Plan) -> Row {
    let disk_bytes = Some(dir_size(dir));
    let settled_disk_bytes = (!plan.settle.is_zero()).then(|| {
        std::thread::sleep(plan.settle);
        dir_size(dir)
    });
    Row {
        disk_bytes,
        settled_disk_bytes,
        ..row
    }
}

/// Bytes of every file under `dir` (0 if it cannot be read): for each file the smaller
/// of its length and its allocated blocks, so preallocated or sparse files (write-ahead
/// logs, memory-mapped files) count what they hold, as the Go driver counts them.
pub fn dir_size(dir: &Path) -> u64 {
    walk_size(dir, Measure::Allocated).unwrap_or(0)
}
