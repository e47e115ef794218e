//! The write path: group commit into the WAL, the durability modes, memtable rotation.
//!
//! A writer joins a queue. The writer at its head becomes the leader: it takes the
//! batches queued behind it (up to [`GROUP_BYTES`]), makes room (rotating a full memtable,
//! slowing down while compaction is behind), assigns seqnos, appends one WAL record per
//! batch, makes the group as durable as its most demanding member asks, inserts the
//! batches into the memtable, publishes their seqnos and wakes the others. Concurrent
//! `Sync` writers therefore share one fsync. A leader then commits, once, the group that
//! queued while it led, so that small writes from a few threads do not pay a wake-up of a
//! sleeping writer per group. A writer queued behind a leader first watches, without the
//! queue lock and for at most [`SPIN_WAIT`], for its outcome to be posted (tickets finish
//! in queue order) or for the leader to step down; only then does it sleep on the
//! queue's condition variable. The watch is never relied on: the queue, under its lock,
//! decides.
//!
//! Counter operations ([`incr`]) queue like writes. The leader resolves each one into a
//! Put before it assigns seqnos: with every earlier group in the memtable, it reads the
//! counter at the visible seqno, or takes the newest write of the key made earlier in its
//! own group (see `counter::Overlay`). An increment that fails (not a counter, overflow,
//! a failed read) is refused alone and gets no seqno; the rest of its group goes on.
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

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use smallvec::SmallVec;

use super::counter::Overlay;
use super::{counter, Inner, State};
use crate::batch::{Op, WriteBatch};
use crate::entry;
use crate::error::{Error, Result};
use crate::key::Kind;
use crate::key::{KeyspaceId, SeqNo};
use crate::memtable::{KeyspaceBytes, Memtable};
use crate::options::Durability;
use crate::version::Version;
use crate::vlog::{self, BlobFileMeta};
use crate::wal;

/// Most bytes of batches one leader commits at once.
const GROUP_BYTES: usize = 1 << 20;

/// Log bytes after which the log thread fsyncs the log file in the background (through a
/// second handle, without holding up writers), so that the fsync a memtable switch needs
/// finds little left to write.
const WAL_BYTES_PER_SYNC: u64 = 4 << 20;

/// How long a held-back writer sleeps between checks of the background state.
const STALL_WAIT: Duration = Duration::from_millis(50);

/// What a queued writer wants.
enum Job {
    Write {
        batch: WriteBatch,
        durability: Durability,
        /// Blob files written by the caller for this batch alone (a streamed value), to be
        /// recorded with the memtable the batch goes into.
        blob_files: Vec<BlobFileMeta>,
    },
    /// Add `delta` to the counter at `key`; the leader turns it into a Put.
    Incr {
        keyspace: KeyspaceId,
        key: Vec<u8>,
        delta: i128,
        durability: Durability,
    },
    /// Switch to a new memtable and log file (a requested flush); always alone.
    Rotate,
}

impl Job {
    /// Bytes the job adds to a group (`usize::MAX` for a job that goes alone).
    fn size(&self) -> usize {
        match self {
            Job::Write { batch, .. } => batch.encoded_len().min(GROUP_BYTES),
            // The Put it becomes: key, a value of at most 20 bytes, and lengths.
            Job::Incr { key, .. } => key.len() + 32,
            Job::Rotate => usize::MAX,
        }
    }

    fn durability(&self) -> Option<Durability> {
        match self {
            Job::Write { durability, .. } | Job::Incr { durability, .. } => Some(*durability),
            Job::Rotate => None,
        }
    }
}

/// What a writer is told once its job is done.
#[derive(Debug, Clone, Copy, Default)]
struct Done {
    /// The seqno of its last op.
    seqno: SeqNo,
    /// For an increment: the counter's new value.
    counter: i64,
}

/// A group member as the leader applies it.
enum Member<'a> {
    /// Logged and inserted: a queued batch, or the Put an increment became.
    Apply {
        batch: Cow<'a, WriteBatch>,
        durability: Durability,
        counter: i64,
        /// Blob files the member's values were streamed to (see `Job::Write`).
        blob_files: &'a [BlobFileMeta],
    },
    /// Refused before it got a seqno; nothing of it is written.
    Refused(Error),
}

struct Pending {
    ticket: u64,
    job: Job,
    thread: ThreadId,
}

/// Per-group lists live inline up to this many members, so a small group (most are one
/// or two writes) costs the leader no allocation: every allocation the write path saves
/// is one fewer chance to wait on the allocator's lock while a flush frees a memtable.
const GROUP_INLINE: usize = 4;

/// A write group, in queue order.
type Group = SmallVec<[Pending; GROUP_INLINE]>;

/// What the leader applies for each member of a group, in order (see [`resolve`]).
type Members<'a> = SmallVec<[Member<'a>; GROUP_INLINE]>;

/// One outcome per member of a group, in order.
type Outcomes = SmallVec<[Result<Done>; GROUP_INLINE]>;

#[derive(Default)]
struct Queue {
    next_ticket: u64,
    waiting: VecDeque<Pending>,
    done: HashMap<u64, Result<Done>>,
    leader_active: bool,
    /// Set while a leader waits for more `Sync` writers to join its group.
    gathering: bool,
    /// The threads of the last two `Sync` groups: how many writers to expect.
    recent_syncers: [Vec<ThreadId>; 2],
}

impl Queue {
    /// Distinct threads among the last two `Sync` groups. Concurrent `Sync` writers
    /// alternate between groups (those that just returned miss the group that started
    /// meanwhile), so two groups together show how many there are.
    fn expected_syncers(&self) -> usize {
        let [a, b] = &self.recent_syncers;
        a.len() + b.iter().filter(|t| !a.contains(t)).count()
    }
}

/// The log file and the async queue in front of it.
pub(crate) struct WalState {
    writer: Option<wal::Writer>,
    /// Async records not yet appended: (first seqno, payload), in seqno order.
    pending: VecDeque<(u64, Vec<u8>)>,
    /// Largest seqno appended to `writer` (or a previous file).
    appended: u64,
    /// Largest seqno fsynced.
    synced: u64,
    /// Smallest periodic-sync interval any write asked for.
    periodic: Option<Duration>,
    last_sync: Instant,
    poisoned: Option<String>,
    shutdown: bool,
    /// Length of the current log file covered by the last background fsync.
    bg_synced_len: u64,
    /// The value log's writer: appended to by the write leader before the WAL records that
    /// reference its records, synced before every WAL fsync (`vlog/FORMAT.md` §7).
    blob: vlog::Writer,
    /// Set when blob records were appended since the last blob sync.
    blob_unsynced: bool,
}

impl WalState {
    /// Makes every blob record appended so far durable: called before every WAL fsync, so
    /// no fsynced WAL record references a blob record a power loss can take.
    fn sync_blobs(&mut self) -> Result<()> {
        if self.blob_unsynced {
            self.blob.sync()?;
            self.blob_unsynced = false;
        }
        Ok(())
    }

    /// Syncs the blob writer, then fsyncs the WAL file.
    fn sync_all(&mut self) -> Result<()> {
        self.sync_blobs()?;
        self.writer.as_mut().ok_or(Error::Poisoned)?.sync()
    }
}

/// The write path's shared state.
pub(crate) struct WritePath {
    queue: Mutex<Queue>,
    queue_cv: Condvar,
    pub(crate) wal: Mutex<WalState>,
    /// Wakes the log thread: async records queued, a periodic interval set, shutdown.
    pub(crate) wal_cv: Condvar,
    /// Wakes async writers waiting for room in the queue.
    space_cv: Condvar,
    /// Current log file length (for the rotation check without the log lock).
    wal_len: AtomicU64,
    /// Wakes a leader gathering a `Sync` group when a writer queues.
    arrive_cv: Condvar,
    /// Recent fsync time of the log, in ns (an exponential average).
    sync_nanos: AtomicU64,
    /// Every ticket below this one has its outcome posted (groups are taken from the
    /// front of the queue, so tickets finish in order). Watched without the queue lock by
    /// writers waiting for their turn (`await_turn`).
    finished_below: AtomicU64,
    /// Bumped each time a leader gives up leading, so a waiting writer sees that it may
    /// have to lead.
    releases: AtomicU64,
    pub(crate) wal_bytes: AtomicU64,
    pub(crate) user_bytes: AtomicU64,
}

impl WritePath {
    /// The write path over an open log writer; `last_seqno` was recovered.
    /// The write path over `writer` (`None` for a read-only store, which never writes).
    pub(crate) fn new(
        writer: Option<wal::Writer>,
        blob: vlog::Writer,
        last_seqno: u64,
        durable: u64,
    ) -> WritePath {
        WritePath {
            wal_len: AtomicU64::new(writer.as_ref().map_or(0, wal::Writer::len)),
            queue: Mutex::new(Queue::default()),
            queue_cv: Condvar::new(),
            arrive_cv: Condvar::new(),
            sync_nanos: AtomicU64::new(0),
            finished_below: AtomicU64::new(0),
            releases: AtomicU64::new(0),
            wal: Mutex::new(WalState {
                writer,
                pending: VecDeque::new(),
                appended: last_seqno,
                synced: durable,
                periodic: None,
                last_sync: Instant::now(),
                poisoned: None,
                shutdown: false,
                bg_synced_len: 0,
                blob,
                blob_unsynced: false,
            }),
            wal_cv: Condvar::new(),
            space_cv: Condvar::new(),
            wal_bytes: AtomicU64::new(0),
            user_bytes: AtomicU64::new(0),
        }
    }
}

impl WritePath {
    /// Bytes written to WAL files since open: sealed files plus the current one.
    pub(crate) fn wal_bytes_written(&self) -> u64 {
        self.wal_bytes.load(Ordering::Relaxed) + self.wal_len.load(Ordering::Relaxed)
    }
}

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
    if batch.is_empty() {
        return Ok(SeqNo(inner.visible_seqno.load(Ordering::Acquire)));
    }
    let version = Arc::clone(&inner.super_version.read().version);
    // The log record holds handles in place of the values the leader separates.
    let mut logged = batch.encoded_len();
    for op in batch.ops() {
        let value = op.stored();
        if over_threshold(inner, &version, &op) {
            logged = logged - value.len() + ENTRY_HANDLE_ALLOWANCE;
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
    inner.check_writable()?;
    let job = Job::Write {
        batch,
        durability,
        blob_files,
    };
    run(inner, job).map(|d| d.seqno)
}

/// Most bytes a separated op's stored value takes in the log record: its attrs, the
/// handle, and slack for the length prefix.
const ENTRY_HANDLE_ALLOWANCE: usize = vlog::MAX_HANDLE_LEN + entry::MAX_ATTRS_LEN + 10;

/// True if the leader moves `op`'s value to the value log: a put at or above its
/// keyspace's threshold, or one too large to stay in the tree (possible only when the
/// keyspace separated values when the write was checked).
fn separates(inner: &Inner, version: &Version, op: &Op<'_>) -> bool {
    over_threshold(inner, version, op) || op.stored().len() > crate::table::MAX_INLINE_VALUE_LEN
}

/// True if `op` is a put whose value (without its attributes) is at or above its
/// keyspace's separation threshold.
fn over_threshold(inner: &Inner, version: &Version, op: &Op<'_>) -> bool {
    let value_len = match op {
        Op::Put { value, .. } => value.len() as u64,
        Op::PutAttrs { stored, .. } => match entry::view(Kind::PutAttrs, stored) {
            Ok(Some(v)) => v.body.len(),
            _ => return false,
        },
        Op::ValueHandle { .. } | Op::Delete { .. } | Op::RangeDelete { .. } => return false,
    };
    inner
        .blob_threshold(version, op.keyspace())
        .is_some_and(|t| value_len >= t)
}

/// Replaces, in each member's batch, the puts [`separates`] picks by `ValueHandle` ops,
/// appending their values to the value log first (in batch order, before any WAL record
/// of the group is written). Blob files finished meanwhile are attached to `mem`, the
/// memtable the group goes into. A member whose log record would still be too large is
/// refused.
///
/// # Errors
/// A failed blob append (the log is poisoned: writes stop).
fn separate(inner: &Inner, members: &mut [Member<'_>], mem: &Memtable) -> Result<()> {
    let version = Arc::clone(&inner.super_version.read().version);
    let needed = members.iter().any(|m| match m {
        Member::Apply { batch, .. } => batch.ops().any(|op| separates(inner, &version, &op)),
        Member::Refused(_) => false,
    });
    if !needed {
        return Ok(());
    }
    let mut wal = inner.write.wal.lock();
    if wal.poisoned.is_some() {
        return Err(Error::Poisoned);
    }
    for m in members.iter_mut() {
        let Member::Apply { batch, .. } = m else {
            continue;
        };
        if !batch.ops().any(|op| separates(inner, &version, &op)) {
            continue;
        }
        let mut out = WriteBatch::new();
        for op in batch.ops() {
            if !separates(inner, &version, &op) {
                out.push_stored(op.kind(), op.keyspace(), op.key(), op.stored())?;
                continue;
            }
            let view = entry::view(op.kind(), op.stored())
                .ok()
                .flatten()
                .ok_or_else(|| Error::invalid("a put without a value in a write group"))?;
            let Some(value) = view.body.inline() else {
                continue;
            };
            let handle = match wal.blob.append_gathered(op.keyspace(), op.key(), value) {
                Ok(h) => h,
                Err(e) => {
                    if wal.blob.is_poisoned() {
                        poison(&mut wal, &e);
                    }
                    return Err(e);
                }
            };
            wal.blob_unsynced = true;
            inner
                .stats
                .blob_bytes
                .fetch_add((op.key().len() + value.len()) as u64, Ordering::Relaxed);
            let stored = entry::encode_separated(&view.attrs, &handle);
            out.push_stored(Kind::ValueHandle, op.keyspace(), op.key(), &stored)?;
        }
        *batch = Cow::Owned(out);
    }
    // The group's values reach the OS in one write, before any WAL record naming them.
    if let Err(e) = wal.blob.hand_over() {
        poison(&mut wal, &e);
        return Err(e);
    }
    mem.attach_blob_files(wal.blob.take_sealed());
    drop(wal);
    for m in members.iter_mut() {
        if let Member::Apply { batch, .. } = m {
            if batch.encoded_len() > wal::MAX_PAYLOAD_LEN {
                *m = Member::Refused(Error::invalid(format!(
                    "write batch of {} bytes exceeds the limit of {} bytes",
                    batch.encoded_len(),
                    wal::MAX_PAYLOAD_LEN
                )));
            }
        }
    }
    Ok(())
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
    run(inner, job).map(|d| d.counter)
}

/// Switches to a fresh memtable and log file so the current memtable can be flushed.
pub(crate) fn rotate(inner: &Inner) -> Result<()> {
    inner.check_writable()?;
    run(inner, Job::Rotate).map(|_| ())
}

/// Queues `job`, waits to be done by a leader or to lead, and returns the outcome.
fn run(inner: &Inner, job: Job) -> Result<Done> {
    let wp = &inner.write;
    let mut q = wp.queue.lock();
    let ticket = q.next_ticket;
    q.next_ticket += 1;
    q.waiting.push_back(Pending {
        ticket,
        job,
        thread: std::thread::current().id(),
    });
    if q.gathering {
        wp.arrive_cv.notify_one();
    }
    let mut spun = false;
    loop {
        if let Some(result) = q.done.remove(&ticket) {
            return result;
        }
        if !q.leader_active && q.waiting.front().is_some_and(|p| p.ticket == ticket) {
            break;
        }
        if spun {
            wp.queue_cv.wait(&mut q);
        } else {
            spun = true;
            let seen = wp.releases.load(Ordering::Acquire);
            MutexGuard::unlocked(&mut q, || await_turn(wp, ticket, seen));
        }
    }
    q.leader_active = true;
    let mut mine = Err(Error::invalid("write was not processed"));
    // A leader commits its own group, then, once, the group that queued meanwhile: the
    // writers in it are asleep, and waking one only to lead would cost a context switch
    // per group when small writes from a few threads alternate.
    for round in 0..2 {
        if round > 0 && q.waiting.is_empty() {
            break;
        }
        gather_syncers(wp, &mut q);
        let mut group = Group::new();
        let mut bytes = 0usize;
        while let Some(front) = q.waiting.front() {
            let size = front.job.size();
            let alone = matches!(front.job, Job::Rotate);
            if !group.is_empty() && (alone || bytes.saturating_add(size) > GROUP_BYTES) {
                break;
            }
            bytes = bytes.saturating_add(size);
            if let Some(p) = q.waiting.pop_front() {
                group.push(p);
            }
            if alone {
                break;
            }
        }
        if group.iter().any(|p| is_sync(&p.job)) {
            let threads = group.iter().map(|p| p.thread).collect();
            q.recent_syncers.swap(0, 1);
            q.recent_syncers[0] = threads;
        }
        drop(q);

        let outcomes = match lead(inner, &group) {
            Ok(outcomes) => outcomes,
            Err(e) => group.iter().map(|_| Err(e.duplicate())).collect(),
        };

        q = wp.queue.lock();
        let mut outcomes = outcomes.into_iter();
        for p in &group {
            let result = outcomes
                .next()
                .unwrap_or_else(|| Err(Error::invalid("write was not processed")));
            if p.ticket == ticket {
                mine = result;
            } else {
                q.done.insert(p.ticket, result);
            }
        }
        // Followers of this group return now, while the leader goes on.
        if let Some(last) = group.last() {
            wp.finished_below
                .fetch_max(last.ticket + 1, Ordering::Release);
        }
        wp.queue_cv.notify_all();
    }
    q.leader_active = false;
    wp.releases.fetch_add(1, Ordering::Release);
    wp.queue_cv.notify_all();
    mine
}

/// How long a writer that queued behind a leader watches for the leader's progress
/// before it sleeps on the condition variable. A group of small buffered writes takes a
/// few microseconds; waking from a futex sleep takes tens of microseconds on a busy
/// machine, which was most of the 99th-percentile latency of concurrent single puts.
const SPIN_WAIT: Duration = Duration::from_micros(20);

/// Spins (with a CPU pause hint, then yielding the CPU) until `ticket`'s outcome is
/// posted or a leader gives up leading (`releases` moves past `seen`), for at most
/// [`SPIN_WAIT`]. Only an optimisation: the caller checks the queue under its lock
/// afterwards, and sleeps on the condition variable if its turn has not come.
fn await_turn(wp: &WritePath, ticket: u64, seen: u64) {
    let started = Instant::now();
    let mut round = 0u32;
    while wp.finished_below.load(Ordering::Acquire) <= ticket
        && wp.releases.load(Ordering::Acquire) == seen
    {
        if round < 64 {
            std::hint::spin_loop();
        } else {
            if started.elapsed() >= SPIN_WAIT {
                return;
            }
            std::thread::yield_now();
        }
        round = round.saturating_add(1);
    }
}

fn is_sync(job: &Job) -> bool {
    matches!(job.durability(), Some(Durability::Sync))
}

/// Before a `Sync` group is closed, waits briefly for the other writers that took part in
/// recent `Sync` groups to queue, so they share this fsync instead of waiting for the
/// next one. The wait ends as soon as they are all queued, and is at most a quarter of a
/// recent fsync (never more than 1 ms), so it costs little even when they do not come.
fn gather_syncers(wp: &WritePath, q: &mut MutexGuard<'_, Queue>) {
    if !q.waiting.front().is_some_and(|p| is_sync(&p.job)) {
        return;
    }
    let expected = q.expected_syncers();
    let sync = wp.sync_nanos.load(Ordering::Relaxed);
    if expected <= q.waiting.len() || sync == 0 {
        return;
    }
    let deadline = Instant::now() + Duration::from_nanos((sync / 4).min(1_000_000));
    q.gathering = true;
    while q.waiting.len() < expected {
        if wp.arrive_cv.wait_until(q, deadline).timed_out() {
            break;
        }
    }
    q.gathering = false;
}

/// Turns the group's jobs into what the leader applies: writes as they are, increments
/// resolved into Puts (see the module documentation). Must run after every earlier group
/// is in the memtable and before this group is.
fn resolve<'a>(inner: &Inner, group: &'a [Pending]) -> Members<'a> {
    let counters = group.iter().filter_map(|p| match &p.job {
        Job::Incr { keyspace, key, .. } => Some((*keyspace, key.as_slice())),
        _ => None,
    });
    let mut overlay = Overlay::watching(counters);
    let now_ms = inner.options.clock.now_ms();
    group
        .iter()
        .map(|p| match &p.job {
            Job::Write {
                batch,
                durability,
                blob_files,
            } => {
                overlay.record(batch, now_ms);
                Member::Apply {
                    batch: Cow::Borrowed(batch),
                    durability: *durability,
                    counter: 0,
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
                            let mut batch = WriteBatch::new();
                            let attrs = carried.attrs();
                            if attrs.is_empty() {
                                batch.put(*keyspace, key, &counter::encode(n))?;
                            } else {
                                batch.put_attrs(*keyspace, key, &attrs, &counter::encode(n))?;
                            }
                            Ok((batch, n))
                        });
                match resolved {
                    Ok((batch, counter)) => {
                        overlay.record(&batch, now_ms);
                        Member::Apply {
                            batch: Cow::Owned(batch),
                            durability: *durability,
                            counter,
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

/// The leader's work for one group; returns each member's outcome, in order.
fn lead(inner: &Inner, group: &[Pending]) -> Result<Outcomes> {
    // A group led after `close` began could append after its final log sync and be lost
    // though acknowledged; `close` waits for the group led before (`wait_for_leader`).
    if inner.closed.load(Ordering::Acquire) {
        return Err(Error::invalid("the store is closed"));
    }
    if group.iter().any(|p| matches!(p.job, Job::Rotate)) {
        make_room(inner, true)?;
        let seqno = SeqNo(inner.visible_seqno.load(Ordering::Acquire));
        return Ok(smallvec::smallvec![Ok(Done { seqno, counter: 0 })]);
    }
    make_room(inner, false)?;
    let wp = &inner.write;
    let base = inner.visible_seqno.load(Ordering::Acquire);
    // The memtable cannot change under the leader: only a leader rotates.
    let mem = Arc::clone(&inner.state.lock().mem);
    let mut members = resolve(inner, group);
    separate(inner, &mut members, &mem)?;
    let applied = || {
        members.iter().filter_map(|m| match m {
            Member::Apply { batch, .. } => Some(batch.as_ref()),
            Member::Refused(_) => None,
        })
    };

    // Seqnos and the strongest durability asked for.
    let mut firsts: SmallVec<[u64; GROUP_INLINE]> = SmallVec::with_capacity(group.len());
    let mut lasts: SmallVec<[SeqNo; GROUP_INLINE]> = SmallVec::with_capacity(group.len());
    let mut next = base;
    let (mut sync, mut to_os, mut all_async) = (false, false, true);
    let mut periodic: Option<Duration> = None;
    let mut depth = usize::MAX;
    for m in &members {
        let Member::Apply {
            batch, durability, ..
        } = m
        else {
            continue;
        };
        let first = next + 1;
        let last = batch
            .last_seqno(SeqNo(first))?
            .ok_or_else(|| Error::invalid("empty batch in a write group"))?;
        firsts.push(first);
        lasts.push(last);
        next = last.0;
        match durability {
            Durability::Sync => sync = true,
            Durability::Periodic(d) => {
                to_os = true;
                periodic = Some(periodic.map_or(*d, |p| p.min(*d)));
            }
            Durability::Buffered => to_os = true,
            Durability::Async { queue_depth } => depth = depth.min(*queue_depth),
            Durability::None => {}
        }
        if !matches!(durability, Durability::Async { .. }) {
            all_async = false;
        }
    }

    if firsts.is_empty() {
        // Every member was refused: nothing to log.
        return Ok(outcomes(members, &lasts));
    }

    {
        let mut wal = wp.wal.lock();
        if wal.poisoned.is_some() {
            return Err(Error::Poisoned);
        }
        let batches = applied();
        if all_async {
            for (batch, first) in batches.zip(&firsts) {
                while wal.pending.len() >= depth && wal.poisoned.is_none() {
                    wp.wal_cv.notify_all();
                    wp.space_cv.wait(&mut wal);
                }
                if wal.poisoned.is_some() {
                    return Err(Error::Poisoned);
                }
                wal.pending.push_back((*first, batch.encoded().to_vec()));
            }
            wal.appended = next;
            wp.wal_cv.notify_all();
        } else {
            let outcome = (|| -> Result<()> {
                drain_pending(inner, &mut wal)?;
                let ws: &mut WalState = &mut wal;
                let writer = ws.writer.as_mut().ok_or(Error::Poisoned)?;
                for (batch, first) in batches.zip(&firsts) {
                    writer.append(*first, batch.encoded())?;
                }
                if sync {
                    let started = Instant::now();
                    ws.sync_all()?;
                    let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    let avg = wp.sync_nanos.load(Ordering::Relaxed);
                    let next = if avg == 0 { took } else { (avg * 7 + took) / 8 };
                    wp.sync_nanos.store(next, Ordering::Relaxed);
                }
                let writer = ws.writer.as_mut().ok_or(Error::Poisoned)?;
                if to_os && !sync {
                    writer.flush()?;
                }
                wp.wal_len.store(writer.len(), Ordering::Relaxed);
                Ok(())
            })();
            if wp.wal_len.load(Ordering::Relaxed) >= wal.bg_synced_len + WAL_BYTES_PER_SYNC {
                wp.wal_cv.notify_all();
            }
            if let Err(e) = outcome {
                poison(&mut wal, &e);
                return Err(e);
            }
            wal.appended = next;
            if sync {
                wal.synced = next;
                wal.last_sync = Instant::now();
                inner.durable_seqno.fetch_max(next, Ordering::AcqRel);
            }
            if let Some(d) = periodic {
                if wal.periodic.is_none_or(|cur| d < cur) {
                    wal.periodic = Some(d);
                    wp.wal_cv.notify_all();
                }
            }
        }
    }

    let mut user_bytes = 0u64;
    let mut logged = KeyspaceBytes::default();
    for m in &members {
        if let Member::Apply { blob_files, .. } = m {
            mem.attach_blob_files(blob_files.to_vec());
        }
    }
    for (batch, first) in applied().zip(&firsts) {
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
            mem.apply(seqno, &op);
        }
    }
    mem.add_logged(logged);
    wp.user_bytes.fetch_add(user_bytes, Ordering::Relaxed);
    inner.visible_seqno.store(next, Ordering::Release);
    Ok(outcomes(members, &lasts))
}

/// Each member's outcome; `lasts` holds the last seqno of each applied member, in order.
fn outcomes(members: Members<'_>, lasts: &[SeqNo]) -> Outcomes {
    let mut lasts = lasts.iter();
    members
        .into_iter()
        .map(|m| match m {
            Member::Apply { counter, .. } => Ok(Done {
                seqno: lasts.next().copied().unwrap_or_default(),
                counter,
            }),
            Member::Refused(e) => Err(e),
        })
        .collect()
}

/// Appends every queued async record to the log file, in order.
fn drain_pending(inner: &Inner, wal: &mut MutexGuard<'_, WalState>) -> Result<()> {
    if wal.pending.is_empty() {
        return Ok(());
    }
    let state: &mut WalState = wal;
    let writer = state.writer.as_mut().ok_or(Error::Poisoned)?;
    while let Some((first, payload)) = state.pending.front() {
        writer.append(*first, payload)?;
        state.pending.pop_front();
    }
    inner.write.wal_len.store(writer.len(), Ordering::Relaxed);
    inner.write.space_cv.notify_all();
    Ok(())
}

fn poison(wal: &mut WalState, e: &Error) {
    if wal.poisoned.is_none() {
        wal.poisoned = Some(e.to_string());
    }
    wal.pending.clear();
}

/// Writes every logged record to the OS and, with `sync`, fsyncs the log.
pub(crate) fn flush_wal(inner: &Inner, sync: bool) -> Result<()> {
    if inner.read_only {
        return Err(Error::ReadOnly);
    }
    let mut wal = inner.write.wal.lock();
    if wal.poisoned.is_some() {
        return Err(Error::Poisoned);
    }
    let outcome = (|| -> Result<()> {
        drain_pending(inner, &mut wal)?;
        if sync {
            wal.sync_all()?;
        } else {
            wal.writer.as_mut().ok_or(Error::Poisoned)?.flush()?;
        }
        Ok(())
    })();
    if let Err(e) = outcome {
        poison(&mut wal, &e);
        return Err(e);
    }
    if sync {
        wal.synced = wal.appended;
        wal.last_sync = Instant::now();
        inner
            .durable_seqno
            .fetch_max(wal.appended, Ordering::AcqRel);
    }
    Ok(())
}

/// Seals the active blob file (if any) and attaches every finished blob file to `st.mem`,
/// so every blob record a WAL record references lives in an immutable file. Checkpoints
/// call it (under the state lock) before [`log_end`].
///
/// # Errors
/// `Poisoned`, or the seal's I/O error (which poisons writes).
pub(crate) fn seal_blobs(inner: &Inner, st: &State) -> Result<()> {
    let mut wal = inner.write.wal.lock();
    if wal.poisoned.is_some() {
        return Err(Error::Poisoned);
    }
    if let Err(e) = wal.blob.rotate() {
        poison(&mut wal, &e);
        return Err(e);
    }
    wal.blob_unsynced = false;
    st.mem.attach_blob_files(wal.blob.take_sealed());
    Ok(())
}

/// Where the log ends now: every record appended so far (async ones included) is written
/// to the OS, and the result is (current log file id, its length, the largest seqno in
/// the log). The length is at a record boundary, so the file's first `len` bytes are a
/// valid log holding exactly the writes up to that seqno. Used by backups and
/// verification; the caller holds the state lock, so the log file cannot switch.
pub(crate) fn log_end(inner: &Inner) -> Result<(u64, u64, u64)> {
    if inner.read_only {
        return Err(Error::ReadOnly);
    }
    let mut wal = inner.write.wal.lock();
    if wal.poisoned.is_some() {
        return Err(Error::Poisoned);
    }
    let outcome = (|| -> Result<(u64, u64)> {
        drain_pending(inner, &mut wal)?;
        let writer = wal.writer.as_mut().ok_or(Error::Poisoned)?;
        writer.flush()?;
        Ok((writer.id(), writer.len()))
    })();
    match outcome {
        Ok((id, len)) => Ok((id, len, wal.appended)),
        Err(e) => {
            poison(&mut wal, &e);
            Err(e)
        }
    }
}

/// The log thread: writes queued async records and performs periodic fsyncs until
/// shutdown (after which it writes what is queued and exits).
pub(crate) fn log_thread(inner: Arc<Inner>) {
    let wp = &inner.write;
    let mut wal = wp.wal.lock();
    loop {
        if wal.poisoned.is_some() {
            wp.space_cv.notify_all();
        }
        if !wal.pending.is_empty() && wal.poisoned.is_none() {
            let outcome = drain_pending(&inner, &mut wal).and_then(|()| {
                wal.writer
                    .as_mut()
                    .ok_or(Error::Poisoned)
                    .and_then(|w| w.flush())
            });
            if let Err(e) = outcome {
                poison(&mut wal, &e);
            }
            continue;
        }
        if wal.shutdown {
            return;
        }
        if wal.poisoned.is_none() {
            if let Some(w) = wal.writer.as_ref() {
                if w.len() >= wal.bg_synced_len + WAL_BYTES_PER_SYNC {
                    // Every record appended so far goes to the OS first, so the fsync
                    // covers all of them and their seqnos can be published as durable.
                    let target = wal.appended;
                    let flushed = wal
                        .writer
                        .as_mut()
                        .ok_or(Error::Poisoned)
                        .and_then(|w| w.flush().map(|()| (w.id(), w.path(), w.len())));
                    let (id, path, len) = match flushed {
                        Ok(found) => found,
                        Err(e) => {
                            poison(&mut wal, &e);
                            continue;
                        }
                    };
                    // The blob records those WAL records reference become durable first
                    // (records appended while the fsync runs are not published by it).
                    if let Err(e) = wal.sync_blobs() {
                        poison(&mut wal, &e);
                        continue;
                    }
                    // A second handle: the fsync covers the file's bytes whichever handle
                    // wrote them, and writers keep appending meanwhile.
                    let outcome = MutexGuard::unlocked(&mut wal, || {
                        inner.fs.open_append(&path).and_then(|mut f| f.sync_data())
                    });
                    let same_file = wal.writer.as_ref().is_some_and(|w| w.id() == id);
                    match outcome {
                        Ok(()) if same_file => {
                            wal.bg_synced_len = len;
                            // The sync mark rides with the next write to the OS.
                            if let Some(w) = wal.writer.as_mut() {
                                w.note_synced(len);
                            }
                            if target > wal.synced {
                                wal.synced = target;
                            }
                            inner.durable_seqno.fetch_max(target, Ordering::AcqRel);
                        }
                        Ok(()) => {}
                        // A failed fsync leaves the file's tail unknown: stop writes.
                        Err(e) if same_file => poison(&mut wal, &e),
                        Err(_) => {}
                    }
                    continue;
                }
            }
        }
        match wal.periodic {
            Some(interval) if wal.poisoned.is_none() => {
                let since = wal.last_sync.elapsed();
                if since >= interval {
                    if wal.appended > wal.synced {
                        let target = wal.appended;
                        let outcome = wal.sync_all();
                        match outcome {
                            Ok(()) => {
                                wal.synced = target;
                                inner.durable_seqno.fetch_max(target, Ordering::AcqRel);
                            }
                            Err(e) => poison(&mut wal, &e),
                        }
                    }
                    wal.last_sync = Instant::now();
                    continue;
                }
                wp.wal_cv.wait_for(&mut wal, interval - since);
            }
            _ => wp.wal_cv.wait(&mut wal),
        }
    }
}

/// Waits until no write group is being led. Called by `close` after it sets `closed`:
/// every later leader refuses its group, so once this returns no record can be appended
/// after the final log sync.
pub(crate) fn wait_for_leader(inner: &Inner) {
    let mut q = inner.write.queue.lock();
    while q.leader_active {
        inner.write.queue_cv.wait(&mut q);
    }
}

/// Asks the log thread to finish and waits for nothing; the caller joins it.
pub(crate) fn stop_log_thread(inner: &Inner) {
    let mut wal = inner.write.wal.lock();
    wal.shutdown = true;
    inner.write.wal_cv.notify_all();
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

/// Makes sure the memtable has room (or, with `force`, switches memtables if the current
/// one holds anything), slowing the writer while compaction is behind.
fn make_room(inner: &Inner, force: bool) -> Result<()> {
    let opts = &inner.options;
    let mut slowed = false;
    loop {
        let mut st = inner.state.lock();
        if let Some((during, e)) = &st.bg_error {
            return Err(Error::Stopped {
                during,
                cause: Box::new(e.duplicate()),
            });
        }
        // `close` waits for this group: stop holding it back once `close` has begun.
        if st.shutting_down || inner.closed.load(Ordering::Acquire) {
            return Err(Error::invalid("the store is closed"));
        }
        let l0 = max_l0(&st);
        if l0 >= opts.l0_stop_trigger {
            inner.stats.stalls.fetch_add(1, Ordering::Relaxed);
            inner.bg_cv.notify_all();
            inner.stall_cv.wait_for(&mut st, STALL_WAIT);
            continue;
        }
        if l0 >= opts.l0_slowdown_trigger && !slowed {
            // Smooth slowdown: the deeper into the slowdown band, the longer the pause.
            drop(st);
            let band = (opts.l0_stop_trigger - opts.l0_slowdown_trigger + 1) as u64;
            let depth = (l0 - opts.l0_slowdown_trigger + 1) as u64;
            inner.stats.stalls.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(1000 * depth / band));
            slowed = true;
            continue;
        }
        let wal_len = inner.write.wal_len.load(Ordering::Relaxed);
        // Separated values count like log bytes: the memtable's blob files are part of
        // its unflushed state (replayed and validated by recovery, invisible to GC).
        let log_full = wal_len.saturating_add(st.mem.blob_bytes()) >= opts.max_wal_size;
        let full = st.mem.size() >= opts.memtable_size || log_full;
        if !(full || force) || (force && st.mem.is_empty()) {
            if force && !st.imm.is_empty() {
                // Nothing new to seal, but what is sealed must still be flushed.
                st.flush_requested = true;
                inner.bg_cv.notify_all();
            }
            return Ok(());
        }
        if st.imm.len() >= opts.max_immutable_memtables {
            inner.stats.stalls.fetch_add(1, Ordering::Relaxed);
            inner.bg_cv.notify_all();
            inner.stall_cv.wait_for(&mut st, STALL_WAIT);
            continue;
        }
        // A log-size limit bounds the unflushed log, not just the active file: the
        // memtables it seals are flushed without waiting for `memtables_per_flush`.
        return switch_memtable(inner, &mut st, force || log_full);
    }
}

/// Seals the log file (fsync) and the memtable, and starts new ones; with `flush_now`,
/// asks for every sealed memtable to be flushed at once.
fn switch_memtable(inner: &Inner, st: &mut State, flush_now: bool) -> Result<()> {
    let id = inner.new_file_id();
    {
        let mut wal = inner.write.wal.lock();
        if wal.poisoned.is_some() {
            return Err(Error::Poisoned);
        }
        let outcome = (|| -> Result<wal::Writer> {
            drain_pending(inner, &mut wal)?;
            // Seal the blob file with the memtable: the frozen memtable's separated values
            // all point into files finished now, which its flush records (FORMAT.md §12).
            wal.blob.rotate()?;
            wal.blob_unsynced = false;
            st.mem.attach_blob_files(wal.blob.take_sealed());
            if let Some(w) = wal.writer.as_mut() {
                w.sync()?;
            }
            wal::Writer::create(inner.fs.as_ref(), &inner.dir, id)
        })();
        match outcome {
            Ok(writer) => {
                if let Some(old) = wal.writer.replace(writer) {
                    inner
                        .write
                        .wal_bytes
                        .fetch_add(old.len(), Ordering::Relaxed);
                }
                wal.synced = wal.appended;
                wal.bg_synced_len = 0;
                inner
                    .durable_seqno
                    .fetch_max(wal.appended, Ordering::AcqRel);
                inner
                    .write
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
        Arc::new(Memtable::new(id, inner.options.memtable_size)),
    );
    st.imm.push(old);
    st.flush_requested |= flush_now;
    st.last_seal = std::time::Instant::now();
    super::read::install(inner, st);
    inner.bg_cv.notify_all();
    Ok(())
}

#[cfg(test)]
#[path = "write_group_tests.rs"]
mod group_tests;
