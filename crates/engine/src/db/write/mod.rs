//! The write path: group commit into the WAL under each durability mode, then the
//! memtable. One file per job:
//!
//! - `db/commit_queue.rs`: writers queue; the one at the head leads a group (group
//!   commit) with [`lead`];
//! - [`lead`]: the leader's commit of a group: assign seqnos and durability, append to
//!   the log, apply to the memtable;
//! - [`separate`]: large values moved to the value log before the group is logged;
//! - [`room`]: memtable and log rotation, and the stalls while background work is behind;
//! - [`member`]: a group member as the leader applies it;
//! - `db/log.rs`: the WAL file, the async queue and the log thread.
//!
//! A write that must not wait ([`try_write`], `Keyspace::try_insert_with`) leads a group of
//! its own, and only when no group is being led and nobody is queued; the leader
//! (`lead::try_lead`) declines it, having written nothing, where committing it would wait
//! (room in the memtable, the log's lock, an fsync, the async queue).
//!
//! Concurrent `Sync` writers share one fsync: the leader makes its group as durable as
//! its most demanding member asks. Counter operations ([`incr`], and a batch's
//! increments, [`write_counting`]) queue like writes and are resolved into Puts by the
//! leader (`lead::resolve`).
//!
//! Durability (see [`Durability`]):
//! - `Sync`: append, write to the OS, fsync, then acknowledge.
//! - `Periodic(d)`: append and write to the OS; the log thread fsyncs at least every `d`.
//! - `Buffered`: append and write to the OS.
//! - `Async`: the record joins a bounded in-memory queue that the log thread writes to
//!   the OS; the writer blocks only while the queue is full.
//! - `None`: append to the log buffer only (it reaches the OS when full, or with the next
//!   stronger write).
//!
//! Invariant: records reach the log in seqno order in every mode, because the async queue
//! and the log writer sit behind one mutex and every non-async append first drains the
//! queue. So whatever a crash leaves is a prefix, and a later `Sync` write makes every
//! earlier write durable with it. Rotation fsyncs the old log file before the new one
//! takes records, so no file can lose a tail that a later file's records depend on.

use std::sync::atomic::Ordering;

use crate::batch::WriteBatch;
use crate::db::commit_queue::{Counters, Increments};
use crate::db::commit_queue::{Done, Job};
use crate::db::conflict::Validation;
use crate::db::inner::{Inner, State};
use crate::error::{Error, Result};
use crate::key::{KeyspaceId, SeqNo};
use crate::options::Durability;
use crate::vlog::BlobFileMeta;
use crate::wal;

mod lead;
mod member;
mod room;
mod separate;

pub(crate) use room::memtable_bytes;

/// Applies `batch` atomically with `durability`; returns the seqno of its last op.
pub(crate) fn write(inner: &Inner, batch: WriteBatch, durability: Durability) -> Result<SeqNo> {
    write_with_blobs(inner, batch, durability, Vec::new())
}

/// As [`write`], with the blob files a streamed value of the batch was written to.
pub(crate) fn write_with_blobs(
    inner: &Inner,
    batch: WriteBatch,
    durability: Durability,
    blob_files: Vec<BlobFileMeta>,
) -> Result<SeqNo> {
    write_job(
        inner,
        batch,
        Increments::default(),
        durability,
        blob_files,
        None,
    )
    .map(|d| d.seqno)
}

/// As [`write`], with counter `increments` resolved by the leader among the batch's ops
/// (see `counter::Overlay::resolve_batch`); returns the seqno of the last op and the
/// increments' new values, in order. If an increment fails, nothing is written.
///
/// # Errors
/// `NotACounter`, `CounterOverflow`, or as [`write`].
pub(crate) fn write_counting(
    inner: &Inner,
    batch: WriteBatch,
    increments: Increments,
    durability: Durability,
) -> Result<Done> {
    write_job(inner, batch, increments, durability, Vec::new(), None)
}

/// As [`write`], if the leader finds no conflict with `validation` when it reaches the
/// batch (a transaction's commit; see `db/conflict.rs`). An empty batch is still checked
/// (a read-only serializable transaction commits only if its reads still hold).
///
/// # Errors
/// `Conflict` (nothing written), or as [`write`].
pub(crate) fn write_checked(
    inner: &Inner,
    batch: WriteBatch,
    durability: Durability,
    validation: Validation,
) -> Result<SeqNo> {
    if batch.is_empty() {
        // The commit point: a seqno the check's view covers. The check sees this state or
        // a later one; if the reads hold there, they held at every seqno up to it.
        let reads = &inner.reads;
        let at = SeqNo(reads.visible_seqno.load(Ordering::Acquire));
        crate::db::conflict::check(reads, &[], &validation)?;
        return Ok(at);
    }
    write_job(
        inner,
        batch,
        Increments::default(),
        durability,
        Vec::new(),
        Some(Box::new(validation)),
    )
    .map(|d| d.seqno)
}

fn write_job(
    inner: &Inner,
    batch: WriteBatch,
    increments: Increments,
    durability: Durability,
    blob_files: Vec<BlobFileMeta>,
    validation: Option<Box<Validation>>,
) -> Result<Done> {
    if batch.is_empty() && increments.is_empty() {
        return Ok(Done {
            seqno: SeqNo(inner.reads.visible_seqno.load(Ordering::Acquire)),
            counters: Counters::new(),
        });
    }
    check(inner, &batch, &increments, durability)?;
    inner.check_writable()?;
    let job = Job::Write {
        batch,
        durability,
        blob_files,
        validation,
        increments,
    };
    run(inner, job)
}

/// As [`write`] if the write can be made without waiting; `Ok(None)`, having written
/// nothing, where it would wait: for an fsync (`Sync` durability, or the log thread's), for
/// another writer (a group being led or writers queued), for room in the memtable (a
/// switch, a stall or a slowdown), for room in the async queue, or for the value log (a
/// value the keyspace separates). The write is then made, if at all, with [`write`].
/// Whether it would wait is decided before anything is written.
///
/// # Errors
/// As [`write`].
pub(crate) fn try_write(
    inner: &Inner,
    batch: WriteBatch,
    durability: Durability,
) -> Result<Option<SeqNo>> {
    if batch.is_empty() {
        return Ok(Some(SeqNo(
            inner.reads.visible_seqno.load(Ordering::Acquire),
        )));
    }
    // The background-error check needs the state lock, which flushes hold through a
    // manifest fsync: the leader makes it under `try_lock` (`room::decide`), and a
    // declined write meets it again on the way that waits.
    inner.check_open_for_writes()?;
    // Separated values are declined by the leader, on the version current when it leads.
    check(inner, &batch, &Increments::default(), durability)?;
    if matches!(durability, Durability::Sync) {
        return Ok(None);
    }
    let job = Job::Write {
        batch,
        durability,
        blob_files: Vec::new(),
        validation: None,
        increments: Increments::default(),
    };
    let done = inner
        .commits
        .try_run(job, |group| lead::try_lead(inner, group))?;
    Ok(done.map(|d| d.seqno))
}

/// Refuses a job the log or the tables cannot hold; returns whether the leader would
/// separate any of its values. Takes no lock.
fn check(
    inner: &Inner,
    batch: &WriteBatch,
    increments: &Increments,
    durability: Durability,
) -> Result<bool> {
    let version = inner.reads.supers.version();
    // The log record holds handles in place of the values the leader separates, and a
    // Put in place of each increment (the leader checks the resolved size again).
    let mut logged = batch.encoded_len();
    let mut separates = false;
    for inc in increments.iter() {
        crate::key::check_key_len(inc.key)?;
        logged += inc.key.len() + 32;
    }
    for op in batch.ops() {
        let value = op.stored();
        if separate::over_threshold(inner, &version, &op) {
            logged = logged - value.len() + separate::ENTRY_HANDLE_ALLOWANCE;
            separates = true;
        } else if value.len() > crate::table::MAX_INLINE_VALUE_LEN {
            // An inline op's stored bytes (attrs and value) must fit a table entry.
            return Err(Error::invalid(format!(
                "value of {} bytes (with its attributes) exceeds the limit of {} bytes for \
                 values kept in the tree (separated values may reach {} bytes: see \
                 KeyspaceOptions::blob_threshold)",
                value.len(),
                crate::table::MAX_INLINE_VALUE_LEN,
                u32::MAX
            )));
        }
    }
    if logged > wal::MAX_PAYLOAD_LEN {
        return Err(Error::invalid(format!(
            "write batch of {logged} bytes exceeds the limit of {} bytes",
            wal::MAX_PAYLOAD_LEN
        )));
    }
    if let Durability::Async { queue_depth: 0 } = durability {
        return Err(Error::invalid("Durability::Async needs queue_depth >= 1"));
    }
    Ok(separates)
}

/// Adds `delta` to the counter at `key` atomically with respect to every other write,
/// with `durability`; returns the counter's new value. See the module documentation.
///
/// # Errors
/// `NotACounter`, `CounterOverflow` (nothing is written), `InvalidArgument` for an
/// oversized key, or as [`write`].
pub(crate) fn incr(
    inner: &Inner,
    keyspace: KeyspaceId,
    key: &[u8],
    delta: i128,
    durability: Durability,
) -> Result<i64> {
    crate::key::check_key_len(key)?;
    if let Durability::Async { queue_depth: 0 } = durability {
        return Err(Error::invalid("Durability::Async needs queue_depth >= 1"));
    }
    inner.check_writable()?;
    let job = Job::Incr {
        keyspace,
        key: key.to_vec(),
        delta,
        durability,
    };
    run(inner, job).and_then(|d| {
        d.counters
            .first()
            .copied()
            .ok_or_else(|| Error::invalid("an increment without its new value"))
    })
}

/// Switches to a fresh memtable and log file so the current memtable can be flushed.
pub(crate) fn rotate(inner: &Inner) -> Result<()> {
    inner.check_writable()?;
    run(inner, Job::Rotate).map(|_| ())
}

/// Queues `job` and waits for its outcome (see [`crate::db::commit_queue`]).
fn run(inner: &Inner, job: Job) -> Result<Done> {
    inner.commits.run(job, |group| lead::lead(inner, group))
}

/// Writes every logged record to the OS and, with `sync`, fsyncs the log.
///
/// # Errors
/// `ReadOnly`; `Poisoned` or the I/O error that poisons the log.
pub(crate) fn flush_wal(inner: &Inner, sync: bool) -> Result<()> {
    if inner.read_only {
        return Err(Error::ReadOnly);
    }
    inner.log.flush(sync, &inner.durable_seqno)
}

/// Seals the active blob file and attaches the finished blob files to the active
/// memtable (see `Log::seal_blobs`); the caller holds the state lock.
///
/// # Errors
/// `ReadOnly`; `Poisoned` or the seal's I/O error.
pub(crate) fn seal_blobs(inner: &Inner, st: &State) -> Result<()> {
    if inner.read_only {
        return Err(Error::ReadOnly);
    }
    inner.log.seal_blobs(&st.mem)
}

/// Where the log ends now: (current log file id, its length, the largest seqno in the
/// log); see `Log::end`. The caller holds the state lock, so the log file cannot switch.
///
/// # Errors
/// `ReadOnly`; `Poisoned` or the I/O error that poisons the log.
pub(crate) fn log_end(inner: &Inner) -> Result<(u64, u64, u64)> {
    if inner.read_only {
        return Err(Error::ReadOnly);
    }
    inner.log.end()
}

#[cfg(test)]
#[path = "try_tests.rs"]
mod try_tests;
