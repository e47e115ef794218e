//! The workloads: what each one does to a store, on how many threads, and what it
//! measures. The definitions are the suite's contract (also written out for the Go driver
//! in `go/README.md`):
//!
//! - Thread `t` of `T` owns the operations `[t*X/T, (t+1)*X/T)` of a workload of `X`.
//! - Latency: one sample per operation, the time since the same thread's previous
//!   operation ended (db_bench's way: nothing between operations goes unmeasured). A batch
//!   of writes is one operation for latency, `batch` operations for throughput.
//! - Throughput: operations over the wall time from the first thread's start to the last
//!   thread's end.
//! - Every read checks what it got: a found value must have the size written, and reads
//!   of keys that must exist (after `fillrandom`, before `deleterandom`) fail the run when
//!   one is missing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use cairn_harness::keys::permuted;
use cairn_harness::latency::{nanos, wall_time};
use cairn_harness::split::share;
use cairn_harness::{KeyFormat, Lap, Ticker, ValueSource};
use hdrhistogram::Histogram;
use indicatif::ProgressBar;

use crate::data::{thread_rng, KEY_LEN};
use crate::stores::{Op, Store};

/// Operations a thread counts before it advances the shared progress bar.
const TICK: u64 = 1024;

/// One workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Keys in order, batched, on a fresh store.
    FillSeq,
    /// Every key once in a random order, batched, on a fresh store.
    FillRandom,
    /// `num` batched puts of random keys.
    Overwrite,
    /// `reads` gets of random keys, all present.
    ReadRandom,
    /// `reads` gets of keys that were never written, each between two written keys (a
    /// written key's 16 digits with the last one replaced by `x`): the path of a miss
    /// through filters and indexes, not a key-range check.
    ReadMissing,
    /// Every thread scans the whole store forward.
    ReadSeq,
    /// Every thread scans the whole store backward.
    ReadReverse,
    /// `reads / 10` seeks to random keys, each reading up to 10 entries.
    SeekRandom,
    /// `reads` operations, each a get (this percentage) or an unbatched put.
    ReadWrite(u8),
    /// `num` unbatched puts of random keys on the filled store: latency under sustained
    /// writes, with flushes and compactions running.
    PutRandom,
    /// `num` batched deletes of random keys.
    DeleteRandom,
}

impl Workload {
    /// The ordered list, in the order it runs on one store (`fillseq` on its own fresh
    /// store, then the rest on one store filled by `fillrandom`).
    pub const ORDERED: [Workload; 12] = [
        Workload::FillSeq,
        Workload::FillRandom,
        Workload::Overwrite,
        Workload::ReadRandom,
        Workload::ReadMissing,
        Workload::ReadSeq,
        Workload::ReadReverse,
        Workload::SeekRandom,
        Workload::ReadWrite(95),
        Workload::ReadWrite(50),
        Workload::PutRandom,
        Workload::DeleteRandom,
    ];

    /// The name in rows and on the command line.
    pub fn name(self) -> String {
        match self {
            Workload::FillSeq => "fillseq".into(),
            Workload::FillRandom => "fillrandom".into(),
            Workload::Overwrite => "overwrite".into(),
            Workload::ReadRandom => "readrandom".into(),
            Workload::ReadMissing => "readmissing".into(),
            Workload::ReadSeq => "readseq".into(),
            Workload::ReadReverse => "readreverse".into(),
            Workload::SeekRandom => "seekrandom".into(),
            Workload::ReadWrite(p) => format!("readwrite{p}"),
            Workload::PutRandom => "putrandom".into(),
            Workload::DeleteRandom => "deleterandom".into(),
        }
    }

    /// The number that seeds the workload's random choices: its place in the list as it
    /// was before `readmissing` joined it, so that the other workloads draw the keys they
    /// drew in earlier reports (the Go driver numbers them alike).
    pub fn seed_index(self) -> u64 {
        match self {
            Workload::FillSeq => 0,
            Workload::FillRandom => 1,
            Workload::Overwrite => 2,
            Workload::ReadRandom => 3,
            Workload::ReadSeq => 4,
            Workload::ReadReverse => 5,
            Workload::SeekRandom => 6,
            Workload::ReadWrite(95) => 7,
            Workload::ReadWrite(_) => 8,
            Workload::PutRandom => 9,
            Workload::DeleteRandom => 10,
            Workload::ReadMissing => 11,
        }
    }

    /// The workload named `name`.
    pub fn parse(name: &str) -> Option<Workload> {
        Workload::ORDERED.into_iter().find(|w| w.name() == name)
    }

    /// Whether it writes (and so is followed by the store's untimed settle).
    pub fn writes(self) -> bool {
        !matches!(
            self,
            Workload::ReadRandom
                | Workload::ReadMissing
                | Workload::ReadSeq
                | Workload::ReadReverse
                | Workload::SeekRandom
        )
    }
}

/// The sizes of a run.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Keys are the numbers `0..num`.
    pub num: u64,
    /// Threads of every workload.
    pub threads: usize,
    /// Puts or deletes per batch of the batched writes.
    pub batch: usize,
    /// Operations of `readrandom` and the mixes.
    pub reads: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Idle time after a write workload before the store's space is measured a second
    /// time (zero: not measured again).
    pub settle: Duration,
    /// Whole passes each thread of `readseq` and `readreverse` makes (at least 1).
    pub scan_passes: u64,
    /// Passes each thread of `readrandom` and `readmissing` makes over its share of the
    /// reads (at least 1); with more than one, the first is not counted.
    pub read_passes: u64,
}

impl Plan {
    /// The passes of `w` over its reads: `read_passes` for the pure random reads, else 1.
    fn read_passes(&self, w: Workload) -> u64 {
        match w {
            Workload::ReadRandom | Workload::ReadMissing => self.read_passes.max(1),
            _ => 1,
        }
    }
}

/// What a workload did.
pub struct Outcome {
    /// Operations (keys written, lookups, entries scanned, seeks).
    pub ops: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Lookups that found their key, or entries the seeks visited.
    pub found: Option<u64>,
    /// Latency of every operation, in nanoseconds.
    pub latency: Histogram<u64>,
    /// Latency of the writes of a mix, in nanoseconds.
    pub write_latency: Option<Histogram<u64>>,
}

fn histogram() -> anyhow::Result<Histogram<u64>> {
    cairn_harness::histogram().context("creating a histogram")
}

/// One thread's counts.
struct Tally {
    ops: u64,
    found: u64,
    start: Instant,
    end: Instant,
    clock: Lap,
    latency: Histogram<u64>,
    write_latency: Histogram<u64>,
}

impl Tally {
    fn start() -> anyhow::Result<Tally> {
        let now = Instant::now();
        Ok(Tally {
            ops: 0,
            found: 0,
            start: now,
            end: now,
            clock: Lap::at(now),
            latency: histogram()?,
            write_latency: histogram()?,
        })
    }

    /// Records the operation that just ended.
    fn record(&mut self) {
        let ns = self.clock.lap();
        self.latency.saturating_record(ns);
    }

    /// Records the write (of a mix) that just ended: among all operations, and apart.
    fn record_write(&mut self) {
        let ns = self.clock.lap();
        self.latency.saturating_record(ns);
        self.write_latency.saturating_record(ns);
    }
}

/// The operations `w` counts (for the progress bar).
pub fn total_ops(w: Workload, plan: &Plan, entries: u64) -> u64 {
    match w {
        Workload::FillSeq
        | Workload::FillRandom
        | Workload::Overwrite
        | Workload::PutRandom
        | Workload::DeleteRandom => plan.num,
        Workload::ReadRandom | Workload::ReadMissing | Workload::ReadWrite(_) => {
            plan.reads * plan.read_passes(w)
        }
        Workload::ReadSeq | Workload::ReadReverse => {
            entries * plan.threads as u64 * plan.scan_passes.max(1)
        }
        Workload::SeekRandom => plan.reads / 10,
    }
}

/// Runs `w` on `store`. `index` numbers the workload within the run, so that repeated
/// workloads draw different keys. `must_find`: every key of `0..num` is in the store.
pub fn run(
    store: &dyn Store,
    w: Workload,
    plan: &Plan,
    values: &ValueSource,
    index: u64,
    must_find: bool,
    bar: &ProgressBar,
) -> anyhow::Result<Outcome> {
    let errors = AtomicU64::new(0);
    let tallies: Vec<anyhow::Result<Tally>> = thread::scope(|s| {
        let handles: Vec<_> = (0..plan.threads)
            .map(|t| {
                let errors = &errors;
                s.spawn(move || {
                    let result = thread_body(store, w, plan, values, index, t, must_find, bar);
                    if result.is_err() {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a benchmark thread panicked")))
            })
            .collect()
    });
    let mut ops = 0;
    let mut found = 0;
    let mut latency = histogram()?;
    let mut write_latency = histogram()?;
    let mut spans = Vec::with_capacity(tallies.len());
    for tally in tallies {
        let tally = tally?;
        ops += tally.ops;
        found += tally.found;
        latency.add(&tally.latency).context("merging histograms")?;
        write_latency
            .add(&tally.write_latency)
            .context("merging histograms")?;
        spans.push((tally.start, tally.end));
    }
    let elapsed = wall_time(spans);
    let reads_found = matches!(
        w,
        Workload::ReadRandom
            | Workload::ReadMissing
            | Workload::ReadWrite(_)
            | Workload::SeekRandom
    );
    Ok(Outcome {
        ops,
        elapsed,
        found: reads_found.then_some(found),
        latency,
        write_latency: matches!(w, Workload::ReadWrite(_)).then_some(write_latency),
    })
}

/// Calls `read` once per read of thread `t`'s share of the plan's reads, in each of the
/// passes `w` makes ([`Plan::read_passes`]). With several passes the first warms the store
/// up and is not counted: `tally` starts afresh after it.
fn in_passes(
    plan: &Plan,
    w: Workload,
    t: usize,
    tally: &mut Tally,
    mut read: impl FnMut(&mut Tally) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let reads = share(plan.reads, t, plan.threads);
    for pass in 0..plan.read_passes(w) {
        if pass == 1 {
            *tally = Tally::start()?;
        }
        for _ in reads.clone() {
            read(tally)?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn thread_body(
    store: &dyn Store,
    w: Workload,
    plan: &Plan,
    values: &ValueSource,
    index: u64,
    t: usize,
    must_find: bool,
    bar: &ProgressBar,
) -> anyhow::Result<Tally> {
    let mut rng = thread_rng(plan.seed, index, t as u64);
    let mut ticker = Ticker::new(bar, TICK);
    let mut values = values.cursor_at(t * 7919);
    let size = values.size();
    let mut tally = Tally::start()?;
    let mut out = Vec::new();
    let num = plan.num;
    match w {
        Workload::FillSeq | Workload::FillRandom | Workload::Overwrite | Workload::DeleteRandom => {
            let mine = share(num, t, plan.threads);
            let batch = plan.batch.max(1) as u64;
            let mut keys: Vec<[u8; KEY_LEN]> = Vec::with_capacity(batch as usize);
            let (mut i, hi) = (mine.start, mine.end);
            while i < hi {
                let end = (i + batch).min(hi);
                keys.clear();
                for j in i..end {
                    let k = match w {
                        Workload::FillSeq => j,
                        Workload::FillRandom => permuted(j, num),
                        _ => rng.below(num),
                    };
                    let mut buf = [0u8; KEY_LEN];
                    KeyFormat::Decimal.fill(k, &mut buf);
                    keys.push(buf);
                }
                let mut ops: Vec<Op<'_>> = Vec::with_capacity(keys.len());
                for k in &keys {
                    if w == Workload::DeleteRandom {
                        ops.push(Op::Delete(k));
                    } else {
                        ops.push(Op::Put(k, values.next_value()));
                    }
                }
                store.write(&ops)?;
                tally.record();
                tally.ops += end - i;
                ticker.add(end - i);
                i = end;
            }
        }
        Workload::PutRandom => {
            let mut buf = [0u8; KEY_LEN];
            for _ in share(num, t, plan.threads) {
                KeyFormat::Decimal.fill(rng.below(num), &mut buf);
                store.write(&[Op::Put(&buf, values.next_value())])?;
                tally.record();
                tally.ops += 1;
                ticker.add(1);
            }
        }
        Workload::ReadRandom | Workload::ReadWrite(_) => {
            let percent = match w {
                Workload::ReadWrite(p) => u64::from(p),
                _ => 100,
            };
            let mut buf = [0u8; KEY_LEN];
            in_passes(plan, w, t, &mut tally, |tally| {
                KeyFormat::Decimal.fill(rng.below(num), &mut buf);
                if percent == 100 || rng.below(100) < percent {
                    if store.get(&buf, &mut out)? {
                        if out.len() != size {
                            bail!(
                                "{}: key {} read back {} bytes, {} were written",
                                w.name(),
                                String::from_utf8_lossy(&buf),
                                out.len(),
                                size
                            );
                        }
                        tally.found += 1;
                    } else if must_find {
                        bail!(
                            "{}: key {} is missing",
                            w.name(),
                            String::from_utf8_lossy(&buf)
                        );
                    }
                    tally.record();
                } else {
                    store.write(&[Op::Put(&buf, values.next_value())])?;
                    tally.record_write();
                }
                tally.ops += 1;
                ticker.add(1);
                Ok(())
            })?;
        }
        Workload::ReadMissing => {
            let mut buf = [0u8; KEY_LEN];
            in_passes(plan, w, t, &mut tally, |tally| {
                KeyFormat::Decimal.fill(rng.below(num), &mut buf);
                buf[KEY_LEN - 1] = b'x';
                if store.get(&buf, &mut out)? {
                    bail!(
                        "readmissing: key {} was never written but was found",
                        String::from_utf8_lossy(&buf)
                    );
                }
                tally.record();
                tally.ops += 1;
                ticker.add(1);
                Ok(())
            })?;
        }
        Workload::ReadSeq | Workload::ReadReverse => {
            let mut bad = 0u64;
            let mut n = 0u64;
            let mut pending = 0u64;
            let mut visited = 0u64;
            for _ in 0..plan.scan_passes.max(1) {
                let pass = store.scan(w == Workload::ReadReverse, &mut |k, v| {
                    if k.len() != KEY_LEN || v.len() != size {
                        bad += 1;
                    }
                    n += 1;
                    pending += 1;
                    if pending == 1024 {
                        ticker.add(pending);
                        pending = 0;
                    }
                })?;
                if must_find && pass != num {
                    bail!(
                        "{}: visited {pass} entries, the store holds {num}",
                        w.name()
                    );
                }
                visited += pass;
            }
            ticker.add(pending);
            if bad > 0 {
                bail!("{}: {bad} entries had the wrong size", w.name());
            }
            // One sample per entry is not measurable; the latency of a scan is its whole.
            tally.clock.lap();
            tally
                .latency
                .saturating_record(nanos(tally.start, Instant::now()) / n.max(1));
            tally.ops = visited;
        }
        Workload::SeekRandom => {
            let mut buf = [0u8; KEY_LEN];
            for _ in share(plan.reads / 10, t, plan.threads) {
                KeyFormat::Decimal.fill(rng.below(num), &mut buf);
                let mut first_ok = true;
                let mut seen = 0usize;
                let n = store.seek(&buf, 10, &mut |k, _v| {
                    if seen == 0 && k < buf.as_slice() {
                        first_ok = false;
                    }
                    seen += 1;
                })?;
                if !first_ok {
                    bail!("seekrandom: a seek returned a key before the one sought");
                }
                if must_find && n == 0 {
                    bail!("seekrandom: a seek into the store found nothing");
                }
                tally.found += n as u64;
                tally.record();
                tally.ops += 1;
                ticker.add(1);
            }
        }
    }
    tally.end = Instant::now();
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for w in Workload::ORDERED {
            assert_eq!(Workload::parse(&w.name()), Some(w));
        }
    }
}
