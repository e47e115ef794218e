//! Background work and store-wide changes: the flush/compaction threads, the log thread,
//! keyspace creation and removal, waiting for work to settle, statistics and shutdown.
//!
//! Scheduling: a background thread flushes the oldest sealed memtables first (writers may
//! be waiting on them) once `memtables_per_flush` are sealed, a flush is asked for, or no
//! memtable has been sealed for [`IDLE_FLUSH_AFTER`]; otherwise runs the most urgent
//! compaction of a keyspace that has none running, otherwise — at most once per
//! `Options::expiry_check_interval` — rewrites a table whose earliest expiry has passed
//! (`compaction::pick_expired`), otherwise sleeps until woken, the next expiry check is
//! due or sealed memtables have idled. At most one flush runs at a time and at most one
//! compaction per keyspace, so edits never conflict.
//!
//! A failed flush or compaction records the store's background error: writes fail from
//! then on (reads continue) and the store must be reopened, which recovers from the WAL
//! and the manifest as after a crash.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{flush, write, Inner, Stats, DEFAULT_KEYSPACE};
use crate::compaction;
use crate::error::{Error, Result};
use crate::key::KeyspaceId;
use crate::version::{Edit, NUM_LEVELS};

/// Time after the last memtable was sealed at which sealed memtables are flushed even if
/// fewer than `memtables_per_flush` wait.
pub(crate) const IDLE_FLUSH_AFTER: Duration = Duration::from_secs(1);

/// Counters of background work.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) stalls: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) flush_bytes: AtomicU64,
    pub(crate) compaction_bytes: AtomicU64,
    /// Key and value bytes appended to blob files (separated writes, GC relocations).
    pub(crate) blob_bytes: AtomicU64,
}

/// Starts the log thread and the flush/compaction threads.
pub(crate) fn start(inner: &Arc<Inner>) -> Result<()> {
    let mut threads = inner.threads.lock();
    let log = Arc::clone(inner);
    threads.push(
        std::thread::Builder::new()
            .name("cairn-log".into())
            .spawn(move || write::log_thread(log))
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
                st.bg_error.get_or_insert(("flush", e));
            }
            inner.stall_cv.notify_all();
            inner.bg_cv.notify_all();
            continue;
        }
        if st.bg_error.is_none() {
            let choice = compaction::pick(&st.version, &inner.options, &st.compacting);
            if let Some(choice) = choice {
                let ks = choice.keyspace;
                st.compacting.push(ks);
                drop(st);
                let outcome = compaction::run(inner, &choice);
                st = inner.state.lock();
                st.compacting.retain(|k| *k != ks);
                if let Err(e) = outcome {
                    st.bg_error.get_or_insert(("compaction", e));
                }
                inner.stall_cv.notify_all();
                inner.bg_cv.notify_all();
                continue;
            }
        }
        if st.bg_error.is_none() && Instant::now() >= st.next_expiry_check {
            st.next_expiry_check = Instant::now() + inner.options.expiry_check_interval;
            drop(st);
            // Learning expiries opens tables (I/O): outside the state lock. A table that
            // cannot be opened is left to the reads that will report it.
            let _ = inner.tables.learn_expiry(inner);
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
fn pick_expired_now(inner: &Inner, st: &super::State) -> Option<compaction::Choice> {
    let now = inner.options.clock.now_ms();
    compaction::pick_expired(&st.version, &st.compacting, now, |t| {
        inner.tables.cached_expiry(t.id).flatten()
    })
}

/// Runs `choice` with its keyspace marked busy, releasing the state lock meanwhile;
/// records a failure as the background error.
fn run_compaction<'a>(
    inner: &'a Inner,
    mut st: MutexGuard<'a, super::State>,
    choice: &compaction::Choice,
) -> MutexGuard<'a, super::State> {
    let ks = choice.keyspace;
    st.compacting.push(ks);
    drop(st);
    let outcome = compaction::run(inner, choice);
    let mut st = inner.state.lock();
    st.compacting.retain(|k| *k != ks);
    if let Err(e) = outcome {
        st.bg_error.get_or_insert(("compaction", e));
    }
    inner.stall_cv.notify_all();
    inner.bg_cv.notify_all();
    st
}

/// Rewrites every table whose earliest expiry has passed; returns the compactions run.
pub(crate) fn compact_expired(inner: &Inner) -> Result<usize> {
    inner.check_writable()?;
    run_until_none(
        inner,
        || inner.tables.learn_expiry(inner),
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
    mut pick: impl FnMut(&super::State) -> Option<compaction::Choice>,
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
fn run_now(
    inner: &Inner,
    st: MutexGuard<'_, super::State>,
    choice: &compaction::Choice,
) -> Result<()> {
    let st = run_compaction(inner, st, choice);
    match &st.bg_error {
        Some((during, e)) => Err(Error::Stopped {
            during,
            cause: Box::new(e.duplicate()),
        }),
        None => Ok(()),
    }
}

/// Creates keyspace `name` (or returns the existing one's id).
pub(crate) fn create_keyspace(inner: &Inner, name: &str) -> Result<KeyspaceId> {
    crate::version::check_keyspace_name(name)?;
    inner.check_writable()?;
    let mut st = inner.state.lock();
    if let Some((id, _)) = st.version.keyspace_by_name(name) {
        return Ok(id);
    }
    let id = st.version.next_keyspace_id();
    let next = id
        .checked_add(1)
        .ok_or_else(|| Error::invalid("keyspace ids are exhausted"))?;
    let edit = Edit {
        created_keyspaces: vec![(KeyspaceId(id), name.to_string())],
        next_keyspace_id: Some(next),
        ..Edit::default()
    };
    if let Err(e) = flush::log_and_apply(inner, &mut st, edit) {
        st.bg_error
            .get_or_insert_with(|| ("manifest write", e.duplicate()));
        return Err(e);
    }
    super::read::install(inner, &st);
    Ok(KeyspaceId(id))
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
pub(crate) fn relocate(inner: &Inner, files: &[u64]) -> Result<bool> {
    let mut ran = false;
    // Each run removes at least one referencing table from the set; bounded anyway.
    for _ in 0..10_000 {
        inner.check_writable()?;
        // Which tables reference the files: learned outside the state lock (opens tables).
        let (sv, _) = super::read::acquire(inner, None);
        let mut referencing = std::collections::BTreeSet::new();
        for (_, ks) in sv.version.keyspaces() {
            for t in ks.levels.iter().flatten() {
                let reader = inner.tables.get(inner, t.id)?;
                if reader.blob_refs().iter().any(|(id, _)| files.contains(&id)) {
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

/// Creates keyspace `name` if needed and records its options in the manifest if they
/// differ from the recorded ones (one edit for both).
pub(crate) fn create_keyspace_with(
    inner: &Inner,
    name: &str,
    options: &crate::options::KeyspaceOptions,
) -> Result<KeyspaceId> {
    crate::version::check_keyspace_name(name)?;
    inner.check_writable()?;
    let threshold = options.blob_threshold.map(|t| t as u64);
    let mut st = inner.state.lock();
    let mut edit = Edit::default();
    let id = match st.version.keyspace_by_name(name) {
        Some((id, ks)) if ks.blob_threshold == threshold => return Ok(id),
        Some((id, _)) => id,
        None => {
            let id = st.version.next_keyspace_id();
            let next = id
                .checked_add(1)
                .ok_or_else(|| Error::invalid("keyspace ids are exhausted"))?;
            edit.created_keyspaces = vec![(KeyspaceId(id), name.to_string())];
            edit.next_keyspace_id = Some(next);
            KeyspaceId(id)
        }
    };
    edit.blob_thresholds = vec![(id, threshold)];
    if let Err(e) = flush::log_and_apply(inner, &mut st, edit) {
        st.bg_error
            .get_or_insert_with(|| ("manifest write", e.duplicate()));
        return Err(e);
    }
    super::read::install(inner, &st);
    Ok(id)
}

/// Drops keyspace `name` and everything in it.
pub(crate) fn drop_keyspace(inner: &Inner, name: &str) -> Result<()> {
    inner.check_writable()?;
    if name == DEFAULT_KEYSPACE {
        return Err(Error::invalid("the default keyspace cannot be dropped"));
    }
    {
        let mut st = inner.state.lock();
        let Some((id, _)) = st.version.keyspace_by_name(name) else {
            return Err(Error::invalid(format!("no keyspace named {name:?}")));
        };
        // A running compaction of the keyspace would commit into a keyspace that no
        // longer exists; wait for it.
        while st.compacting.contains(&id) {
            inner.stall_cv.wait_for(&mut st, Duration::from_millis(20));
        }
        let edit = Edit {
            dropped_keyspaces: vec![id],
            ..Edit::default()
        };
        if let Err(e) = flush::log_and_apply(inner, &mut st, edit) {
            st.bg_error
                .get_or_insert_with(|| ("manifest write", e.duplicate()));
            return Err(e);
        }
        super::read::install(inner, &st);
    }
    flush::delete_obsolete_files(inner);
    Ok(())
}

/// Waits until `done` holds for the state, or a background error stops progress.
fn wait_until(inner: &Inner, done: impl Fn(&super::State) -> bool) -> Result<()> {
    let mut st = inner.state.lock();
    loop {
        if let Some((during, e)) = &st.bg_error {
            return Err(Error::Stopped {
                during,
                cause: Box::new(e.duplicate()),
            });
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

/// A snapshot of the store's statistics.
pub(crate) fn stats(inner: &Inner) -> Stats {
    let st = inner.state.lock();
    let mut tables_per_level = vec![0usize; NUM_LEVELS];
    let mut table_bytes = 0u64;
    for (_, ks) in st.version.keyspaces() {
        for (level, files) in ks.levels.iter().enumerate() {
            if let Some(n) = tables_per_level.get_mut(level) {
                *n += files.len();
            }
            table_bytes += files.iter().map(|f| f.file_size).sum::<u64>();
        }
    }
    let blob_bytes = st.version.blob_files().values().map(|b| b.file_size).sum();
    let memtable_bytes = std::iter::once(&st.mem)
        .chain(st.imm.iter())
        .map(|m| m.size() as u64)
        .sum();
    drop(st);
    let c = &inner.stats;
    Stats {
        last_seqno: inner.visible_seqno.load(Ordering::Acquire),
        durable_seqno: inner.durable_seqno.load(Ordering::Acquire),
        tables_per_level,
        table_bytes,
        memtable_bytes,
        wal_bytes_written: inner.write.wal_bytes_written(),
        flush_bytes_written: c.flush_bytes.load(Ordering::Relaxed),
        compaction_bytes_written: c.compaction_bytes.load(Ordering::Relaxed),
        blob_bytes_written: c.blob_bytes.load(Ordering::Relaxed),
        blob_bytes,
        user_bytes_written: inner.write.user_bytes.load(Ordering::Relaxed),
        flushes: c.flushes.load(Ordering::Relaxed),
        compactions: c.compactions.load(Ordering::Relaxed),
        cache_hits: inner.block_cache.hits(),
        cache_misses: inner.block_cache.misses(),
        cache_refused: inner.block_cache.refused(),
        write_stalls: c.stalls.load(Ordering::Relaxed),
    }
}

/// Stops writes, writes and fsyncs the log, and joins the background threads. Idempotent.
pub(crate) fn shutdown(inner: &Inner) -> Result<()> {
    if inner.closed.swap(true, Ordering::AcqRel) || inner.read_only {
        return Ok(());
    }
    // The group being led finishes first; later groups are refused (see `write::lead`),
    // so the sync below covers every acknowledged write, whatever its durability.
    write::wait_for_leader(inner);
    let synced = write::flush_wal(inner, true);
    {
        let mut st = inner.state.lock();
        st.shutting_down = true;
        inner.bg_cv.notify_all();
        inner.stall_cv.notify_all();
    }
    write::stop_log_thread(inner);
    let threads: Vec<_> = inner.threads.lock().drain(..).collect();
    for t in threads {
        let _ = t.join();
    }
    let bg = inner
        .state
        .lock()
        .bg_error
        .as_ref()
        .map(|(during, e)| (*during, e.duplicate()));
    match (synced, bg) {
        (Ok(()), None) => Ok(()),
        (Err(e), _) => Err(e),
        (Ok(()), Some((during, cause))) => Err(Error::Stopped {
            during,
            cause: Box::new(cause),
        }),
    }
}
