//! `cairn bench ordered`: db_bench's benchmarks against the ordered store.
//!
//! This module owns the flags, the store's life (a fresh store for `fillseq` and
//! `fillrandom`, the untimed wait for background work between benchmarks) and the
//! output; the timed loops are in `workloads.rs`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use cairn::{Compression, Db, Durability, Keyspace, Options, DEFAULT_KEYSPACE};
use cairn_harness::{durability_name, parse_durability, KeyFormat, Keys, ValueSource, WriteCost};
use clap::ValueEnum;
use indicatif::ProgressBar;
use serde_json::{json, Value};

use super::memory::Memory;
use super::report::Outcome;
use super::store::Place;
use super::workloads::{self, Order, Workload, Write as WriteKind};
use crate::errors::{CliError, CliResult, EXIT_OK};
use crate::progress;

/// The benchmarks run when `--benchmarks` is not given.
const DEFAULT_BENCHMARKS: &str =
    "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,seekrandom,deleterandom";

/// Run db_bench's benchmarks against the ordered store
///
/// Runs each benchmark of --benchmarks in order on one store and prints one line per
/// benchmark in db_bench's shape, then a line of latency percentiles and, after
/// benchmarks that write, write amplification, table bytes and write stalls:
///
///   fillrandom   :       2.345 micros/op 426439 ops/sec;   47.2 MB/s
///       p50 0.9 µs  p99 3.1 µs  p99.9 12.0 µs  max 1.2 ms
///       write-amp 1.85 (wal+flush+compaction bytes / user bytes)  space 62.3 MB (table bytes)  stalls 0
///
/// The percentiles of readseq and readreverse are of entries timed 1,024 at a time (each
/// charged its batch's mean), so a scan does not read the clock per entry.
///
/// micros/op is the threads' summed time per operation (db_bench's), ops/sec is
/// operations over wall-clock time, MB is 2^20 bytes. With --json, one JSON object per
/// benchmark instead. fillseq and fillrandom start from an empty store; the others use
/// what the earlier benchmarks left. After a benchmark that writes (and before the first
/// read benchmark), the command waits, untimed, until flushes and compactions are done,
/// unless --no-compact-wait.
///
/// Benchmarks: fillseq (keys 0..num in order), fillrandom and overwrite (num random keys,
/// with repeats), readrandom (random point lookups), headrandom (random HEAD lookups:
/// value length and metadata, not the value), readseq and readreverse (full scans),
/// seekrandom (a scan positioned at a random key, one entry read), deleterandom (num
/// random deletes), readwhilewriting (readrandom on --threads threads while one more
/// thread writes random keys), readrandomwriterandom (random reads and writes,
/// --readwritepercent of them reads), count (Keyspace::len once: the exact number of
/// keys; ops are the keys counted), compact (flush, compactions and value-log garbage
/// collection until the store settles; reports its space). fillseq runs on one thread; the random writes
/// split --num writes over --threads threads, the reads and the mix split --reads
/// operations over them.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Comma-separated list of benchmarks, run in order (a name may repeat).
    #[arg(long, value_enum, value_delimiter = ',', default_value = DEFAULT_BENCHMARKS)]
    benchmarks: Vec<Benchmark>,
    /// Number of keys: writes cover the key numbers 0..num.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    num: u64,
    /// Operations of the read benchmarks and the mix [default: --num].
    #[arg(long)]
    reads: Option<u64>,
    /// Key length in bytes.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    key_size: u16,
    /// How key numbers become bytes: zero-padded ASCII decimal (db_bench's keys) or
    /// big-endian binary. Both sort like the numbers.
    #[arg(long, value_enum, default_value_t = KeyFormat::Decimal)]
    key_format: KeyFormat,
    /// Value length in bytes (values compress to about half).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=(64 << 20)))]
    value_size: u32,
    /// Threads for the read benchmarks and the mix.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Durability of every write: sync, periodic:<µs>, buffered, async:<depth> or none.
    /// The default, buffered (each write handed to the OS, no fsync), is what db_bench
    /// measures by default (--sync=false).
    #[arg(long, default_value = "buffered", value_parser = parse_durability)]
    durability: Durability,
    /// Writes per committed batch (db_bench's --batch_size); latency is then recorded
    /// per batch.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    batch_size: u64,
    /// Percentage of reads in readrandomwriterandom.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(0..=100))]
    readwritepercent: u64,
    /// Store directory [default: a temporary directory, removed at exit]. Emptied first
    /// unless --use-existing-db; it must be new, empty or hold a Cairn store.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Use the store in --dir as it is: no deletion, fillseq and fillrandom are skipped.
    #[arg(long, requires = "dir")]
    use_existing_db: bool,
    /// Table block compression.
    #[arg(long, value_enum, default_value_t = CompressionArg::Lz4)]
    compression: CompressionArg,
    /// Block cache size in bytes (replaced by the cache's share under --memory-budget).
    #[arg(long, default_value_t = 64 << 20)]
    cache_size: usize,
    /// Read table blocks through memory maps of the table files (Options::mmap_reads; with
    /// --compression none, data blocks are read where they lie).
    #[arg(long)]
    mmap_reads: bool,
    /// Target size of a table's data block before compression, in bytes (db_bench's
    /// --block_size) [default: the engine's, Options::block_size].
    #[arg(long, value_name = "BYTES")]
    block_size: Option<usize>,
    /// Entries between the full keys a data block stores for its binary search (db_bench's
    /// --block_restart_interval) [default: the engine's, Options::restart_interval].
    #[arg(long, value_name = "ENTRIES")]
    restart_interval: Option<usize>,
    /// One bound, in bytes, on the block cache, the memtables and the open tables' index
    /// and filter blocks together (Options::memory_budget: 5/8 cache, 1/4 memtables, 1/8
    /// index and filter; at least 16 MiB) [default: none].
    #[arg(long, value_name = "BYTES")]
    memory_budget: Option<usize>,
    /// Bytes of entries a memtable takes before it is sealed (Options::memtable_size, as
    /// db_bench's --write_buffer_size) [default: the engine's, 16 MiB].
    #[arg(long, value_name = "BYTES")]
    memtable_size: Option<usize>,
    /// Keep values of at least this many bytes apart from the tables, in blob files (the
    /// value log) [default: off, every value in the tables].
    #[arg(long, value_name = "BYTES")]
    blob_threshold: Option<usize>,
    /// Seed of the key choices and of the value bytes.
    #[arg(long, default_value_t = 301)]
    seed: u64,
    /// Print one JSON object per benchmark on standard output instead of text.
    #[arg(long)]
    json: bool,
    /// Also print each latency histogram's distribution (db_bench's --histogram).
    #[arg(long)]
    histogram: bool,
    /// Do not wait for flushes and compactions between benchmarks.
    #[arg(long)]
    no_compact_wait: bool,
}

/// A benchmark name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Benchmark {
    /// Write keys 0..num in order into an empty store.
    Fillseq,
    /// Write num random keys into an empty store.
    Fillrandom,
    /// Write num random keys into the current store.
    Overwrite,
    /// Look up random keys.
    Readrandom,
    /// Look up the heads (length, tag, metadata; not the value) of random keys.
    Headrandom,
    /// Scan the whole store ascending.
    Readseq,
    /// Scan the whole store descending.
    Readreverse,
    /// Position a scan at a random key and read one entry.
    Seekrandom,
    /// Delete num random keys.
    Deleterandom,
    /// readrandom while one more thread writes random keys.
    Readwhilewriting,
    /// Random reads and writes (--readwritepercent reads).
    Readrandomwriterandom,
    /// Count the keys once (`Keyspace::len`); ops are the keys counted.
    Count,
    /// Flush, finish compactions and collect value-log garbage (db_bench's `compact`
    /// compacts everything): the space the store settles at.
    Compact,
}

impl Benchmark {
    fn name(self) -> &'static str {
        match self {
            Benchmark::Fillseq => "fillseq",
            Benchmark::Fillrandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::Readrandom => "readrandom",
            Benchmark::Headrandom => "headrandom",
            Benchmark::Readseq => "readseq",
            Benchmark::Readreverse => "readreverse",
            Benchmark::Seekrandom => "seekrandom",
            Benchmark::Deleterandom => "deleterandom",
            Benchmark::Readwhilewriting => "readwhilewriting",
            Benchmark::Readrandomwriterandom => "readrandomwriterandom",
            Benchmark::Count => "count",
            Benchmark::Compact => "compact",
        }
    }

    /// Starts from an empty store.
    fn is_fresh(self) -> bool {
        matches!(self, Benchmark::Fillseq | Benchmark::Fillrandom)
    }

    /// Reads from the store (and so should start from a settled one).
    fn reads(self) -> bool {
        !matches!(
            self,
            Benchmark::Fillseq
                | Benchmark::Fillrandom
                | Benchmark::Overwrite
                | Benchmark::Deleterandom
        )
    }

    /// Writes to the store.
    fn writes(self) -> bool {
        matches!(
            self,
            Benchmark::Fillseq
                | Benchmark::Fillrandom
                | Benchmark::Overwrite
                | Benchmark::Deleterandom
                | Benchmark::Readwhilewriting
                | Benchmark::Readrandomwriterandom
                | Benchmark::Compact
        )
    }
}

/// `--compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// Blocks stored as they are.
    None,
    /// LZ4 (the engine's default).
    Lz4,
    /// Snappy.
    Snappy,
    /// Zstandard, level 3.
    Zstd,
}

impl CompressionArg {
    fn name(self) -> &'static str {
        match self {
            CompressionArg::None => "none",
            CompressionArg::Lz4 => "lz4",
            CompressionArg::Snappy => "snappy",
            CompressionArg::Zstd => "zstd",
        }
    }

    fn engine(self) -> Compression {
        match self {
            CompressionArg::None => Compression::None,
            CompressionArg::Lz4 => Compression::Lz4,
            CompressionArg::Snappy => Compression::Snappy,
            CompressionArg::Zstd => Compression::Zstd(3),
        }
    }
}

/// An open store and its default keyspace.
struct Open {
    db: Db,
    ks: Keyspace,
}

impl Open {
    fn new(place: &Place, options: &Options) -> CliResult<Open> {
        let db = place.open(options)?;
        let ks = db.keyspace(DEFAULT_KEYSPACE)?;
        Ok(Open { db, ks })
    }

    /// Closes the store (every handle, so the directory lock is released).
    fn close(self) -> CliResult<()> {
        let Open { db, ks } = self;
        drop(ks);
        Ok(db.close()?)
    }
}

fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1_048_576.0)
}

fn header(args: &Args, reads: u64, place: &Place) -> String {
    let entries = args.num as f64;
    let (key, value) = (f64::from(args.key_size), f64::from(args.value_size));
    let store = if place.is_temporary() {
        format!("{} (temporary, removed at exit)", place.path().display())
    } else if args.use_existing_db {
        format!("{} (existing store)", place.path().display())
    } else {
        format!("{} (kept)", place.path().display())
    };
    let lines = [
        format!("Cairn:       {} ordered store", env!("CARGO_PKG_VERSION")),
        format!(
            "Keys:        {} bytes each ({})",
            args.key_size,
            args.key_format.name()
        ),
        format!(
            "Values:      {} bytes each ({} bytes after compression)",
            args.value_size,
            args.value_size / 2
        ),
        format!("Entries:     {}", args.num),
        format!("Reads:       {reads}"),
        format!("Threads:     {} (fillseq uses one thread)", args.threads),
        format!("RawSize:     {} (estimated)", mb((key + value) * entries)),
        format!(
            "FileSize:    {} (estimated)",
            mb((key + value / 2.0) * entries)
        ),
        format!("Durability:  {}", durability_name(args.durability)),
        format!("Compression: {}", args.compression.name()),
        format!(
            "Table reads: {}",
            if args.mmap_reads {
                "through memory maps"
            } else {
                "pread"
            }
        ),
        format!(
            "Blocks:      {} bytes, a full key every {} entries",
            block_size(args),
            restart_interval(args)
        ),
        match args.memory_budget {
            Some(b) => format!(
                "Memory:      budget {} (5/8 block cache, 1/4 memtables, 1/8 index and filter)",
                mb(b as f64)
            ),
            None => format!("Block cache: {}", mb(args.cache_size as f64)),
        },
        match args.blob_threshold {
            Some(t) => format!("Value log:   values of {t} bytes or more in blob files"),
            None => "Value log:   off (values in the tables)".to_string(),
        },
        format!("Batch size:  {}", args.batch_size),
        format!("Store:       {store}"),
        "------------------------------------------------".to_string(),
    ];
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// The run's settings, added to every JSON object.
/// `--block-size`, or the engine's default.
fn block_size(args: &Args) -> usize {
    args.block_size
        .unwrap_or_else(|| Options::default().block_size)
}

/// `--restart-interval`, or the engine's default.
fn restart_interval(args: &Args) -> usize {
    args.restart_interval
        .unwrap_or_else(|| Options::default().restart_interval)
}

fn settings_json(args: &Args, reads: u64) -> [(&'static str, Value); 15] {
    [
        ("num", json!(args.num)),
        ("reads_requested", json!(reads)),
        ("key_size", json!(args.key_size)),
        ("value_size", json!(args.value_size)),
        ("batch_size", json!(args.batch_size)),
        ("durability", json!(durability_name(args.durability))),
        ("compression", json!(args.compression.name())),
        ("cache_size", json!(args.cache_size)),
        ("mmap_reads", json!(args.mmap_reads)),
        ("block_size", json!(block_size(args))),
        ("restart_interval", json!(restart_interval(args))),
        ("memory_budget", json!(args.memory_budget)),
        ("memtable_size", json!(args.memtable_size)),
        ("blob_threshold", json!(args.blob_threshold)),
        ("seed", json!(args.seed)),
    ]
}

fn emit(out: &mut dyn Write, text: &str) -> CliResult<()> {
    out.write_all(text.as_bytes()).map_err(CliError::Output)?;
    out.flush().map_err(CliError::Output)
}

/// Runs `cairn bench ordered`.
pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let keys = Keys::new(usize::from(args.key_size), args.key_format, args.num).map_err(|e| {
        CliError::msg(format!(
            "bench ordered: --key-size {} is too small for --num {}: {} keys need at least {} bytes",
            e.size,
            e.num,
            e.format.name(),
            e.needed
        ))
    })?;
    let reads = args.reads.unwrap_or(args.num);
    let place = match &args.dir {
        Some(dir) => Place::given(dir, args.use_existing_db)?,
        None => Place::temporary()?,
    };
    if !args.use_existing_db {
        place.wipe()?;
    }
    let options = Options::default()
        .durability(args.durability)
        .create_if_missing(!args.use_existing_db)
        .block_cache_size(args.cache_size)
        .memory_budget(args.memory_budget)
        .compression(args.compression.engine())
        .mmap_reads(args.mmap_reads)
        .blob_threshold(args.blob_threshold);
    let options = match args.memtable_size {
        Some(n) => options.memtable_size(n),
        None => options,
    };
    let options = match args.block_size {
        Some(n) => options.block_size(n),
        None => options,
    };
    let options = match args.restart_interval {
        Some(n) => options.restart_interval(n),
        None => options,
    };
    let values = ValueSource::new(args.value_size as usize, args.seed);
    let show_bar = !args.json && std::io::stdout().is_terminal();
    if !args.json {
        emit(out, &header(args, reads, &place))?;
    }

    let mut store = Open::new(&place, &options)?;
    // True while the store is known to be empty (nothing written since it was created).
    let mut empty = !args.use_existing_db;
    // True once background work has been waited for since the last write.
    let mut settled = false;
    for (index, &bench) in args.benchmarks.iter().enumerate() {
        if bench.is_fresh() {
            if args.use_existing_db {
                let text = if args.json {
                    format!(
                        "{}\n",
                        json!({ "benchmark": bench.name(), "skipped": "--use-existing-db" })
                    )
                } else {
                    format!("{:<12} : skipped (--use-existing-db)\n", bench.name())
                };
                emit(out, &text)?;
                continue;
            }
            if !empty {
                store.close()?;
                place.wipe()?;
                store = Open::new(&place, &options)?;
                settled = false;
            }
        }
        if bench.reads() && !settled && !args.no_compact_wait {
            store.db.wait_for_compactions()?;
            settled = true;
        }

        let total = match bench {
            Benchmark::Fillseq
            | Benchmark::Fillrandom
            | Benchmark::Overwrite
            | Benchmark::Deleterandom => args.num,
            _ => reads,
        };
        let bar = if show_bar {
            progress::items(total, bench.name())
        } else {
            ProgressBar::hidden()
        };
        let before = store.db.stats();
        let w = Workload {
            db: &store.db,
            ks: &store.ks,
            keys,
            values: &values,
            num: args.num,
            reads,
            threads: usize::from(args.threads),
            batch_size: args.batch_size,
            read_percent: args.readwritepercent,
            seed: args.seed,
            // Each benchmark kind draws its own keys: a readrandom on an existing store
            // must not replay the sequence that filled it.
            stream: ((bench as u64) << 32) | index as u64,
            bar: &bar,
        };
        let result = match bench {
            Benchmark::Fillseq => {
                workloads::write(&w, "fillseq", Order::Sequential, WriteKind::Put)
            }
            Benchmark::Fillrandom => {
                workloads::write(&w, "fillrandom", Order::Random, WriteKind::Put)
            }
            Benchmark::Overwrite => {
                workloads::write(&w, "overwrite", Order::Random, WriteKind::Put)
            }
            Benchmark::Deleterandom => {
                workloads::write(&w, "deleterandom", Order::Random, WriteKind::Delete)
            }
            Benchmark::Readrandom => workloads::read_random(&w, false),
            Benchmark::Headrandom => workloads::read_random(&w, true),
            Benchmark::Readseq => workloads::scan(&w, false),
            Benchmark::Readreverse => workloads::scan(&w, true),
            Benchmark::Seekrandom => workloads::seek_random(&w),
            Benchmark::Readwhilewriting => workloads::read_while_writing(&w),
            Benchmark::Readrandomwriterandom => workloads::mix(&w),
            Benchmark::Count => workloads::count(&w),
            Benchmark::Compact => workloads::compact(&w),
        };
        bar.finish_and_clear();
        let mut outcome: Outcome = result?;

        let mut settle = None;
        if bench.writes() {
            empty = false;
            settled = false;
            if !args.no_compact_wait {
                let start = Instant::now();
                store.db.wait_for_compactions()?;
                settle = Some(start.elapsed());
                settled = true;
            }
            let mut cost = WriteCost::between(&before, &store.db.stats());
            // Blob files not yet listed by a flush count too: they hold the values.
            cost.blob_bytes = store
                .db
                .space_stats()
                .map_or(cost.blob_bytes, |s| s.blob_bytes + s.unflushed_blob_bytes);
            outcome.cost = Some(cost);
        }

        let memory = Memory::sample(store.db.stats());
        let text = if args.json {
            let mut v = outcome.json(args.histogram);
            if let Value::Object(m) = &mut v {
                m.insert("memory".into(), memory.json());
                m.insert("settle_secs".into(), json!(settle.map(|d| d.as_secs_f64())));
                for (k, value) in settings_json(args, reads) {
                    m.insert(k.into(), value);
                }
            }
            format!("{v}\n")
        } else {
            outcome.text(args.histogram) + &memory.text()
        };
        emit(out, &text)?;
    }
    store.close()?;
    drop(place);
    Ok(EXIT_OK)
}
