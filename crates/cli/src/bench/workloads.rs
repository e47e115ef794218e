//! The benchmarks' bodies: the timed loops, their threads, and the latency they record.
//!
//! `fillseq` runs on one thread. The random writes (`fillrandom`, `overwrite`,
//! `deleterandom`) run on `threads` threads that split `num` writes between them (each
//! with its own keys), which is how concurrent writers share a group commit. Reads
//! (`readrandom`, `readseq`, `readreverse`, `seekrandom`) and the read/write mix run on
//! `threads` threads that split `reads` operations between them; `readwhilewriting` adds
//! one writer thread that writes random keys until the readers are done. `count` calls
//! `Keyspace::len` once on the calling thread.
//!
//! Latency is recorded per operation (per batch for batched writes) with one clock read
//! per operation: a sample is the time since the previous operation of the same thread
//! ended, as db_bench's `FinishedSingleOp` measures it, so nothing between operations
//! goes unaccounted.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use cairn::{Db, Keyspace};
use cairn_harness::latency::wall_time;
use cairn_harness::split::{portion, share};
use cairn_harness::{histogram, Keys, Lap, Rng, Ticker, ValueSource};
use hdrhistogram::Histogram;
use indicatif::ProgressBar;

use super::report::{Latency, Outcome};
use crate::errors::{CliError, CliResult};

/// Operations a thread counts before it advances the shared progress bar.
const TICK: u64 = 4096;

/// Everything a benchmark needs, fixed for the run.
pub struct Workload<'a> {
    pub db: &'a Db,
    pub ks: &'a Keyspace,
    pub keys: Keys,
    pub values: &'a ValueSource,
    /// Keys are the numbers `0..num`.
    pub num: u64,
    /// Operations of the read benchmarks and the mix, split between the threads.
    pub reads: u64,
    pub threads: usize,
    /// Writes per committed batch (1: plain `insert`/`remove`).
    pub batch_size: u64,
    /// Share of reads in `readrandomwriterandom`, in percent.
    pub read_percent: u64,
    pub seed: u64,
    /// Position of the benchmark in the list, so repeated benchmarks draw new keys.
    pub stream: u64,
    pub bar: &'a ProgressBar,
}

/// Which keys a writing loop takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// `0, 1, 2, ...`
    Sequential,
    /// Uniform in `0..num`, with repeats.
    Random,
}

/// What a writing loop does with each key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Put,
    Delete,
}

/// One thread's counts and latencies.
struct Tally {
    ops: u64,
    found: u64,
    bytes: u64,
    reads: u64,
    writes: u64,
    start: Instant,
    end: Instant,
    hist: Histogram<u64>,
    write_hist: Histogram<u64>,
    clock: Lap,
}

impl Tally {
    fn start() -> CliResult<Tally> {
        let now = Instant::now();
        Ok(Tally {
            ops: 0,
            found: 0,
            bytes: 0,
            reads: 0,
            writes: 0,
            start: now,
            end: now,
            hist: histogram()?,
            write_hist: histogram()?,
            clock: Lap::at(now),
        })
    }

    /// Records the operation that just ended.
    fn record(&mut self) {
        let ns = self.clock.lap();
        self.hist.saturating_record(ns);
    }

    /// Records `n` operations that just ended together, each charged their mean time: a
    /// scan's entries, timed per batch so the clock is not read once per entry.
    fn record_batch(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        let ns = self.clock.lap();
        self.hist.saturating_record_n(ns / n, n);
    }

    /// Records the write (of a mix) that just ended.
    fn record_write(&mut self) {
        let ns = self.clock.lap();
        self.write_hist.saturating_record(ns);
    }

    fn finish(mut self) -> Tally {
        self.end = Instant::now();
        self
    }
}

impl Workload<'_> {
    fn rng(&self, thread: u64) -> Rng {
        Rng::new(self.seed, (self.stream << 16) | thread)
    }

    /// Operations thread `t` does out of `total`: `total * t / threads` up to
    /// `total * (t + 1) / threads`, so the shares of the scans match their slices.
    fn share(&self, total: u64, t: usize) -> u64 {
        let ops = share(total, t, self.threads);
        ops.end - ops.start
    }

    /// The key number where thread `t`'s slice of the key space starts.
    fn slice_start(&self, t: usize) -> u64 {
        portion(self.num, t, self.threads)
    }
}

/// Writes `limit` keys (or until `stop` is set) on the calling thread.
fn write_loop(
    w: &Workload<'_>,
    stream: u64,
    order: Order,
    kind: Write,
    limit: Option<u64>,
    stop: Option<&AtomicBool>,
) -> CliResult<Tally> {
    let mut tally = Tally::start()?;
    let mut rng = w.rng(stream);
    let mut values = w.values.cursor();
    let mut key = Vec::with_capacity(w.keys.size());
    let mut ticker = Ticker::new(w.bar, TICK);
    let next_key = |done: u64, rng: &mut Rng| match order {
        Order::Sequential => done,
        Order::Random => rng.below(w.num),
    };
    loop {
        let n = limit.map_or(w.batch_size, |l| w.batch_size.min(l - tally.ops));
        if n == 0 || stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            break;
        }
        if w.batch_size == 1 {
            w.keys.write(next_key(tally.ops, &mut rng), &mut key);
            match kind {
                Write::Put => {
                    let value = values.next_value();
                    tally.bytes += (key.len() + value.len()) as u64;
                    w.ks.insert(&key, value)?;
                }
                Write::Delete => w.ks.remove(&key)?,
            }
        } else {
            let mut batch = w.db.batch();
            for i in 0..n {
                w.keys.write(next_key(tally.ops + i, &mut rng), &mut key);
                match kind {
                    Write::Put => {
                        let value = values.next_value();
                        tally.bytes += (key.len() + value.len()) as u64;
                        batch.insert(w.ks, &key, value);
                    }
                    Write::Delete => batch.remove(w.ks, &key),
                }
            }
            batch.commit()?;
        }
        tally.record();
        tally.ops += n;
        if stop.is_none() {
            ticker.add(n);
        }
    }
    if kind == Write::Delete {
        // db_bench reports no rate for deletes.
        tally.bytes = 0;
    }
    Ok(tally.finish())
}

fn read_random_loop(w: &Workload<'_>, t: usize, head: bool) -> CliResult<Tally> {
    let mut tally = Tally::start()?;
    let mut rng = w.rng(t as u64);
    let mut key = Vec::with_capacity(w.keys.size());
    let mut ticker = Ticker::new(w.bar, TICK);
    let n = w.share(w.reads, t);
    for _ in 0..n {
        w.keys.write(rng.below(w.num), &mut key);
        let found = if head {
            w.ks.head(&key)?.is_some()
        } else {
            w.ks.get(&key)?.is_some()
        };
        if found {
            tally.found += 1;
        }
        tally.record();
        ticker.add(1);
    }
    tally.ops = n;
    Ok(tally.finish())
}

/// Entries of a scan timed together (see `scan_loop`).
const SCAN_BATCH: u64 = 1024;

/// Thread `t` scans its slice of the key space (all of it with one thread), reading at
/// most its share of `reads` entries.
fn scan_loop(w: &Workload<'_>, t: usize, reverse: bool) -> CliResult<Tally> {
    let mut tally = Tally::start()?;
    let mut ticker = Ticker::new(w.bar, TICK);
    let limit = w.share(w.reads, t);
    let lo = match t {
        0 => Bound::Unbounded,
        _ => Bound::Included(w.keys.key(w.slice_start(t))),
    };
    let hi = if t + 1 >= w.threads {
        Bound::Unbounded
    } else {
        Bound::Excluded(w.keys.key(w.slice_start(t + 1)))
    };
    let mut cursor = if reverse {
        w.ks.cursor_rev((lo, hi))
    } else {
        w.ks.cursor((lo, hi))
    };
    // Reading the clock per entry would cost a scan a tenth of its time; entries are
    // timed in batches instead, each charged its batch's mean.
    let mut batch = 0u64;
    while tally.ops < limit {
        let Some((k, v)) = cursor.next()? else { break };
        tally.bytes += (k.len() + v.len()) as u64;
        tally.ops += 1;
        batch += 1;
        if batch == SCAN_BATCH {
            tally.record_batch(batch);
            ticker.add(batch);
            batch = 0;
        }
    }
    tally.record_batch(batch);
    ticker.add(batch);
    Ok(tally.finish())
}

/// Each operation positions a range scan at a random key and reads one entry; it is
/// found if that entry has the key sought (db_bench's `seekrandom`).
fn seek_random_loop(w: &Workload<'_>, t: usize) -> CliResult<Tally> {
    let mut tally = Tally::start()?;
    let mut rng = w.rng(t as u64);
    let mut key = Vec::with_capacity(w.keys.size());
    let mut ticker = Ticker::new(w.bar, TICK);
    let n = w.share(w.reads, t);
    for _ in 0..n {
        w.keys.write(rng.below(w.num), &mut key);
        if let Some((k, _)) = w.ks.cursor(key.as_slice()..).next()? {
            if k == key.as_slice() {
                tally.found += 1;
            }
        }
        tally.record();
        ticker.add(1);
    }
    tally.ops = n;
    Ok(tally.finish())
}

fn mix_loop(w: &Workload<'_>, t: usize) -> CliResult<Tally> {
    let mut tally = Tally::start()?;
    let mut rng = w.rng(t as u64);
    let mut values = w.values.cursor();
    let mut key = Vec::with_capacity(w.keys.size());
    let mut ticker = Ticker::new(w.bar, TICK);
    let n = w.share(w.reads, t);
    for _ in 0..n {
        w.keys.write(rng.below(w.num), &mut key);
        if rng.below(100) < w.read_percent {
            if w.ks.get(&key)?.is_some() {
                tally.found += 1;
            }
            tally.reads += 1;
            tally.record();
        } else {
            w.ks.insert(&key, values.next_value())?;
            tally.writes += 1;
            tally.record_write();
        }
        ticker.add(1);
    }
    tally.ops = n;
    Ok(tally.finish())
}

fn spawn<'scope, 'env, F>(
    s: &'scope Scope<'scope, 'env>,
    name: String,
    f: F,
) -> CliResult<ScopedJoinHandle<'scope, CliResult<Tally>>>
where
    F: FnOnce() -> CliResult<Tally> + Send + 'scope,
{
    thread::Builder::new()
        .name(name.clone())
        .spawn_scoped(s, f)
        .map_err(|e| CliError::msg(format!("starting thread {name} failed: {e}")))
}

fn join(handle: ScopedJoinHandle<'_, CliResult<Tally>>) -> CliResult<Tally> {
    handle
        .join()
        .map_err(|_| CliError::msg("a benchmark thread panicked"))?
}

/// Runs `f(t)` on `w.threads` threads and collects their tallies.
fn on_threads<F>(w: &Workload<'_>, f: F) -> CliResult<Vec<Tally>>
where
    F: Fn(usize) -> CliResult<Tally> + Sync,
{
    thread::scope(|s| {
        let f = &f;
        let handles = (0..w.threads)
            .map(|t| spawn(s, format!("bench-{t}"), move || f(t)))
            .collect::<CliResult<Vec<_>>>()?;
        handles.into_iter().map(join).collect()
    })
}

/// What a benchmark counts besides operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counts {
    /// Operations only (writes, scans).
    Plain,
    /// Lookups and how many found their key.
    Lookups,
    /// Reads and writes of a mix, with separate latencies.
    Mix,
}

/// The threads' tallies as one outcome (ops, counts, time, merged histograms).
fn combine(
    name: &'static str,
    tallies: Vec<Tally>,
    counts: Counts,
    per_sample: u64,
) -> CliResult<Outcome> {
    let mut hist = histogram()?;
    let mut write_hist = histogram()?;
    let (mut ops, mut found, mut bytes, mut reads, mut writes) = (0, 0, 0, 0, 0);
    let mut thread_time = Duration::ZERO;
    for t in &tallies {
        ops += t.ops;
        found += t.found;
        bytes += t.bytes;
        reads += t.reads;
        writes += t.writes;
        thread_time += t.end.duration_since(t.start);
        hist.add(&t.hist)?;
        write_hist.add(&t.write_hist)?;
    }
    let mut outcome = Outcome {
        name,
        ops,
        threads: tallies.len(),
        elapsed: wall_time(tallies.iter().map(|t| (t.start, t.end))),
        thread_time,
        bytes,
        found: None,
        mix: None,
        writer_ops: None,
        latency: vec![Latency {
            label: "",
            per_sample,
            hist,
        }],
        cost: None,
    };
    match counts {
        Counts::Plain => {}
        Counts::Lookups => outcome.found = Some((found, ops)),
        Counts::Mix => {
            outcome.found = Some((found, reads));
            outcome.mix = Some((reads, writes));
            if let Some(first) = outcome.latency.first_mut() {
                first.label = "reads";
            }
            outcome.latency.push(Latency {
                label: "writes",
                per_sample: 1,
                hist: write_hist,
            });
        }
    }
    Ok(outcome)
}

/// A single-threaded writing benchmark over `num` keys.
pub fn write(
    w: &Workload<'_>,
    name: &'static str,
    order: Order,
    kind: Write,
) -> CliResult<Outcome> {
    if w.threads <= 1 || order == Order::Sequential {
        let tally = write_loop(w, 0, order, kind, Some(w.num), None)?;
        return combine(name, vec![tally], Counts::Plain, w.batch_size);
    }
    let threads = w.threads as u64;
    let share = |t: usize| w.num / threads + u64::from((t as u64) < w.num % threads);
    let tallies = on_threads(w, |t| {
        write_loop(w, t as u64, order, kind, Some(share(t)), None)
    })?;
    combine(name, tallies, Counts::Plain, w.batch_size)
}

/// `readrandom`: point lookups of random keys; `headrandom` (`head`): the same lookups
/// for the entries' heads only (no value is copied or, when values are kept apart, read).
pub fn read_random(w: &Workload<'_>, head: bool) -> CliResult<Outcome> {
    let tallies = on_threads(w, |t| read_random_loop(w, t, head))?;
    let name = if head { "headrandom" } else { "readrandom" };
    combine(name, tallies, Counts::Lookups, 1)
}

/// `readseq` / `readreverse`: full scans, ascending or descending.
pub fn scan(w: &Workload<'_>, reverse: bool) -> CliResult<Outcome> {
    let tallies = on_threads(w, |t| scan_loop(w, t, reverse))?;
    let name = if reverse { "readreverse" } else { "readseq" };
    combine(name, tallies, Counts::Plain, 1)
}

/// `seekrandom`: a range scan positioned at a random key, one entry read.
pub fn seek_random(w: &Workload<'_>) -> CliResult<Outcome> {
    let tallies = on_threads(w, |t| seek_random_loop(w, t))?;
    combine("seekrandom", tallies, Counts::Lookups, 1)
}

/// `readrandomwriterandom`: each operation reads a random key, or with probability
/// `100 - read_percent` % writes one.
pub fn mix(w: &Workload<'_>) -> CliResult<Outcome> {
    let tallies = on_threads(w, |t| mix_loop(w, t))?;
    combine("readrandomwriterandom", tallies, Counts::Mix, 1)
}

/// `readwhilewriting`: `readrandom` on `threads` threads while one more thread writes
/// random keys until they finish; the outcome counts the readers' operations.
pub fn read_while_writing(w: &Workload<'_>) -> CliResult<Outcome> {
    let stop = AtomicBool::new(false);
    let (readers, writer) = thread::scope(|s| {
        let writer = spawn(s, "bench-writer".to_string(), || {
            write_loop(w, 1 << 15, Order::Random, Write::Put, None, Some(&stop))
        });
        // Whatever happens to the readers, the writer is told to stop before the scope
        // waits for it.
        let readers = (|| {
            let handles = (0..w.threads)
                .map(|t| {
                    spawn(s, format!("bench-{t}"), move || {
                        read_random_loop(w, t, false)
                    })
                })
                .collect::<CliResult<Vec<_>>>()?;
            handles.into_iter().map(join).collect::<CliResult<Vec<_>>>()
        })();
        stop.store(true, Ordering::Relaxed);
        (readers, writer.and_then(join))
    });
    let writer = writer?;
    let mut outcome = combine("readwhilewriting", readers?, Counts::Lookups, 1)?;
    outcome.writer_ops = Some(writer.ops);
    outcome.latency.push(Latency {
        label: "writer",
        per_sample: w.batch_size,
        hist: writer.hist,
    });
    Ok(outcome)
}

/// `count`: one `Keyspace::len` on the calling thread; each key counted is an operation,
/// and the one latency sample is the whole count.
pub fn count(w: &Workload<'_>) -> CliResult<Outcome> {
    let mut tally = Tally::start()?;
    tally.ops = w.ks.len()?;
    tally.record();
    w.bar.inc(tally.ops);
    let ops = tally.ops;
    combine("count", vec![tally.finish()], Counts::Plain, ops.max(1))
}

/// `compact`: compacts the whole store (`Db::compact`: flush, then every keyspace merged
/// into one level), then collects value-log garbage until a round removes no blob file (at most 10 rounds); one op.
pub fn compact(w: &Workload<'_>) -> CliResult<Outcome> {
    let mut tally = Tally::start()?;
    w.db.compact()?;
    for _ in 0..10 {
        let removed = w.db.collect_garbage()?;
        w.db.wait_for_compactions()?;
        if removed == 0 {
            break;
        }
    }
    tally.ops = 1;
    tally.record();
    w.bar.inc(1);
    combine("compact", vec![tally.finish()], Counts::Plain, 1)
}
