//! Background work: the flush/compaction threads and the log thread, the foreground
//! triggers that run the same work now (`Db::flush`, `compact`, `compact_expired`,
//! `collect_garbage`), waiting for work to settle, and shutdown.
//!
//! Scheduling: a background thread flushes the oldest sealed memtables first (writers may
//! be waiting on them) once `memtables_per_flush` are sealed, a flush is asked for, or no
//! memtable has been sealed for [`IDLE_FLUSH_AFTER`]; otherwise runs the most urgent
//! compaction of a keyspace that has none running, otherwise — at most once per
//! `Options::expiry_check_interval` — rewrites a table whose earliest expiry has passed
//! (`compaction::pick_expired`), otherwise — once no memtable has been sealed for
//! [`IDLE_FLUSH_AFTER`] and nothing is left to flush — merges a large level 0 into level 1
//! (`compaction::pick_idle`), otherwise sleeps until woken, the next expiry check is due
//! or sealed memtables have idled. At most one flush runs at a time and at most one
//! compaction per keyspace, so edits never conflict.
//!
//! A failed flush or compaction records the store's background error: writes fail from
//! then on (reads continue) and the store must be reopened, which recovers from the WAL
//! and the manifest as after a crash.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::inner::{Inner, State};
use super::{compact, flush, write};
use crate::compaction;
use crate::error::{Error, Result};
use crate::files::BlobId;

/// Time after the last memtable was sealed at which sealed memtables are flushed even if
/// fewer than `memtables_per_flush` wait.
pub(crate) const IDLE_FLUSH_AFTER: Duration = Duration::from_secs(1);

/// Starts the log thread and the flush/compaction threads.
pub(crate) fn start(inner: &Arc<Inner>) -> Result<()> {
    let mut threads = inner.threads.lock();
    let log = Arc::clone(inner);
    threads.push(
        std::thread::Builder::new()
            .name("cairn-log".into())
            .spawn(move || log.log.run_thread(&log.durable_seqno))
            .map_err(|e| Error::io(&inner.dir, "spawn thread", e))?,
    );
    for i in 0..inner.options.background_threads {
        let bg = Arc::clone(inner);
        threads.push(
            std::thread::Builder::new()
                .name(format!("cairn-bg-{i}"))
                .spawn(move || background_loop(&bg))
                .map_err(|e| Error::io(&inner.dir, "spawn thread", e))?,
        );
    }
    Ok(())
}

/// Starts a follower's refresh thread, if `Options::refresh_interval` asks for one.
pub(crate) fn start_refresher(inner: &Arc<Inner>) -> Result<()> {
    let Some(interval) = inner.options.refresh_interval else {
        return Ok(());
    };
    // The thread holds the store weakly: dropping the last handle ends it.
    let weak = Arc::downgrade(inner);
    let thread = std::thread::Builder::new()
        .name("cairn-follow".into())
        .spawn(move || loop {
            let Some(inner) = weak.upgrade() else { return };
            {
                let mut st = inner.state.lock();
                if st.shutting_down {
                    return;
                }
                inner.bg_cv.wait_for(&mut st, interval);
                if st.shutting_down {
                    return;
                }
            }
            // A failed refresh leaves the view as it was; the next one tries again, and an
            // explicit `Db::refresh` returns the error.
            let _ = super::follower::refresh(&inner);
        })
        .map_err(|e| Error::io(&inner.dir, "spawn thread", e))?;
    inner.threads.lock().push(thread);
    Ok(())
}

fn background_loop(inner: &Inner) {
    let mut st = inner.state.lock();
    loop {
        if st.shutting_down {
            return;
        }
        if st.bg_error.is_none() && flush::due(&st, &inner.options) && !st.flushing {
            st.flushing = true;
            drop(st);
            let outcome = flush::flush_oldest(inner);
            st = inner.state.lock();
            st.flushing = false;
            if let Err(e) = outcome {
                st.record_failure("flush", &e);
            }
            inner.stall_cv.notify_all();
            inner.bg_cv.notify_all();
            continue;
        }
        if st.bg_error.is_none() {
            let choice = compaction::pick(&st.version, &inner.options, &st.compacting);
            if let Some(choice) = choice {
                st = run_compaction(inner, st, &choice);
                continue;
            }
        }
        if st.bg_error.is_none() && Instant::now() >= st.next_expiry_check {
            st.next_expiry_check = Instant::now() + inner.options.expiry_check_interval;
            drop(st);
            // Learning expiries opens tables (I/O): outside the state lock. A table that
            // cannot be opened is left to the reads that will report it.
            let _ = learn_expiry(inner);
            st = inner.state.lock();
            if let Some(choice) = pick_expired_now(inner, &st) {
                st = run_compaction(inner, st, &choice);
                continue;
            }
        }
        // Value-log GC once the tree settles after a change that may have made garbage.
        if st.bg_error.is_none() && st.gc_due && !st.version.blob_files().is_empty() {
            st.gc_due = false;
            drop(st);
            // A failure is either recorded as the background error already (a manifest
            // write) or leaves the files for the next run.
            let _ = collect_garbage(inner);
            st = inner.state.lock();
            continue;
        }
        let mut due = st
            .next_expiry_check
            .saturating_duration_since(Instant::now());
        // Writes have paused and nothing else is due: settle level 0 (`compaction/idle.rs`).
        if st.bg_error.is_none() && st.imm.is_empty() && !st.flushing {
            if let Some(choice) = compaction::pick_idle(&st.version, &inner.options, &st.compacting)
            {
                let idle_at = st.last_seal + IDLE_FLUSH_AFTER;
                let now = Instant::now();
                if now >= idle_at {
                    st = run_compaction(inner, st, &choice);
                    continue;
                }
                due = due.min(idle_at - now);
            }
        }
        if !st.imm.is_empty() && !st.flush_requested {
            // Sealed memtables wait for `memtables_per_flush` of them while writes go on;
            // once writes pause, readers should not keep merging them.
            let idle_at = st.last_seal + IDLE_FLUSH_AFTER;
            let now = Instant::now();
            if now >= idle_at {
                st.flush_requested = true;
                continue;
            }
            due = due.min(idle_at - now);
        }
        inner
            .bg_cv
            .wait_for(&mut st, due.max(Duration::from_millis(1)));
    }
}

/// A compaction reclaiming expired entries, among keyspaces not being compacted.
fn pick_expired_now(inner: &Inner, st: &State) -> Option<compaction::Choice> {
    let now = inner.options.clock.now_ms();
    compaction::pick_expired(&st.version, &st.compacting, now, |t| {
        inner.reads.tables.cached_expiry(t.id).flatten()
    })
}

/// Runs `choice` with its keyspace marked busy, releasing the state lock meanwhile;
/// records a failure as the background error.
fn run_compaction<'a>(
    inner: &'a Inner,
    mut st: MutexGuard<'a, State>,
    choice: &compaction::Choice,
) -> MutexGuard<'a, State> {
    let ks = choice.keyspace;
    st.compacting.push(ks);
    drop(st);
    let outcome = compact::run(inner, choice);
    let mut st = inner.state.lock();
    st.compacting.retain(|k| *k != ks);
    if let Err(e) = outcome {
        st.record_failure("compaction", &e);
    }
    inner.stall_cv.notify_all();
    inner.bg_cv.notify_all();
    st
}

/// Opens every table of the current version whose earliest expiry is not known yet
/// (holding a super version, so none is deleted meanwhile).
fn learn_expiry(inner: &Inner) -> Result<()> {
    let (sv, _) = inner.acquire(None);
    inner.reads.tables.learn_expiry(&sv.version)
}

/// Rewrites every table whose earliest expiry has passed; returns the compactions run.
pub(crate) fn compact_expired(inner: &Inner) -> Result<usize> {
    inner.check_writable()?;
    run_until_none(
        inner,
        || learn_expiry(inner),
        |st| pick_expired_now(inner, st),
    )
}

/// Flushes, then compacts every keyspace down to a single level (see
/// `compaction::pick_full`); returns the number of compactions run.
pub(crate) fn compact_all(inner: &Inner) -> Result<usize> {
    flush_and_wait(inner)?;
    run_until_none(
        inner,
        || Ok(()),
        |st| compaction::pick_full(&st.version, &st.compacting),
    )
}

/// Runs, in the caller's thread, the compactions `pick` chooses (after `prepare`, each
/// time outside the state lock) until it chooses none while no other compaction holds a
/// keyspace back; returns the number run.
fn run_until_none(
    inner: &Inner,
    mut prepare: impl FnMut() -> Result<()>,
    mut pick: impl FnMut(&State) -> Option<compaction::Choice>,
) -> Result<usize> {
    let mut runs = 0;
    loop {
        inner.check_writable()?;
        prepare()?;
        let mut st = inner.state.lock();
        match pick(&st) {
            Some(choice) => {
                run_now(inner, st, &choice)?;
                runs += 1;
            }
            // Nothing left, unless a running compaction holds a keyspace back.
            None if st.compacting.is_empty() => return Ok(runs),
            None => {
                inner.stall_cv.wait_for(&mut st, Duration::from_millis(20));
            }
        }
    }
}

/// [`run_compaction`] for a caller waiting on it: a failure (recorded as the background
/// error) comes back as `Stopped`. Releases the state lock.
fn run_now(inner: &Inner, st: MutexGuard<'_, State>, choice: &compaction::Choice) -> Result<()> {
    let st = run_compaction(inner, st, choice);
    match st.stopped() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs value-log GC until nothing is left to do at once: removes unreferenced blob
/// files, compacts the tables that reference files over the garbage threshold so their
/// values move, and removes those files in turn. Returns the number of files removed.
pub(crate) fn collect_garbage(inner: &Inner) -> Result<usize> {
    inner.check_writable()?;
    let mut removed = 0;
    for _ in 0..3 {
        let outcome = super::space::collect_garbage(inner)?;
        removed += outcome.removed.len();
        if outcome.rewritten.is_empty() || !relocate(inner, &outcome.rewritten)? {
            break;
        }
    }
    Ok(removed)
}

/// Moves the live values of blob files `files` to new blob files by compacting every table
/// that references them (`compaction::pick_relocation`), one at a time; returns true if
/// any compaction ran.
///
/// # Errors
/// The background error, if one stopped the work; errors of the compactions.
pub(crate) fn relocate(inner: &Inner, files: &[BlobId]) -> Result<bool> {
    let mut ran = false;
    // Each run removes at least one referencing table from the set; bounded anyway.
    for _ in 0..10_000 {
        inner.check_writable()?;
        // Which tables reference the files: learned outside the state lock (opens tables).
        let (sv, _) = inner.acquire(None);
        let mut referencing = std::collections::BTreeSet::new();
        for (_, ks) in sv.version.keyspaces() {
            for t in ks.levels.iter().flatten() {
                let reader = inner.reads.tables.get(t.id)?;
                if reader
                    .blob_refs()
                    .iter()
                    .any(|(id, _)| files.contains(&BlobId(id)))
                {
                    referencing.insert(t.id);
                }
            }
        }
        drop(sv);
        if referencing.is_empty() {
            return Ok(ran);
        }
        let mut st = inner.state.lock();
        let choice = compaction::pick_relocation(&st.version, &st.compacting, files, |t| {
            referencing.contains(&t.id)
        });
        match choice {
            Some(choice) => {
                run_now(inner, st, &choice)?;
                ran = true;
            }
            None => {
                // The keyspaces are being compacted (or the tables just went): retry.
                inner.stall_cv.wait_for(&mut st, Duration::from_millis(20));
            }
        }
    }
    Ok(ran)
}

/// Waits until `done` holds for the state, or a background error stops progress.
fn wait_until(inner: &Inner, done: impl Fn(&State) -> bool) -> Result<()> {
    let mut st = inner.state.lock();
    loop {
        if let Some(e) = st.stopped() {
            return Err(e);
        }
        if done(&st) {
            return Ok(());
        }
        if st.shutting_down {
            return Err(Error::invalid("the store is closed"));
        }
        inner.bg_cv.notify_all();
        inner.stall_cv.wait_for(&mut st, Duration::from_millis(20));
    }
}

/// Seals the memtable and waits until every sealed memtable is flushed.
pub(crate) fn flush_and_wait(inner: &Inner) -> Result<()> {
    inner.check_writable()?;
    write::rotate(inner)?;
    wait_until(inner, |st| st.imm.is_empty() && !st.flushing)
}

/// Flushes every sealed memtable and waits until nothing is left to flush or compact.
pub(crate) fn wait_idle(inner: &Inner) -> Result<()> {
    if inner.read_only {
        return Ok(()); // no flush or compaction ever runs
    }
    {
        let mut st = inner.state.lock();
        if !st.imm.is_empty() {
            st.flush_requested = true;
            inner.bg_cv.notify_all();
        }
    }
    wait_until(inner, |st| {
        st.imm.is_empty()
            && !st.flushing
            && st.compacting.is_empty()
            && compaction::pick(&st.version, &inner.options, &[]).is_none()
    })
}

/// Stops writes, writes and fsyncs the log, and joins the background threads. Idempotent.
pub(crate) fn shutdown(inner: &Inner) -> Result<()> {
    if inner.closed.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    if inner.read_only {
        // A follower's refresh thread is the only thread a read-only store runs.
        inner.state.lock().shutting_down = true;
        inner.bg_cv.notify_all();
        let threads: Vec<_> = inner.threads.lock().drain(..).collect();
        for t in threads {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        return Ok(());
    }
    // The group being led finishes first; later groups are refused (see `write::lead::lead`),
    // so the sync below covers every acknowledged write, whatever its durability.
    inner.commits.wait_for_leader();
    let synced = write::flush_wal(inner, true);
    {
        let mut st = inner.state.lock();
        st.shutting_down = true;
        inner.bg_cv.notify_all();
        inner.stall_cv.notify_all();
    }
    inner.log.stop();
    let threads: Vec<_> = inner.threads.lock().drain(..).collect();
    for t in threads {
        let _ = t.join();
    }
    let stopped = inner.state.lock().stopped();
    match (synced, stopped) {
        (Ok(()), None) => Ok(()),
        (Err(e), _) | (Ok(()), Some(e)) => Err(e),
    }
}
