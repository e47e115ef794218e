//! The flags of `cairn load` and the checked [`Plan`] they become.
//!
//! Every combination the load cannot run is refused here, before any file is created:
//! writes against the read-only constant store, `ramp` without a rate, `--durability`
//! for a backend that has none, a fixed key size too short for the key count.

use std::path::PathBuf;
use std::time::Duration;

use cairn::Durability;
use cairn_harness::{parse_durability, KeyFormat};

use super::backend::Kind;
use super::keys::{Popularity, Size, MAX_KEY_SIZE, MAX_VALUE_SIZE};
use super::mix::Mix;
use super::pattern::{parse_duration, parse_rate, Pattern};
use crate::errors::{CliError, CliResult};

/// Length of a single load when no duration is given.
pub const DEFAULT_LOAD_TIME: Duration = Duration::from_secs(10);
/// Length of each mode's load in a sweep when no duration is given.
pub const DEFAULT_SWEEP_TIME: Duration = Duration::from_secs(3);

/// Run a load against a store for a fixed time and report what it did
///
/// Without flags: 10 s on 2 threads against the ordered store (buffered durability) in a
/// temporary directory, 100,000 keys preloaded, 80% reads and 20% writes of uniformly
/// chosen keys (16-byte keys, 100-byte values). Prints throughput (in total and per
/// thread), the count and p50/p99/p99.9/max latency of each operation kind, the bytes the
/// engine wrote, the space on disk, and how many acknowledged writes were not yet durable
/// when the load ended. --json prints one JSON object instead.
///
/// --sweep runs the same load against the memory baseline and each durability mode of the
/// ordered store (3 s each unless --duration is given) and prints the trade-off table:
/// throughput, share of the baseline, p99, and what a process crash and a power loss can
/// take in each mode.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// What to load: memory (a sharded in-memory map, the baseline), cairn (the ordered
    /// store) or constant (the constant store, read-only).
    #[arg(long, value_enum, default_value_t = Kind::Cairn)]
    pub backend: Kind,
    /// Durability of the ordered store's writes: sync, periodic:<µs>, buffered,
    /// async:<queue depth> or none [default: buffered].
    #[arg(long, value_parser = parse_durability)]
    pub durability: Option<Durability>,
    /// Load threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// Length of the timed load: seconds, or with a unit (10s, 500ms, 2m) [default: 10 s,
    /// 3 s per mode with --sweep].
    #[arg(long = "load-time-sec", visible_alias = "duration", value_name = "TIME", value_parser = parse_duration)]
    pub load_time: Option<Duration>,
    /// When operations happen: consistent (flat out, or --rate), burst (--burst-on busy,
    /// --burst-off idle, in turn), ramp (rate rising linearly to --rate).
    #[arg(long, value_enum, default_value_t = Pattern::Consistent)]
    pub pattern: Pattern,
    /// Target operations per second over all threads (the final rate for ramp).
    #[arg(long, value_name = "OPS", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Busy period of the burst pattern.
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = parse_duration)]
    pub burst_on: Duration,
    /// Idle period of the burst pattern.
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = parse_duration)]
    pub burst_off: Duration,
    /// Key popularity: uniform, zipfian[:θ] (0<θ<1, default 0.99), pareto[:α] (α>1,
    /// default 1.16, the 80/20 rule) or sequential.
    #[arg(long, value_name = "DIST", default_value = "uniform", value_parser = Popularity::parse)]
    pub keys: Popularity,
    /// Operation mix in percent, e.g. read=80,write=20,delete=0 [default: read=80,write=20;
    /// read=100 for the constant backend].
    #[arg(long, value_parser = Mix::parse)]
    pub mix: Option<Mix>,
    /// Number of distinct keys (the key numbers 0..N).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub key_count: u64,
    /// Key length: N, LO..HI (uniform) or exp:MEAN. Keys are zero-padded decimal numbers,
    /// never shorter than the digits the largest number needs.
    #[arg(long, value_name = "SIZE", default_value = "16", value_parser = |s: &str| Size::parse(s, MAX_KEY_SIZE))]
    pub key_size: Size,
    /// Value length: N, LO..HI (uniform) or exp:MEAN (cut at 16 times the mean).
    #[arg(long, value_name = "SIZE", default_value = "100", value_parser = |s: &str| Size::parse(s, MAX_VALUE_SIZE))]
    pub value_size: Size,
    /// Seed of every random choice; a run is repeatable.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Print one JSON object (with --sweep: one object holding every mode) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Directory of the store [default: a temporary directory, removed at the end]. Created
    /// if missing; an ordered store already there is used as it is, nothing is deleted.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the temporary directory (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Skip loading --key-count keys before the timed phase.
    #[arg(long)]
    pub no_preload: bool,
    /// Run the load against memory and every durability mode and print the trade-offs.
    #[arg(long, conflicts_with_all = ["backend", "durability"])]
    pub sweep: bool,
}

/// A load to run: the flags, checked and with their defaults filled in.
#[derive(Debug, Clone)]
pub struct Plan {
    pub backend: Kind,
    pub durability: Durability,
    pub threads: usize,
    pub duration: Duration,
    pub pattern: Pattern,
    pub rate: Option<f64>,
    pub burst_on: Duration,
    pub burst_off: Duration,
    pub keys: Popularity,
    pub mix: Mix,
    pub key_count: u64,
    pub key_size: Size,
    pub value_size: Size,
    pub seed: u64,
    pub preload: bool,
    pub json: bool,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    pub sweep: bool,
}

impl Args {
    /// The plan these flags describe.
    ///
    /// # Errors
    /// A message for a combination that cannot run.
    pub fn plan(&self) -> CliResult<Plan> {
        let bad = |text: String| Err(CliError::msg(format!("load: {text}")));
        let mix = self.mix.unwrap_or(if self.backend == Kind::Constant {
            Mix::READ_ONLY
        } else {
            Mix::DEFAULT
        });
        if self.backend == Kind::Constant {
            if mix.writes() {
                return bad(format!(
                    "the constant backend is read-only: --mix {mix} has writes or deletes (use --mix read=100)"
                ));
            }
            if self.no_preload {
                return bad("the constant backend serves the keys its preload builds; --no-preload does not apply".into());
            }
        }
        if self.durability.is_some() && self.backend != Kind::Cairn {
            return bad(format!(
                "--durability applies to the cairn backend, not {}",
                self.backend.name()
            ));
        }
        if self.pattern == Pattern::Ramp && self.rate.is_none() {
            return bad("--pattern ramp needs --rate (the rate reached at the end)".into());
        }
        if self.dir.is_some() && !self.sweep && !self.backend.has_files() {
            return bad("--dir applies to the cairn and constant backends".into());
        }
        if let Size::Fixed(n) = self.key_size {
            let digits = KeyFormat::Decimal.width_for(self.key_count);
            if n < digits {
                return bad(format!(
                    "--key-size {n} is too small for --key-count {}: the keys are decimal numbers of up to {digits} digits",
                    self.key_count
                ));
            }
        }
        Ok(Plan {
            backend: self.backend,
            durability: self.durability.unwrap_or(Durability::Buffered),
            threads: usize::from(self.threads),
            duration: self.load_time.unwrap_or(if self.sweep {
                DEFAULT_SWEEP_TIME
            } else {
                DEFAULT_LOAD_TIME
            }),
            pattern: self.pattern,
            rate: self.rate,
            burst_on: self.burst_on,
            burst_off: self.burst_off,
            keys: self.keys,
            mix,
            key_count: self.key_count,
            key_size: self.key_size,
            value_size: self.value_size,
            seed: self.seed,
            preload: !self.no_preload,
            json: self.json,
            dir: self.dir.clone(),
            keep: self.keep,
            sweep: self.sweep,
        })
    }
}
