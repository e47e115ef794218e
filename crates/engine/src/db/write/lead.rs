//! The leader's commit of one group, in three steps after making room and resolving
//! counters and separated values: [`assign`] seqnos and the durability the group needs,
//! [`append`] the group's records to the log as durable as its most demanding member
//! asked, and [`apply`] its batches to the memtable, publishing their seqnos.
//!
//! Counter operations are resolved into Puts by [`resolve`] before seqnos are assigned:
//! with every earlier group in the memtable, the leader reads the counter at the visible
//! seqno, or takes the newest write of the key made earlier in its own group (see
//! `counter::Overlay`). An increment that fails (not a counter, overflow, a failed read)
//! is refused alone and gets no seqno; the rest of its group goes on. A batch's
//! increments are resolved in their place among its ops; one that fails refuses the whole
//! batch.
//!
//! Invariants:
//! 1. A group's applied members get consecutive seqnos in queue order, starting right
//!    after the visible seqno; refused members get none and write nothing.
//! 2. Seqnos become visible only after every batch of the group is in the memtable, so
//!    readers never see part of a batch or a hole.
//! 3. A member is acknowledged only when its records are as durable as its mode
//!    promises (the log's invariants hold for the whole group).

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use smallvec::SmallVec;

use super::member::{Member, Members};
use super::room::{make_room, room_as_is};
use super::separate::separate;
use crate::batch::WriteBatch;
use crate::db::commit_queue::Counters;
use crate::db::commit_queue::{Done, Job, Outcomes, Pending, GROUP_INLINE};
use crate::db::conflict;
use crate::db::counter::Overlay;
use crate::db::inner::Inner;
use crate::db::log::{poison, WalState, WAL_BYTES_PER_SYNC};
use crate::entry;
use crate::error::{Error, Result};
use crate::key::{KeyspaceId, Kind, SeqNo};
use crate::memtable::{KeyspaceBytes, Memtable};
use crate::options::Durability;

/// The leader's work for one group; returns each member's outcome, in order.
pub(super) fn lead(inner: &Inner, group: &[Pending]) -> Result<Outcomes> {
    // A group led after `close` began could append after its final log sync and be lost
    // though acknowledged; `close` waits for the group led before (`wait_for_leader`).
    if inner.closed.load(Ordering::Acquire) {
        return Err(Error::invalid("the store is closed"));
    }
    if group.iter().any(|p| matches!(p.job, Job::Rotate)) {
        make_room(inner, true, 0)?;
        let seqno = SeqNo(inner.reads.visible_seqno.load(Ordering::Acquire));
        return Ok(smallvec::smallvec![Ok(Done {
            seqno,
            counters: Counters::new(),
        })]);
    }
    let incoming = group
        .iter()
        .fold(0usize, |n, p| n.saturating_add(p.job.memtable_charge()));
    make_room(inner, false, incoming)?;
    // The memtable cannot change under the leader: only a leader rotates.
    let mem = Arc::clone(&inner.state.lock().mem);
    let mut members = resolve(inner, group);
    separate(inner, &mut members, &mem)?;

    let plan = assign(&members, inner.reads.visible_seqno.load(Ordering::Acquire))?;
    if !plan.firsts.is_empty() {
        append(inner, &members, &plan, near_full(inner, &mem))?;
        apply(inner, &members, &plan, &mem)?;
    }
    Ok(outcomes(members, &plan.lasts))
}

/// True once `mem` holds seven eighths of a memtable: the log file's background sync
/// is asked for then (`log.rs` invariant 5), so the switch's fsync finds little left.
fn near_full(inner: &Inner, mem: &Memtable) -> bool {
    let size = inner.options.memtable_size;
    mem.size() >= size - size / 8
}

/// As [`lead`] for a group of one write that must not wait (`write::try_write`): its
/// outcome if it went in without waiting, or `None`, having written nothing, where
/// committing it would wait: for room in the memtable (a switch, a stall or a slowdown),
/// for the log (held by the log thread, an fsync, a full async queue), or for the value
/// log (a value the keyspace separates, judged here on the current version).
pub(super) fn try_lead(inner: &Inner, group: &[Pending]) -> Result<Option<Outcomes>> {
    if inner.closed.load(Ordering::Acquire) {
        return Err(Error::invalid("the store is closed"));
    }
    let version = inner.reads.supers.version();
    let separates = group.iter().any(|p| match &p.job {
        Job::Write { batch, .. } => batch
            .ops()
            .any(|op| super::separate::over_threshold(inner, &version, &op)),
        Job::Incr { .. } | Job::Rotate => false,
    });
    if separates {
        return Ok(None);
    }
    let incoming = group
        .iter()
        .fold(0usize, |n, p| n.saturating_add(p.job.memtable_charge()));
    let Some(mem) = room_as_is(inner, incoming)? else {
        return Ok(None);
    };
    let members = resolve(inner, group);
    let plan = assign(&members, inner.reads.visible_seqno.load(Ordering::Acquire))?;
    if !plan.firsts.is_empty() {
        if !try_append(inner, &members, &plan, near_full(inner, &mem))? {
            return Ok(None);
        }
        apply(inner, &members, &plan, &mem)?;
    }
    Ok(Some(outcomes(members, &plan.lasts)))
}

/// What [`assign`] decided for a group.
struct Plan {
    /// The first seqno of each applied member, in order.
    firsts: SmallVec<[u64; GROUP_INLINE]>,
    /// The last seqno of each applied member, in order.
    lasts: SmallVec<[SeqNo; GROUP_INLINE]>,
    /// The group's last seqno.
    last: u64,
    /// Some member asked for `Sync`.
    sync: bool,
    /// Some member asked for its write to reach the OS (`Periodic`, `Buffered`).
    to_os: bool,
    /// Every member is `Async`: the records join the log thread's queue.
    all_async: bool,
    /// The shortest `Periodic` interval asked for.
    periodic: Option<Duration>,
    /// The smallest `Async` queue depth asked for.
    depth: usize,
}

/// Step 1: each applied member's seqnos, consecutive from `base + 1` in order
/// (invariant 1), and the strongest durability asked for.
fn assign(members: &[Member<'_>], base: u64) -> Result<Plan> {
    let mut plan = Plan {
        firsts: SmallVec::with_capacity(members.len()),
        lasts: SmallVec::with_capacity(members.len()),
        last: base,
        sync: false,
        to_os: false,
        all_async: true,
        periodic: None,
        depth: usize::MAX,
    };
    for m in members {
        let Member::Apply {
            batch, durability, ..
        } = m
        else {
            continue;
        };
        let first = plan.last + 1;
        let last = batch
            .last_seqno(SeqNo(first))?
            .ok_or_else(|| Error::invalid("empty batch in a write group"))?;
        plan.firsts.push(first);
        plan.lasts.push(last);
        plan.last = last.0;
        match durability {
            Durability::Sync => plan.sync = true,
            Durability::Periodic(d) => {
                plan.to_os = true;
                plan.periodic = Some(plan.periodic.map_or(*d, |p| p.min(*d)));
            }
            Durability::Buffered => plan.to_os = true,
            Durability::Async { queue_depth } => plan.depth = plan.depth.min(*queue_depth),
            Durability::None => {}
        }
        if !matches!(durability, Durability::Async { .. }) {
            plan.all_async = false;
        }
    }
    Ok(plan)
}

/// The batches of the applied members, in order.
fn applied<'m>(members: &'m [Member<'_>]) -> impl Iterator<Item = &'m WriteBatch> {
    members.iter().filter_map(|m| match m {
        Member::Apply { batch, .. } => Some(batch.as_ref()),
        Member::Refused(_) => None,
    })
}

/// Step 2: the group's records into the log, as durable as `plan` says: queued for the
/// log thread if every member is `Async` (waiting while the queue is full), else appended
/// after the queue is drained, handed to the OS and fsynced as asked. A failure poisons
/// the log.
fn append(inner: &Inner, members: &[Member<'_>], plan: &Plan, near_full: bool) -> Result<()> {
    append_locked(inner, inner.log.wal.lock(), members, plan, near_full)
}

/// [`append`] if it needs no waiting: the log's lock free, no fsync asked for, and room
/// in the async queue for every record. `Ok(false)`, nothing appended, otherwise.
fn try_append(inner: &Inner, members: &[Member<'_>], plan: &Plan, near_full: bool) -> Result<bool> {
    let Some(wal) = inner.log.wal.try_lock() else {
        return Ok(false);
    };
    if plan.sync
        || (plan.all_async && wal.pending.len().saturating_add(plan.firsts.len()) > plan.depth)
    {
        return Ok(false);
    }
    append_locked(inner, wal, members, plan, near_full).map(|()| true)
}

/// [`append`] with the log's lock held.
fn append_locked(
    inner: &Inner,
    mut wal: MutexGuard<'_, WalState>,
    members: &[Member<'_>],
    plan: &Plan,
    near_full: bool,
) -> Result<()> {
    let log = &inner.log;
    if wal.poisoned.is_some() {
        return Err(Error::Poisoned);
    }
    if near_full {
        log.sync_ahead(&mut wal);
    }
    let batches = applied(members);
    if plan.all_async {
        for (batch, first) in batches.zip(&plan.firsts) {
            while wal.pending.len() >= plan.depth && wal.poisoned.is_none() {
                log.wal_cv.notify_all();
                log.space_cv.wait(&mut wal);
            }
            if wal.poisoned.is_some() {
                return Err(Error::Poisoned);
            }
            wal.pending.push_back((*first, batch.encoded().to_vec()));
        }
        wal.appended = plan.last;
        log.wal_cv.notify_all();
        return Ok(());
    }
    let outcome = (|| -> Result<()> {
        log.drain_pending(&mut wal)?;
        let ws: &mut WalState = &mut wal;
        let writer = ws.writer.as_mut().ok_or(Error::Poisoned)?;
        for (batch, first) in batches.zip(&plan.firsts) {
            writer.append(*first, batch.encoded())?;
        }
        if plan.sync {
            let started = Instant::now();
            log.sync_all(ws)?;
            inner.commits.note_sync(started.elapsed());
        }
        let writer = ws.writer.as_mut().ok_or(Error::Poisoned)?;
        if plan.to_os && !plan.sync {
            writer.flush()?;
        }
        log.wal_len.store(writer.len(), Ordering::Relaxed);
        Ok(())
    })();
    if log.wal_len.load(Ordering::Relaxed) >= wal.bg_synced_len + WAL_BYTES_PER_SYNC {
        log.wal_cv.notify_all();
    }
    if let Err(e) = outcome {
        poison(&mut wal, &e);
        return Err(e);
    }
    wal.appended = plan.last;
    if plan.sync {
        wal.synced = plan.last;
        wal.last_sync = Instant::now();
        inner.durable_seqno.fetch_max(plan.last, Ordering::AcqRel);
    }
    if let Some(d) = plan.periodic {
        if wal.periodic.is_none_or(|cur| d < cur) {
            wal.periodic = Some(d);
            log.wal_cv.notify_all();
        }
    }
    Ok(())
}

/// Step 3: the group's batches into the memtable `mem` (with the blob files streamed
/// values went to), then their seqnos published (invariant 2).
fn apply(inner: &Inner, members: &[Member<'_>], plan: &Plan, mem: &Memtable) -> Result<()> {
    let mut user_bytes = 0u64;
    let mut logged = KeyspaceBytes::default();
    for m in members {
        if let Member::Apply { blob_files, .. } = m {
            mem.attach_blob_files(blob_files.to_vec());
        }
    }
    // Most groups hold a few ops: those stay on the stack.
    let mut ops: SmallVec<[(SeqNo, crate::batch::Op<'_>); 8]> = SmallVec::new();
    for (batch, first) in applied(members).zip(&plan.firsts) {
        for (seqno, op) in batch.ops_with_seqno(SeqNo(*first))? {
            // A separated value counts with its full length (the user wrote it), not the
            // length of its handle.
            let value_len = match op.kind() {
                Kind::ValueHandle => match entry::view(op.kind(), op.stored()) {
                    Ok(Some(view)) => view.body.len(),
                    _ => op.stored().len() as u64,
                },
                _ => op.stored().len() as u64,
            };
            user_bytes += op.key().len() as u64 + value_len;
            logged.add(op.keyspace(), WriteBatch::op_encoded_len(&op) as u64);
            ops.push((seqno, op));
        }
    }
    // In key order each insert starts nearest its place; none is visible before
    // `visible_seqno` below.
    crate::memtable::sort_group(&mut ops);
    mem.apply_group(&ops);
    mem.add_logged(logged);
    inner
        .stats
        .user_bytes
        .fetch_add(user_bytes, Ordering::Relaxed);
    inner
        .reads
        .visible_seqno
        .store(plan.last, Ordering::Release);
    Ok(())
}

/// Each member's outcome; `lasts` holds the last seqno of each applied member, in order.
fn outcomes(members: Members<'_>, lasts: &[SeqNo]) -> Outcomes {
    let mut lasts = lasts.iter();
    members
        .into_iter()
        .map(|m| match m {
            Member::Apply { counters, .. } => Ok(Done {
                seqno: lasts.next().copied().unwrap_or_default(),
                counters,
            }),
            Member::Refused(e) => Err(e),
        })
        .collect()
}

/// Turns the group's jobs into what the leader applies: writes as they are, increments
/// resolved into Puts (see the module documentation). Must run after every earlier group
/// is in the memtable and before this group is.
pub(super) fn resolve<'a>(inner: &Inner, group: &'a [Pending]) -> Members<'a> {
    let counters = group.iter().flat_map(|p| {
        let (single, batched) = match &p.job {
            Job::Incr { keyspace, key, .. } => (Some((*keyspace, key.as_slice())), None),
            Job::Write { increments, .. } => (None, Some(increments)),
            Job::Rotate => (None, None),
        };
        let batched = batched
            .into_iter()
            .flat_map(|incs| incs.iter().map(|i| (i.keyspace, i.key)));
        single.into_iter().chain(batched)
    });
    // Counter reads overlap their memtable misses: a pipelined run of increments reads a
    // key each, one after the other.
    let keys: SmallVec<[(KeyspaceId, &[u8]); GROUP_INLINE]> = counters.collect();
    if keys.len() > 1 {
        crate::db::read::prefetch_points(&inner.reads, &keys);
    }
    let mut overlay = Overlay::watching(keys.into_iter());
    let now_ms = inner.options.clock.now_ms();
    // The batches applied so far in this group, which a transaction's check must see
    // (`db/conflict.rs`, invariant 1). Kept only once a transaction is in the group.
    let checks = group.iter().any(|p| {
        matches!(
            &p.job,
            Job::Write {
                validation: Some(_),
                ..
            }
        )
    });
    let mut earlier: Vec<Cow<'a, WriteBatch>> = Vec::new();
    group
        .iter()
        .map(|p| match &p.job {
            Job::Write {
                batch,
                durability,
                blob_files,
                validation,
                increments,
            } => {
                if let Some(v) = validation {
                    let seen: Vec<&WriteBatch> = earlier.iter().map(AsRef::as_ref).collect();
                    if let Err(e) = conflict::check(&inner.reads, &seen, v) {
                        return Member::Refused(e);
                    }
                }
                let (batch, counters) = if increments.is_empty() {
                    overlay.record(batch, now_ms);
                    (Cow::Borrowed(batch), Counters::new())
                } else {
                    match overlay.resolve_batch(inner, batch, increments, now_ms) {
                        Ok((resolved, counters)) => (Cow::Owned(resolved), counters),
                        Err(e) => return Member::Refused(e),
                    }
                };
                if checks {
                    earlier.push(batch.clone());
                }
                Member::Apply {
                    batch,
                    durability: *durability,
                    counters,
                    blob_files,
                }
            }
            Job::Incr {
                keyspace,
                key,
                delta,
                durability,
            } => {
                let resolved =
                    overlay
                        .next_value(inner, *keyspace, key, *delta)
                        .and_then(|(n, carried)| {
                            // The new value keeps the entry's tag, metadata and expiry.
                            let attrs = carried.attrs();
                            let mut text = itoa::Buffer::new();
                            let value = text.format(n).as_bytes();
                            let mut batch =
                                WriteBatch::for_one(key.len().saturating_add(value.len()));
                            if attrs.is_empty() {
                                batch.put(*keyspace, key, value)?;
                            } else {
                                batch.put_attrs(*keyspace, key, &attrs, value)?;
                            }
                            Ok((batch, n))
                        });
                match resolved {
                    Ok((batch, counter)) => {
                        overlay.record(&batch, now_ms);
                        if checks {
                            earlier.push(Cow::Owned(batch.clone()));
                        }
                        Member::Apply {
                            batch: Cow::Owned(batch),
                            durability: *durability,
                            counters: smallvec::smallvec![counter],
                            blob_files: &[],
                        }
                    }
                    Err(e) => Member::Refused(e),
                }
            }
            Job::Rotate => Member::Refused(Error::invalid("a rotation inside a write group")),
        })
        .collect()
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod group_tests;
