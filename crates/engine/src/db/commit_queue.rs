//! The group-commit queue: writers queue their jobs ([`Job`]); the writer at the head of the queue
//! becomes the leader, takes the jobs queued behind it (up to [`GROUP_BYTES`]) as one
//! group, has it committed (by the closure it is given: the write path's leader, `write::lead`), posts each
//! member's outcome and wakes the others. A leader then commits, once, the group that
//! queued while it led, so that small writes from a few threads do not pay a wake-up of a
//! sleeping writer per group.
//!
//! A writer queued behind a leader first watches, without the queue lock and for at most
//! [`SPIN_WAIT`], for its outcome to be posted (tickets finish in queue order) or for the
//! leader to step down; only then does it sleep on the queue's condition variable. The
//! watch is never relied on: the queue, under its lock, decides.
//!
//! A job that must not wait ([`CommitQueue::try_run`]) leads only an idle queue (no
//! leader, nobody queued), alone; otherwise it is declined without being queued.
//!
//! A leader whose commit panics (a merge operator's panic while the group's counters are
//! resolved, or a bug) may leave the group half applied, so the queue breaks: the
//! group's other members and every writer queued or arriving later get
//! `Error::Poisoned`, the leader steps down, and the panic goes on to the leader's caller.
//! Nobody waits for a leader that is gone; the store takes writes again once reopened.
//!
//! Invariants:
//! 1. At most one leader at a time (`leader_active`), and groups are taken from the front
//!    of the queue, so groups commit in queue order and tickets finish in order.
//! 2. A job that goes alone (`Job::Rotate`) is never grouped with another.
//! 3. Once `broken` is set it stays set, and no commit starts after it.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use smallvec::SmallVec;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::{KeyspaceId, SeqNo};
use crate::memtable::Memtable;
use crate::options::Durability;
use crate::vlog::BlobFileMeta;

/// The new values of a member's increments, in the order they were added.
pub(crate) type Counters = SmallVec<[i64; 1]>;

/// An increment queued in a batch: add `delta` to the counter at `key` once the batch's
/// first `after` ops are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Increment<'a> {
    pub(crate) after: usize,
    pub(crate) keyspace: KeyspaceId,
    pub(crate) key: &'a [u8],
    pub(crate) delta: i128,
}

/// A batch's increments in the order they were added, their keys in one buffer: queueing
/// one copies its key there, with no allocation of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Increments {
    list: Vec<Placed>,
    keys: Vec<u8>,
}

/// One increment of [`Increments`]: its key is `keys[start..end]`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placed {
    after: usize,
    keyspace: KeyspaceId,
    start: usize,
    end: usize,
    delta: i128,
}

impl Increments {
    /// Queues an increment (see [`Increment`]).
    pub(crate) fn push(&mut self, after: usize, keyspace: KeyspaceId, key: &[u8], delta: i128) {
        let start = self.keys.len();
        self.keys.extend_from_slice(key);
        self.list.push(Placed {
            after,
            keyspace,
            start,
            end: self.keys.len(),
            delta,
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The increments, in the order they were queued.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = Increment<'_>> + Clone + '_ {
        self.list.iter().map(|p| Increment {
            after: p.after,
            keyspace: p.keyspace,
            key: self.keys.get(p.start..p.end).unwrap_or_default(),
            delta: p.delta,
        })
    }
}

/// How long a writer that queued behind a leader watches for the leader's progress
/// before it sleeps on the condition variable. A group of small buffered writes takes a
/// few microseconds; waking from a futex sleep takes tens of microseconds on a busy
/// machine, which was most of the 99th-percentile latency of concurrent single puts.
const SPIN_WAIT: Duration = Duration::from_micros(20);

/// Most bytes of batches one leader commits at once.
pub(crate) const GROUP_BYTES: usize = 1 << 20;

/// What a queued writer wants.
pub(crate) enum Job {
    Write {
        batch: WriteBatch,
        durability: Durability,
        /// Blob files written by the caller for this batch alone (a streamed value), to be
        /// recorded with the memtable the batch goes into.
        blob_files: Vec<BlobFileMeta>,
        /// A transaction's commit: what the leader checks before the batch gets its seqnos
        /// (`db/conflict.rs`); a conflict refuses the batch alone.
        validation: Option<Box<crate::db::conflict::Validation>>,
        /// Counter increments among the batch's ops (`Batch::incr`), which the leader
        /// resolves into Puts; one that fails refuses the batch alone.
        increments: Increments,
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
    pub(crate) fn size(&self) -> usize {
        match self {
            Job::Write {
                batch, increments, ..
            } => increments
                .iter()
                .fold(batch.encoded_len(), |n, i| n + incr_size(i.key))
                .min(GROUP_BYTES),
            Job::Incr { key, .. } => incr_size(key),
            Job::Rotate => usize::MAX,
        }
    }

    /// At least the bytes the job adds to the memtable's charged size
    /// ([`crate::memtable::Memtable::charge_bound`]); 0 for a rotation.
    pub(crate) fn memtable_charge(&self) -> usize {
        match self {
            Job::Write {
                batch, increments, ..
            } => increments.iter().fold(
                Memtable::charge_bound(batch.encoded_len(), batch.len()),
                |n, i| n.saturating_add(Memtable::charge_bound(incr_size(i.key), 1)),
            ),
            Job::Incr { key, .. } => Memtable::charge_bound(incr_size(key), 1),
            Job::Rotate => 0,
        }
    }

    /// True for a write that asks for `Sync` durability.
    pub(crate) fn is_sync(&self) -> bool {
        matches!(self.durability(), Some(Durability::Sync))
    }

    pub(crate) fn durability(&self) -> Option<Durability> {
        match self {
            Job::Write { durability, .. } | Job::Incr { durability, .. } => Some(*durability),
            Job::Rotate => None,
        }
    }
}

/// Bytes an increment of `key` adds to a group: the Put it becomes (key, a value of at
/// most 20 bytes, and lengths).
fn incr_size(key: &[u8]) -> usize {
    key.len() + 32
}

/// What a writer is told once its job is done.
#[derive(Debug, Clone, Default)]
pub(crate) struct Done {
    /// The seqno of its last op.
    pub(crate) seqno: SeqNo,
    /// The new values of its increments, in order (one for `Job::Incr`).
    pub(crate) counters: Counters,
}

/// A job in the queue, with its place in line and the thread that queued it.
pub(crate) struct Pending {
    pub(crate) ticket: u64,
    pub(crate) job: Job,
    pub(crate) thread: ThreadId,
}

/// Per-group lists live inline up to this many members, so a small group (most are one
/// or two writes) costs the leader no allocation: every allocation the write path saves
/// is one fewer chance to wait on the allocator's lock while a flush frees a memtable.
pub(crate) const GROUP_INLINE: usize = 4;

/// A write group, in queue order.
pub(crate) type Group = SmallVec<[Pending; GROUP_INLINE]>;

/// One outcome per member of a group, in order.
pub(crate) type Outcomes = SmallVec<[Result<Done>; GROUP_INLINE]>;

#[derive(Default)]
struct Queue {
    next_ticket: u64,
    waiting: VecDeque<Pending>,
    done: HashMap<u64, Result<Done>>,
    leader_active: bool,
    /// A leader's commit panicked: every later job is refused (see the module docs).
    broken: bool,
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

    /// The next group from the front of the queue (invariant 2).
    fn take_group(&mut self) -> Group {
        let mut group = Group::new();
        let mut bytes = 0usize;
        while let Some(front) = self.waiting.front() {
            let size = front.job.size();
            let alone = matches!(front.job, Job::Rotate);
            if !group.is_empty() && (alone || bytes.saturating_add(size) > GROUP_BYTES) {
                break;
            }
            bytes = bytes.saturating_add(size);
            if let Some(p) = self.waiting.pop_front() {
                group.push(p);
            }
            if alone {
                break;
            }
        }
        if group.iter().any(|p| p.job.is_sync()) {
            let threads = group.iter().map(|p| p.thread).collect();
            self.recent_syncers.swap(0, 1);
            self.recent_syncers[0] = threads;
        }
        group
    }
}

/// The queue and the signals around it.
#[derive(Default)]
pub(crate) struct CommitQueue {
    queue: Mutex<Queue>,
    queue_cv: Condvar,
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
}

impl CommitQueue {
    /// Queues `job`, waits to be done by a leader or to lead, and returns the outcome. A
    /// leader commits each group it takes with `commit`, which returns one outcome per
    /// member, in order (or one error for the whole group).
    pub(crate) fn run(
        &self,
        job: Job,
        mut commit: impl FnMut(&[Pending]) -> Result<Outcomes>,
    ) -> Result<Done> {
        let mut q = self.queue.lock();
        if q.broken {
            return Err(Error::Poisoned);
        }
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push_back(Pending {
            ticket,
            job,
            thread: std::thread::current().id(),
        });
        if q.gathering {
            self.arrive_cv.notify_one();
        }
        let mut spun = false;
        loop {
            if let Some(result) = q.done.remove(&ticket) {
                return result;
            }
            if q.broken {
                q.waiting.retain(|p| p.ticket != ticket);
                return Err(Error::Poisoned);
            }
            if !q.leader_active && q.waiting.front().is_some_and(|p| p.ticket == ticket) {
                break;
            }
            if spun {
                self.queue_cv.wait(&mut q);
            } else {
                spun = true;
                let seen = self.releases.load(Ordering::Acquire);
                MutexGuard::unlocked(&mut q, || self.await_turn(ticket, seen));
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
            self.gather_syncers(&mut q);
            let group = q.take_group();
            drop(q);

            let committed = std::panic::catch_unwind(AssertUnwindSafe(|| commit(&group)));
            let outcomes = match committed {
                Ok(Ok(outcomes)) => outcomes,
                Ok(Err(e)) => group.iter().map(|_| Err(e.duplicate())).collect(),
                Err(panic) => self.break_down(&group, ticket, panic),
            };

            q = self.queue.lock();
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
                self.finished_below
                    .fetch_max(last.ticket + 1, Ordering::Release);
            }
            self.queue_cv.notify_all();
        }
        self.step_down(&mut q);
        mine
    }

    /// After the commit of `group` (led by `ticket`) panicked: breaks the queue, posts
    /// `Poisoned` to the group's other members, steps down and resumes the panic.
    fn break_down(&self, group: &[Pending], ticket: u64, panic: Box<dyn Any + Send>) -> ! {
        tracing::error!(
            "a write group's commit panicked; writes are refused until the store is reopened"
        );
        let mut q = self.queue.lock();
        q.broken = true;
        for p in group.iter().filter(|p| p.ticket != ticket) {
            q.done.insert(p.ticket, Err(Error::Poisoned));
        }
        if let Some(last) = group.last() {
            self.finished_below
                .fetch_max(last.ticket + 1, Ordering::Release);
        }
        self.step_down(&mut q);
        drop(q);
        std::panic::resume_unwind(panic)
    }

    /// Ends a leader's turn: no group is led, and the writers waiting (spinning on
    /// `releases` or asleep) look again, so the one at the front leads next.
    fn step_down(&self, q: &mut Queue) {
        q.leader_active = false;
        self.releases.fetch_add(1, Ordering::Release);
        self.queue_cv.notify_all();
    }

    /// As [`CommitQueue::run`] for a job that must not wait for other writers: if no
    /// group is being led and no writer is queued, the job becomes the leader of a group
    /// of its own, committed with `commit`, and `Some` of its outcome is returned (`None`
    /// if `commit` declined it: it then wrote nothing). Otherwise nothing is queued and
    /// `None` is returned at once. Writers that queue while it leads wait for it as for
    /// any leader, and one of them leads next; it never leads their groups.
    pub(crate) fn try_run(
        &self,
        job: Job,
        commit: impl FnOnce(&[Pending]) -> Result<Option<Outcomes>>,
    ) -> Result<Option<Done>> {
        let ticket = {
            let Some(mut q) = self.queue.try_lock() else {
                return Ok(None);
            };
            if q.broken {
                return Err(Error::Poisoned);
            }
            if q.leader_active || !q.waiting.is_empty() {
                return Ok(None);
            }
            q.leader_active = true;
            let ticket = q.next_ticket;
            q.next_ticket += 1;
            ticket
        };
        let group = [Pending {
            ticket,
            job,
            thread: std::thread::current().id(),
        }];
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| commit(&group))) {
            Ok(outcome) => outcome,
            Err(panic) => self.break_down(&group, ticket, panic),
        };
        let mut q = self.queue.lock();
        self.finished_below.fetch_max(ticket + 1, Ordering::Release);
        self.step_down(&mut q);
        drop(q);
        match outcome {
            Ok(Some(outcomes)) => outcomes
                .into_iter()
                .next()
                .unwrap_or_else(|| Err(Error::invalid("write was not processed")))
                .map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Spins (with a CPU pause hint, then yielding the CPU) until `ticket`'s outcome is
    /// posted or a leader gives up leading (`releases` moves past `seen`), for at most
    /// [`SPIN_WAIT`]. Only an optimisation: the caller checks the queue under its lock
    /// afterwards, and sleeps on the condition variable if its turn has not come.
    fn await_turn(&self, ticket: u64, seen: u64) {
        let started = Instant::now();
        let mut round = 0u32;
        while self.finished_below.load(Ordering::Acquire) <= ticket
            && self.releases.load(Ordering::Acquire) == seen
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

    /// Before a `Sync` group is closed, waits briefly for the other writers that took
    /// part in recent `Sync` groups to queue, so they share this fsync instead of waiting
    /// for the next one. The wait ends as soon as they are all queued, and is at most a
    /// quarter of a recent fsync (never more than 1 ms), so it costs little even when
    /// they do not come.
    fn gather_syncers(&self, q: &mut MutexGuard<'_, Queue>) {
        if !q.waiting.front().is_some_and(|p| p.job.is_sync()) {
            return;
        }
        let expected = q.expected_syncers();
        let sync = self.sync_nanos.load(Ordering::Relaxed);
        if expected <= q.waiting.len() || sync == 0 {
            return;
        }
        let deadline = Instant::now() + Duration::from_nanos((sync / 4).min(1_000_000));
        q.gathering = true;
        while q.waiting.len() < expected {
            if self.arrive_cv.wait_until(q, deadline).timed_out() {
                break;
            }
        }
        q.gathering = false;
    }

    /// Records how long a group's fsync took (for [`CommitQueue::gather_syncers`]).
    pub(crate) fn note_sync(&self, took: Duration) {
        let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let avg = self.sync_nanos.load(Ordering::Relaxed);
        let next = if avg == 0 { took } else { (avg * 7 + took) / 8 };
        self.sync_nanos.store(next, Ordering::Relaxed);
    }

    /// Waits until no group is being led. Called by `close` after it sets `closed`: every
    /// later leader refuses its group, so once this returns no record can be appended
    /// after the final log sync.
    pub(crate) fn wait_for_leader(&self) {
        let mut q = self.queue.lock();
        while q.leader_active {
            self.queue_cv.wait(&mut q);
        }
    }
}

#[cfg(test)]
#[path = "commit_queue_tests.rs"]
mod tests;
