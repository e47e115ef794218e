//! Running one load: open the backend, preload, the timed phase on `threads` threads
//! with a live progress bar, then the store's numbers and close.
//!
//! Timed phase: every thread starts from the same instant and stops at the first
//! operation boundary past `duration`. For each operation a thread draws the kind
//! ([`Mix`]), the key number ([`KeyPicker`]) and for writes the value length, then calls
//! the backend. Latency is recorded per operation and kind with one clock read per
//! operation: a sample is the time since the thread's previous operation ended (or since
//! it woke from a pacing sleep), so it includes drawing the key (tens of nanoseconds),
//! as `cairn bench` measures it.
//!
//! The main thread meanwhile draws the progress bar (current operations per second) and,
//! for the ordered store, samples `last_seqno - durable_seqno` every 50 ms; the last
//! thread to finish reads both seqnos once more, the moment the load ends. Threads
//! publish their counts through one padded atomic each (a plain store, no contention).
//! The first error stops every thread and is returned.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use cairn_harness::scratch::{dir_size, Measure};
use cairn_harness::{histogram, Lap, Rng, ValueSource, WriteCost};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;

use super::args::Plan;
use super::backend::{self, Backend};
use super::keys::{KeyChooser, KeyShape, MAX_VALUE_SIZE};
use super::mix::{Mix, OpKind};
use super::pattern::Pacer;
use super::report::{rate, Outcome, Place, Seqnos, ThreadCounts};
use crate::errors::{CliError, CliResult};
use crate::progress;

/// Entries per preload batch.
const PRELOAD_BATCH: u64 = 1000;
/// How often the main thread samples progress and the durability gap.
const TICK: Duration = Duration::from_millis(50);
/// Random stream of the preload's value lengths (thread streams are 1..=threads).
const PRELOAD_STREAM: u64 = 0;

/// One thread's published operation count, alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

/// What the threads share.
struct Shared<'a> {
    plan: &'a Plan,
    backend: &'a dyn Backend,
    shape: &'a KeyShape,
    chooser: KeyChooser,
    values: &'a ValueSource,
    start: Instant,
    stop: &'a AtomicBool,
}

/// A thread's result.
struct Tally {
    counts: ThreadCounts,
    hists: [Histogram<u64>; 3],
    /// When its last operation ended, from the common start.
    ended: Duration,
}

/// Runs one load of `plan` with the store in `dir` (for backends with files) and
/// returns what it measured. `place` is reported as where the store is.
///
/// # Errors
/// The backend's first error, or a failure to create a histogram.
pub fn run(plan: &Plan, dir: Option<&Path>, place: Option<Place>) -> CliResult<Outcome> {
    let shape = KeyShape::new(plan.key_size, plan.key_count, plan.seed)
        .map_err(|e| CliError::msg(format!("load: {e}")))?;
    let values = ValueSource::new(plan.value_size.max(MAX_VALUE_SIZE), plan.seed);
    let store = backend::open(plan.backend, dir, plan.durability)?;

    let preload = if plan.preload {
        Some(preload(plan, store.as_ref(), &shape, &values)?)
    } else {
        None
    };
    let before = store.stats();

    let (runtime, tallies, at_end, max_gap) = timed(plan, store.as_ref(), &shape, &values)?;

    let after = store.stats();
    let seqnos = at_end.map(|(last, durable)| Seqnos {
        last,
        durable,
        max_gap_seen: max_gap.max(last.saturating_sub(durable)),
    });
    store.close()?;
    let disk_bytes = match dir {
        Some(d) if plan.backend.has_files() => {
            Some(dir_size(d, Measure::Apparent).map_err(|e| CliError::msg(e.to_string()))?)
        }
        _ => None,
    };

    let mut latency = [histogram()?, histogram()?, histogram()?];
    let mut threads = Vec::with_capacity(tallies.len());
    for t in tallies {
        for (sum, h) in latency.iter_mut().zip(&t.hists) {
            sum.add(h)?;
        }
        threads.push(t.counts);
    }
    let mut latency_all = histogram()?;
    for h in &latency {
        latency_all.add(h)?;
    }
    Ok(Outcome {
        plan: plan.clone(),
        preload,
        runtime,
        threads,
        latency,
        latency_all,
        cost: match (&before, &after) {
            (Some(b), Some(a)) => Some(WriteCost::between(b, a)),
            _ => None,
        },
        disk_bytes,
        seqnos,
        place,
    })
}

/// Writes keys `0..key_count` in batches, with a progress bar; returns the count and time.
fn preload(
    plan: &Plan,
    store: &dyn Backend,
    shape: &KeyShape,
    values: &ValueSource,
) -> CliResult<(u64, Duration)> {
    let started = Instant::now();
    let bar = progress::items(plan.key_count, "preload");
    let mut rng = Rng::new(plan.seed, PRELOAD_STREAM);
    let mut cursor = values.cursor();
    let mut next = 0;
    while next < plan.key_count {
        let end = (next + PRELOAD_BATCH).min(plan.key_count);
        let batch: Vec<(Vec<u8>, Vec<u8>)> = (next..end)
            .map(|n| {
                let len = plan.value_size.sample(&mut rng, MAX_VALUE_SIZE);
                let value = cursor.next_value();
                (shape.key(n), value.get(..len).unwrap_or(value).to_vec())
            })
            .collect();
        store.load(&batch)?;
        bar.inc(end - next);
        next = end;
    }
    store.end_preload()?;
    bar.finish_and_clear();
    Ok((plan.key_count, started.elapsed()))
}

/// The bar of the timed phase: elapsed time out of the load's length, current rate.
fn timed_bar(plan: &Plan) -> ProgressBar {
    let bar = progress::items(plan.duration.as_millis() as u64, "load");
    bar.set_style(
        ProgressStyle::with_template("load [{wide_bar}] {elapsed}/{prefix}  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{:.0}s", plan.duration.as_secs_f64().ceil()));
    bar
}

/// What the timed phase measured: runtime, each thread's tally, the seqnos the moment
/// the last thread finished, and the largest durability gap sampled meanwhile.
type Timed = (Duration, Vec<Tally>, Option<(u64, u64)>, u64);

/// The timed phase.
fn timed(
    plan: &Plan,
    store: &dyn Backend,
    shape: &KeyShape,
    values: &ValueSource,
) -> CliResult<Timed> {
    let stop = AtomicBool::new(false);
    // Threads still running; the last one to finish reads the seqnos, so the gap at the
    // end is measured when the load ends, not a monitor tick later.
    let running = AtomicUsize::new(plan.threads);
    let at_end = Mutex::new(None);
    let counters: Vec<Counter> = (0..plan.threads).map(|_| Counter::default()).collect();
    let bar = timed_bar(plan);
    let shared = Shared {
        plan,
        backend: store,
        shape,
        chooser: KeyChooser::new(plan.keys, plan.key_count),
        values,
        start: Instant::now(),
        stop: &stop,
    };
    let mut max_gap = 0;
    let results: Vec<CliResult<Tally>> = thread::scope(|s| {
        let handles: Vec<_> = counters
            .iter()
            .enumerate()
            .map(|(t, counter)| {
                let shared = &shared;
                let (running, at_end) = (&running, &at_end);
                s.spawn(move || {
                    let result = worker(shared, t, &counter.0);
                    if result.is_err() {
                        shared.stop.store(true, Ordering::Relaxed);
                    }
                    if running.fetch_sub(1, Ordering::AcqRel) == 1 {
                        *at_end.lock() = shared.backend.seqnos();
                    }
                    result
                })
            })
            .collect();
        let (mut last_ops, mut last_at) = (0u64, shared.start);
        while !handles.iter().all(|h| h.is_finished()) {
            thread::sleep(TICK);
            if let Some((last, durable)) = store.seqnos() {
                max_gap = max_gap.max(last.saturating_sub(durable));
            }
            let now = Instant::now();
            let ops: u64 = counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
            let secs = now.duration_since(last_at).as_secs_f64();
            if secs >= 0.25 {
                let current = (ops - last_ops) as f64 / secs;
                bar.set_message(format!("{} ops/s, {} ops", rate(current), rate(ops as f64)));
                (last_ops, last_at) = (ops, now);
            }
            bar.set_position(now.duration_since(shared.start).as_millis() as u64);
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError::msg("load: a load thread panicked")))
            })
            .collect()
    });
    bar.finish_and_clear();
    let tallies = results.into_iter().collect::<CliResult<Vec<Tally>>>()?;
    let runtime = tallies.iter().map(|t| t.ended).max().unwrap_or_default();
    let at_end = at_end.into_inner();
    Ok((runtime, tallies, at_end, max_gap))
}

/// One load thread.
fn worker(sh: &Shared<'_>, t: usize, published: &AtomicU64) -> CliResult<Tally> {
    let plan = sh.plan;
    let pacer = Pacer::new(
        plan.pattern,
        plan.rate,
        plan.threads,
        plan.duration,
        plan.burst_on,
        plan.burst_off,
    );
    let mix: Mix = plan.mix;
    let mut rng = Rng::new(plan.seed, t as u64 + 1);
    let mut picker = sh.chooser.picker(t, plan.threads);
    let mut values = sh.values.cursor();
    let mut key = Vec::new();
    let mut buf = Vec::new();
    let mut counts = ThreadCounts::default();
    let mut hists = [histogram()?, histogram()?, histogram()?];
    let mut clock = Lap::at(Instant::now().max(sh.start));
    loop {
        let now = clock.last().duration_since(sh.start);
        if now >= plan.duration || sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let due = pacer.due(counts.ops, now);
        if due > now {
            thread::sleep(due.min(plan.duration) - now);
            clock.restart();
            continue;
        }
        let kind = mix.pick(&mut rng);
        sh.shape.write(picker.next_key(&mut rng), &mut key);
        match kind {
            OpKind::Read => {
                if sh.backend.get(&key, &mut buf)? {
                    counts.found += 1;
                }
            }
            OpKind::Write => {
                let len = plan.value_size.sample(&mut rng, MAX_VALUE_SIZE);
                let value = values.next_value();
                sh.backend.put(&key, value.get(..len).unwrap_or(value))?;
            }
            OpKind::Delete => sh.backend.delete(&key)?,
        }
        let ns = clock.lap();
        if let Some(h) = hists.get_mut(kind.index()) {
            h.saturating_record(ns);
        }
        counts.ops += 1;
        if let Some(c) = counts.by_kind.get_mut(kind.index()) {
            *c += 1;
        }
        published.store(counts.ops, Ordering::Relaxed);
    }
    Ok(Tally {
        counts,
        hists,
        ended: clock.last().duration_since(sh.start),
    })
}
