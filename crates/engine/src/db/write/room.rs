//! Room for writes: before a group is committed, the leader makes sure the memtable has
//! room, sealing it (with its log file) when full, and holds writers back while flushes
//! or compactions are behind.
//!
//! Invariants:
//! 1. Only a leader switches memtables, so the memtable cannot change under a group.
//! 2. The old log file is fsynced, and the active blob file sealed, before the new log
//!    file takes records: no file can lose a tail that a later file's records depend on,
//!    and a sealed memtable's separated values all lie in finished blob files, which its
//!    flush records.
//! 3. Writers stall (never fail) while `l0_stop_trigger` level-0 tables or
//!    `max_immutable_memtables` sealed memtables wait, and are slowed in the band from
//!    `l0_slowdown_trigger`; a background error or `close` ends the wait with an error.
//! 4. Under a memory budget, a group goes in only if the memtables' charged bytes (active
//!    and sealed, [`memtable_bytes`]) plus a bound on what the group adds
//!    (`Job::memtable_charge`) fit the memtable share: otherwise the leader seals the
//!    active memtable and asks for every sealed one to be flushed, then waits for the
//!    flushes. So the charged bytes never pass the share, except by a group that alone is
//!    larger than it, which goes in once every memtable before it is flushed. Sealing
//!    also asks for the flush at once (not after `memtables_per_flush`) once the
//!    memtables hold half the share.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::db::inner::{Inner, State};
use crate::db::log::poison;
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::wal;

/// How long a held-back writer sleeps between checks of the background state.
const STALL_WAIT: Duration = Duration::from_millis(50);

/// Memory of the memtables (charges and point indexes): the active one and those
/// waiting to be flushed.
pub(crate) fn memtable_bytes(state: &State) -> usize {
    state.imm.iter().map(|m| m.memory()).sum::<usize>() + state.mem.memory()
}

/// Largest number of level-0 tables in any keyspace.
fn max_l0(state: &State) -> usize {
    state
        .version
        .keyspaces()
        .map(|(_, k)| k.levels.first().map_or(0, Vec::len))
        .max()
        .unwrap_or(0)
}

/// What a leader must do before its group goes in ([`decide`]).
enum Step {
    /// The group fits the active memtable.
    Ready,
    /// Seal the active memtable and start a new one, asking for the flush at once with
    /// `flush_now`; with `again`, decide again afterwards.
    Seal { flush_now: bool, again: bool },
    /// Wait for background work (invariant 3 or 4).
    Stall(Stall),
    /// Level 0 is in the slowdown band: pause once, this long.
    Slow { level0: usize, pause: Duration },
}

/// Why writers wait.
enum Stall {
    /// This many level-0 tables, at least `l0_stop_trigger`.
    Level0(usize),
    /// The memtables hold `held` bytes and the group does not fit the `share`.
    Budget { held: usize, share: usize },
    /// This many sealed memtables wait for a flush, `max_immutable_memtables`.
    Sealed(usize),
}

/// What the leader of a group that adds at most `incoming` charged bytes must do first
/// (with `force`, a requested switch); `slowed` if it already paused in the slowdown band.
fn decide(inner: &Inner, st: &State, force: bool, incoming: usize, slowed: bool) -> Result<Step> {
    let opts = &inner.options;
    if let Some(e) = st.stopped() {
        return Err(e);
    }
    // `close` waits for this group: stop holding it back once `close` has begun.
    if st.shutting_down || inner.closed.load(Ordering::Acquire) {
        return Err(Error::invalid("the store is closed"));
    }
    let l0 = max_l0(st);
    if l0 >= opts.l0_stop_trigger {
        return Ok(Step::Stall(Stall::Level0(l0)));
    }
    if l0 >= opts.l0_slowdown_trigger && !slowed {
        // Smooth slowdown: the deeper into the slowdown band, the longer the pause.
        let band = (opts.l0_stop_trigger - opts.l0_slowdown_trigger + 1) as u64;
        let depth = (l0 - opts.l0_slowdown_trigger + 1) as u64;
        let pause = Duration::from_micros(1000 * depth / band);
        return Ok(Step::Slow { level0: l0, pause });
    }
    let held = memtable_bytes(st);
    let share = inner.budget.map(|b| b.memtables);
    if let Some(share) = share.filter(|&s| held > 0 && held.saturating_add(incoming) > s) {
        // Over the share with this group: seal what is active (a flush can then free
        // it), and wait for the flushes.
        if !st.mem.is_empty() && st.imm.len() < opts.max_immutable_memtables {
            return Ok(Step::Seal {
                flush_now: true,
                again: true,
            });
        }
        return Ok(Step::Stall(Stall::Budget { held, share }));
    }
    let wal_len = inner.log.wal_len.load(Ordering::Relaxed);
    // Separated values count like log bytes: the memtable's blob files are part of
    // its unflushed state (replayed and validated by recovery, invisible to GC).
    let log_full = wal_len.saturating_add(st.mem.blob_bytes()) >= opts.max_wal_size;
    let full = st.mem.size() >= opts.memtable_size || log_full;
    if !(full || force) || (force && st.mem.is_empty()) {
        return Ok(Step::Ready);
    }
    if st.imm.len() >= opts.max_immutable_memtables {
        return Ok(Step::Stall(Stall::Sealed(st.imm.len())));
    }
    // A log-size limit bounds the unflushed log, not just the active file: the
    // memtables it seals are flushed without waiting for `memtables_per_flush`; so
    // are they once they hold half the memory budget's share (invariant 4).
    let pressed = share.is_some_and(|s| held >= s / 2);
    Ok(Step::Seal {
        flush_now: force || log_full || pressed,
        again: false,
    })
}

/// Makes sure the memtable has room for a group that adds at most `incoming` charged
/// bytes (or, with `force`, switches memtables if the current one holds anything),
/// slowing the writer while compaction is behind or the memtables fill their share of
/// the memory budget (invariant 4).
pub(super) fn make_room(inner: &Inner, force: bool, incoming: usize) -> Result<()> {
    let mut slowed = false;
    let mut stalled = false;
    loop {
        let mut st = inner.state.lock();
        let why = match decide(inner, &st, force, incoming, slowed)? {
            Step::Ready => {
                if force && !st.imm.is_empty() {
                    // Nothing new to seal, but what is sealed must still be flushed.
                    st.flush_requested = true;
                    inner.bg_cv.notify_all();
                }
                return Ok(());
            }
            Step::Seal { flush_now, again } => {
                switch_memtable(inner, &mut st, flush_now)?;
                if again {
                    continue;
                }
                return Ok(());
            }
            Step::Slow { level0, pause } => {
                drop(st);
                tracing::debug!(
                    level0_tables = level0,
                    "write slowdown: level 0 is filling up"
                );
                inner.stats.stalls.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(pause);
                slowed = true;
                continue;
            }
            Step::Stall(why) => why,
        };
        if !stalled {
            stalled = true;
            match why {
                Stall::Level0(l0) => tracing::warn!(
                    level0_tables = l0,
                    "write stall: writers wait for compaction to reduce level 0"
                ),
                Stall::Budget { held, share } => tracing::debug!(
                    memtable_bytes = held,
                    memtable_share = share,
                    "write stall: the memtables fill their share of the memory budget"
                ),
                Stall::Sealed(n) => tracing::warn!(
                    sealed_memtables = n,
                    "write stall: writers wait for a flush"
                ),
            }
        }
        inner.stats.stalls.fetch_add(1, Ordering::Relaxed);
        if matches!(why, Stall::Budget { .. }) {
            st.flush_requested = true;
        }
        inner.bg_cv.notify_all();
        inner.stall_cv.wait_for(&mut st, STALL_WAIT);
    }
}

/// The active memtable, if a group that adds at most `incoming` charged bytes goes into
/// it as it is: no switch, no stall, no slowdown, no background error, and the state lock
/// free. A leader that must not wait asks this instead of making room. The memtable stays
/// the active one until its group is in, because only a leader switches memtables; a
/// flush or compaction may change level 0 meanwhile, as it may after [`make_room`]
/// returns.
///
/// # Errors
/// As [`make_room`]: a background error, or the store closing.
pub(super) fn room_as_is(inner: &Inner, incoming: usize) -> Result<Option<Arc<Memtable>>> {
    let Some(st) = inner.state.try_lock() else {
        return Ok(None);
    };
    Ok(match decide(inner, &st, false, incoming, false)? {
        Step::Ready => Some(Arc::clone(&st.mem)),
        _ => None,
    })
}

/// Seals the log file (fsync) and the memtable, and starts new ones; with `flush_now`,
/// asks for every sealed memtable to be flushed at once.
fn switch_memtable(inner: &Inner, st: &mut State, flush_now: bool) -> Result<()> {
    let id = inner.new_file_id();
    {
        let mut wal = inner.log.wal.lock();
        if wal.poisoned.is_some() {
            return Err(Error::Poisoned);
        }
        let outcome = (|| -> Result<wal::Writer> {
            inner.log.drain_pending(&mut wal)?;
            // Seal the blob file with the memtable: the frozen memtable's separated values
            // all point into files finished now, which its flush records (FORMAT.md §12).
            wal.blob.rotate()?;
            wal.blob_unsynced = false;
            st.mem.attach_blob_files(wal.blob.take_sealed());
            let synced = match wal.writer.as_mut() {
                Some(w) => w.sync()?,
                None => false,
            };
            inner.log.count_sync(synced);
            wal::Writer::create(inner.fs.as_ref(), &inner.dir, id)
        })();
        match outcome {
            Ok(writer) => {
                if let Some(old) = wal.writer.replace(writer) {
                    inner.log.wal_bytes.fetch_add(old.len(), Ordering::Relaxed);
                }
                wal.synced = wal.appended;
                wal.bg_synced_len = 0;
                wal.ahead_asked = false;
                wal.ahead_pending = false;
                inner
                    .durable_seqno
                    .fetch_max(wal.appended, Ordering::AcqRel);
                inner
                    .log
                    .wal_len
                    .store(wal::FILE_HEADER_LEN as u64, Ordering::Relaxed);
            }
            Err(e) => {
                poison(&mut wal, &e);
                return Err(e);
            }
        }
    }
    let old = std::mem::replace(
        &mut st.mem,
        Arc::new(Memtable::with_huge_pages(
            id,
            inner.options.memtable_size,
            inner.options.memtable_huge_pages,
        )),
    );
    st.imm.push(old);
    st.flush_requested |= flush_now;
    st.last_seal = std::time::Instant::now();
    inner.install(st);
    inner.bg_cv.notify_all();
    Ok(())
}
