//! `cairn-bench`: constant-store benchmark, after the reference Sparkey `bench.c`, as a
//! library (the `cairn-bench` command, and the ordered-store peer suite
//! `cairn-ordered-peers`, run it). The stores under benchmark (Cairn's constant store and
//! its peers Sparkey C, tinycdb and cdb2) are in [`stores`].
//!
//! For each size `n` and each store: build `n` entries `key_<i> -> value_<i>`
//! (timed: wall, process CPU), report the bytes on disk, then open the store
//! and do `--lookups` random lookups of `key_<r>`, `r` uniform in `0..n` from
//! a fixed-seed RNG, checking each value is `value_<r>` (timed likewise; as
//! in the reference, the lookup time includes opening the store).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use cairn_harness::report::thousands;
use cairn_harness::{Rng, ScratchDir};
use clap::Parser;
use serde::Serialize;

pub mod measure;
pub mod plot;
pub mod stores;

use measure::measure;
use stores::{
    bench_key, bench_value, Cairn, Cdb2, Compression, ConstantStore, SparkeyC, StackBuf, TinyCdb,
};

/// Constant-store benchmark: Cairn's stores next to reference peers, one process.
#[derive(Parser, Debug)]
#[command(name = "cairn-bench", version)]
pub struct Args {
    /// Entry counts to build, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000u64, 1_000_000])]
    pub sizes: Vec<u64>,
    /// Also run 10,000,000 entries.
    #[arg(long)]
    pub big: bool,
    /// Random lookups per (store, variant, size).
    #[arg(long, default_value_t = 1_000_000)]
    /// Random lookups done.
    pub lookups: u64,
    /// Stores to run, comma-separated: cairn, sparkey-c, tinycdb, cdb2.
    #[arg(long, value_delimiter = ',', default_values = ["cairn", "sparkey-c", "tinycdb", "cdb2"])]
    pub peers: Vec<String>,
    /// Keys per batched lookup (`get_many`) for Cairn's extra "batched" rows; 0 disables
    /// them. Other stores have no batched lookup.
    #[arg(long, default_value_t = 1024)]
    pub batch: usize,
    /// Pin Cairn's index in memory (mlock, or pre-fault) when opening.
    #[arg(long)]
    pub pin_index: bool,
    /// Load Cairn's log into memory when opening (huge pages where available).
    #[arg(long)]
    pub load_log: bool,
    /// Sparkey log compressions to run, comma-separated, each optionally with its block
    /// size: `none`, `snappy:1024`, `zstd:4096` (the reference benchmark's settings).
    #[arg(long, value_delimiter = ',', default_values = ["none", "snappy:1024", "zstd:4096"])]
    pub compressions: Vec<CompressionSpec>,
    /// Block size for a compression given without one.
    #[arg(long, default_value_t = 1024)]
    pub block_size: u32,
    /// Seed of the lookup-key RNG (same key sequence for every store).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Scratch directory for the stores (default: a fresh one under the temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write an SVG bar chart of puts and lookups per CPU-second to this file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Do not run anything: read the rows of an earlier `--json` run from this file (to
    /// re-render the table or the chart).
    #[arg(long)]
    pub from_json: Option<PathBuf>,
}

/// A compression with an optional block size, as given on the command line.
#[derive(Clone, Copy, Debug)]
pub struct CompressionSpec {
    compression: Compression,
    block_size: Option<u32>,
}

impl std::str::FromStr for CompressionSpec {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        let (name, size) = match s.split_once(':') {
            Some((n, b)) => (
                n,
                Some(
                    b.trim()
                        .parse::<u32>()
                        .with_context(|| format!("block size in {s:?}"))?,
                ),
            ),
            None => (s, None),
        };
        Ok(CompressionSpec {
            compression: name.parse()?,
            block_size: size,
        })
    }
}

/// Which store and variant one row measures.
#[derive(Clone, Copy, Debug)]
enum StoreSpec {
    /// Cairn with this compression and block size; `batch` > 0 uses `get_many`.
    Cairn {
        compression: Compression,
        block_size: u32,
        batch: usize,
        pin: bool,
        load: bool,
    },
    SparkeyC(Compression, u32),
    TinyCdb,
    Cdb2,
}

impl StoreSpec {
    fn batch(self) -> usize {
        match self {
            StoreSpec::Cairn { batch, .. } => batch,
            _ => 0,
        }
    }

    fn make(self) -> Box<dyn ConstantStore> {
        match self {
            StoreSpec::Cairn {
                compression,
                block_size,
                pin,
                load,
                ..
            } => {
                let mut c = Cairn::new(compression, block_size);
                c.pin_index = pin;
                c.load_log = load;
                Box::new(c)
            }
            StoreSpec::SparkeyC(c, bs) => Box::new(SparkeyC::new(c, bs)),
            StoreSpec::TinyCdb => Box::new(TinyCdb::new()),
            StoreSpec::Cdb2 => Box::new(Cdb2::new()),
        }
    }
}

fn store_specs(args: &Args) -> anyhow::Result<Vec<StoreSpec>> {
    let mut specs = Vec::new();
    for p in &args.peers {
        match p.trim() {
            "cairn" => {
                for spec in &args.compressions {
                    let compression = spec.compression;
                    let block_size = spec.block_size.unwrap_or(args.block_size);
                    let (pin, load) = (args.pin_index, args.load_log);
                    specs.push(StoreSpec::Cairn {
                        compression,
                        block_size,
                        batch: 0,
                        pin,
                        load,
                    });
                    if args.batch > 0 {
                        specs.push(StoreSpec::Cairn {
                            compression,
                            block_size,
                            batch: args.batch,
                            pin,
                            load,
                        });
                    }
                }
            }
            "sparkey-c" | "sparkey" => {
                for spec in &args.compressions {
                    let c = spec.compression;
                    if c == Compression::Zstd {
                        eprintln!(
                            "note: skipping sparkey-c zstd: sparkey-sys 0.1.1 bundles pre-1.0 Sparkey C without zstd"
                        );
                        continue;
                    }
                    specs.push(StoreSpec::SparkeyC(
                        c,
                        spec.block_size.unwrap_or(args.block_size),
                    ));
                }
            }
            "tinycdb" | "cdb" => specs.push(StoreSpec::TinyCdb),
            "cdb2" => specs.push(StoreSpec::Cdb2),
            other => bail!("unknown peer {other:?} (cairn, sparkey-c, tinycdb, cdb2)"),
        }
    }
    Ok(specs)
}

/// One result row: one (store, variant, n).
#[derive(Serialize, serde::Deserialize, Debug)]
pub struct Row {
    /// Store name.
    pub store: String,
    /// Compression / layout variant.
    pub variant: String,
    /// Entries built.
    pub n: u64,
    /// Build time, wall seconds.
    pub create_wall_s: f64,
    /// Build time, process CPU seconds.
    pub create_cpu_s: f64,
    /// Entries built per CPU-second.
    pub puts_per_cpu_s: f64,
    /// Bytes on disk.
    pub file_bytes: u64,
    /// Random lookups done.
    pub lookups: u64,
    /// Lookup time (with the open), wall seconds.
    pub lookup_wall_s: f64,
    /// Lookup time (with the open), CPU seconds.
    pub lookup_cpu_s: f64,
    /// Lookups per CPU-second.
    pub lookups_per_cpu_s: f64,
}

fn run_one(spec: StoreSpec, dir: &Path, n: u64, lookups: u64, seed: u64) -> anyhow::Result<Row> {
    let mut store = spec.make();
    let batch = spec.batch();
    let variant = if batch > 0 {
        format!("{} get_many({batch})", store.variant())
    } else {
        store.variant()
    };
    let label = format!("{} {variant} n={n}", store.name());
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;

    eprint!("{label}: build...");
    let (built, create) = measure(|| store.build(dir, n));
    built.with_context(|| format!("{label}: build"))?;
    let file_bytes = store.disk_size(dir)?;

    eprint!(" lookups...");
    // splitmix64 from the seed itself, as the reference bench seeds its generator.
    let mut rng = Rng::from_state(seed);
    let (looked, lookup) = measure(|| -> anyhow::Result<()> {
        store.open(dir)?;
        let (mut kb, mut vb) = (StackBuf::new(), StackBuf::new());
        if batch > 0 {
            return batched_lookups(&*store, &mut rng, n, lookups, batch);
        }
        let mut out = Vec::with_capacity(64);
        for _ in 0..lookups {
            let r = rng.below(n);
            let key = bench_key(&mut kb, r);
            let want = bench_value(&mut vb, r);
            if !store.get(key, &mut out)? {
                bail!("key_{r} not found");
            }
            if out.as_slice() != want {
                bail!("key_{r}: got {:?}", String::from_utf8_lossy(&out));
            }
        }
        Ok(())
    });
    looked.with_context(|| format!("{label}: lookups"))?;
    eprintln!(" done");

    let row = Row {
        store: store.name(),
        variant,
        n,
        create_wall_s: create.wall.as_secs_f64(),
        create_cpu_s: create.cpu.as_secs_f64(),
        puts_per_cpu_s: create.per_cpu_sec(n),
        file_bytes,
        lookups,
        lookup_wall_s: lookup.wall.as_secs_f64(),
        lookup_cpu_s: lookup.cpu.as_secs_f64(),
        lookups_per_cpu_s: lookup.per_cpu_sec(lookups),
    };
    drop(store);
    std::fs::remove_dir_all(dir)?;
    Ok(row)
}

/// Lookups in batches of `batch` keys through [`ConstantStore::get_many`]; keys are
/// formatted inside the timed loop as for single lookups, and every value is checked.
fn batched_lookups(
    store: &dyn ConstantStore,
    rng: &mut Rng,
    n: u64,
    lookups: u64,
    batch: usize,
) -> anyhow::Result<()> {
    let mut keys: Vec<StackBuf> = (0..batch).map(|_| StackBuf::new()).collect();
    let mut picks = vec![0u64; batch];
    let mut vb = StackBuf::new();
    let mut done = 0u64;
    let mut failure: Option<String> = None;
    while done < lookups {
        let m = batch.min((lookups - done) as usize);
        for (k, p) in keys.iter_mut().zip(picks.iter_mut()).take(m) {
            *p = rng.below(n);
            bench_key(k, *p);
        }
        let refs: Vec<&[u8]> = keys.iter().take(m).map(StackBuf::as_bytes).collect();
        store.get_many(&refs, &mut |i, v| {
            let r = picks.get(i).copied().unwrap_or(u64::MAX);
            if v != Some(bench_value(&mut vb, r)) && failure.is_none() {
                failure = Some(format!("key_{r}: got {:?}", v.map(String::from_utf8_lossy)));
            }
        })?;
        if let Some(f) = failure.take() {
            bail!("{f}");
        }
        done += m as u64;
    }
    Ok(())
}

fn print_table(rows: &[Row]) -> std::io::Result<()> {
    let header = [
        "store",
        "variant",
        "n",
        "create wall s",
        "create cpu s",
        "puts/cpu-s",
        "file bytes",
        "lookups",
        "lookup wall s",
        "lookup cpu s",
        "lookups/cpu-s",
    ];
    let cells: Vec<[String; 11]> = rows
        .iter()
        .map(|r| {
            [
                r.store.clone(),
                r.variant.clone(),
                thousands(r.n as f64),
                format!("{:.4}", r.create_wall_s),
                format!("{:.4}", r.create_cpu_s),
                thousands(r.puts_per_cpu_s),
                thousands(r.file_bytes as f64),
                thousands(r.lookups as f64),
                format!("{:.4}", r.lookup_wall_s),
                format!("{:.4}", r.lookup_cpu_s),
                thousands(r.lookups_per_cpu_s),
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = std::io::stdout().lock();
    let line = |out: &mut dyn std::io::Write,
                fields: &mut dyn Iterator<Item = &str>|
     -> std::io::Result<()> {
        let mut first = true;
        for (i, (f, w)) in fields.zip(width).enumerate() {
            if !first {
                write!(out, "  ")?;
            }
            first = false;
            // Text columns left-aligned, numbers right-aligned.
            if i < 2 {
                write!(out, "{f:<w$}")?;
            } else {
                write!(out, "{f:>w$}")?;
            }
        }
        writeln!(out)
    };
    line(&mut out, &mut header.iter().copied())?;
    let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
    line(&mut out, &mut rule.iter().map(String::as_str))?;
    for row in &cells {
        line(&mut out, &mut row.iter().map(String::as_str))?;
    }
    Ok(())
}

/// Runs the benchmark `args` describe (or reads an earlier run's rows with `from_json`)
/// and returns its rows.
pub fn rows(args: &Args) -> anyhow::Result<Vec<Row>> {
    let mut sizes = args.sizes.clone();
    if args.big && !sizes.contains(&10_000_000) {
        sizes.push(10_000_000);
    }
    if sizes.contains(&0) {
        bail!("--sizes: every size must be at least 1");
    }
    let specs = if args.from_json.is_some() {
        Vec::new()
    } else {
        store_specs(args)?
    };
    let scratch = match &args.dir {
        Some(d) => ScratchDir::given(d),
        None => ScratchDir::temporary("cairn-bench-").context("creating a scratch directory")?,
    };
    let base = scratch.path();

    let mut rows = Vec::new();
    if let Some(path) = &args.from_json {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        rows =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        sizes.clear();
    }
    for &n in &sizes {
        for &spec in &specs {
            let dir = base.join(format!("{spec:?}-{n}").replace(['(', ')', ',', ' '], "_"));
            rows.push(run_one(spec, &dir, n, args.lookups, args.seed)?);
        }
    }
    Ok(rows)
}

/// The `cairn-bench` command: runs [`rows`], then prints the table or the JSON and
/// writes the chart.
pub fn main_with(args: &Args) -> anyhow::Result<()> {
    let rows = rows(args)?;
    if let Some(path) = &args.svg {
        let bars: Vec<plot::Bar> = rows
            .iter()
            .map(|r| plot::Bar {
                label: format!("{} {}", r.store, r.variant),
                n: r.n,
                puts: r.puts_per_cpu_s,
                lookups: r.lookups_per_cpu_s,
            })
            .collect();
        std::fs::write(
            path,
            plot::svg("Constant stores: Cairn, Sparkey C, tinycdb, cdb2", &bars),
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        print_table(&rows)?;
    }
    Ok(())
}
