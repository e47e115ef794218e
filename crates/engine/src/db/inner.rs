//! [`Inner`], the state every thread of one open store shares, and [`State`], the part
//! of it that changes with flushes, compactions and keyspace changes.
//!
//! Invariants:
//! 1. `State` is guarded by `Inner::state`; the version, the memtables and the manifest
//!    change together under it, and a new super version is installed before the lock is
//!    released, so readers see the changes of one state change at once.
//! 2. Once `bg_error` is set it stays set: writes fail with it from then on
//!    (`Inner::check_writable`), reads go on.
//! 3. File ids come from the one counter `next_file_id`, shared with the value log's
//!    writers, so no two files of a store ever share an id.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::commit_queue::CommitQueue;
use super::log::Log;
use super::read_path::ReadPath;
use super::recovery::RecoveryReport;
use super::stats::Counters;
use super::super_version::{ReadAt, SuperVersion};
use crate::budget::Budget;
use crate::error::{Error, Result};
use crate::files::{BlobId, TableId};
use crate::fs::FileSystem;
use crate::key::{KeyspaceId, SeqNo};
use crate::memtable::Memtable;
use crate::options::{Durability, Options};
use crate::snapshot::Registry;
use crate::table::{self, BlockCache, TableOptions};
use crate::version::{Manifest, Version};

/// State changed by flushes, compactions and keyspace changes; guarded by `Inner::state`.
pub(crate) struct State {
    pub(crate) mem: Arc<Memtable>,
    /// Memtables waiting to be flushed, oldest first.
    pub(crate) imm: Vec<Arc<Memtable>>,
    pub(crate) version: Arc<Version>,
    /// The manifest being appended to; `None` for a read-only open.
    pub(crate) manifest: Option<Manifest>,
    /// Set while a flush runs (flushes are serialized, oldest memtables first).
    pub(crate) flushing: bool,
    /// Flush every sealed memtable now, without waiting for `memtables_per_flush` of
    /// them (set by `Db::flush`, a log-size limit, recovery; cleared when `imm` empties).
    pub(crate) flush_requested: bool,
    /// When the last memtable was sealed: sealed memtables waiting for company are
    /// flushed anyway once writes pause for `background::IDLE_FLUSH_AFTER`.
    pub(crate) last_seal: std::time::Instant,
    /// Keyspaces with a compaction running.
    pub(crate) compacting: Vec<KeyspaceId>,
    /// The first background failure; writes return it (as `Error::Stopped`) from then on.
    pub(crate) bg_error: Option<(&'static str, Error)>,
    /// Set by `close`: background threads finish their current job and exit.
    pub(crate) shutting_down: bool,
    /// For a read-only store, the files its current view was read from (for checkpoints
    /// and for a follower's refresh, which compares them with the directory).
    pub(crate) read_point: Option<ReadPoint>,
    /// Table ids being written (not yet in a version), kept from obsolete-file deletion.
    pub(crate) pending_outputs: Vec<TableId>,
    /// When an idle background thread next looks for tables with expired entries.
    pub(crate) next_expiry_check: std::time::Instant,
    /// Blob files removed from the version, deleted once no reader can reach them.
    pub(crate) obsolete_blobs: Vec<BlobId>,
    /// Set by flushes and compactions: an idle background thread runs value-log GC.
    pub(crate) gc_due: bool,
}

/// Everything the store's threads share.
pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) options: Options,
    /// Opened with [`crate::Db::open_read_only`]: nothing is ever written, and no background
    /// thread runs.
    pub(crate) read_only: bool,
    pub(crate) state: Mutex<State>,
    /// Wakes background threads (new memtable to flush, new tables to compact, shutdown).
    pub(crate) bg_cv: Condvar,
    /// Wakes writers held back by a full memtable queue or too many level-0 tables.
    pub(crate) stall_cv: Condvar,
    /// The group-commit queue writers join.
    pub(crate) commits: CommitQueue,
    /// The write-ahead log, the value log's writer and the log thread's state.
    pub(crate) log: Log,
    /// The largest seqno known to survive power loss.
    pub(crate) durable_seqno: AtomicU64,
    /// The store's one file-id counter (shared with the value log's writers).
    pub(crate) next_file_id: Arc<AtomicU64>,
    pub(crate) snapshots: Arc<Registry>,
    pub(crate) block_cache: Arc<BlockCache>,
    /// What every read goes through: super versions, visible seqno, tables, blob reader.
    pub(crate) reads: Arc<ReadPath>,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) closed: AtomicBool,
    pub(crate) stats: Counters,
    /// What the open recovered and left out.
    pub(crate) recovery: RecoveryReport,
    /// Opened with [`crate::Db::open_follower`]: a read-only store whose view
    /// [`crate::Db::refresh`] moves to the writer's latest state.
    pub(crate) follower: bool,
    /// Held by a refresh from reading the new view to installing it: refreshes run one at
    /// a time. True after a refresh that read the log's tail failed: its newest memtable
    /// may hold part of that tail, so the next one starts a fresh memtable.
    pub(crate) refreshing: Mutex<bool>,
    /// `Options::memory_budget` divided into its shares (`options` already carries the
    /// sizes it replaces).
    pub(crate) budget: Option<Budget>,
}

/// The files a read-only view was read from.
#[derive(Debug, Clone)]
pub(crate) struct ReadPoint {
    /// The manifest whose version the view holds.
    pub(crate) manifest_id: u64,
    /// The manifest's length before it was read (the view holds at least its edits).
    pub(crate) manifest_len: u64,
    /// The end of the manifest's last complete record when it was read: the view's
    /// version is that of the manifest's first `manifest_end` bytes.
    pub(crate) manifest_end: u64,
    /// Each log file replayed, with the end of the last record replayed from it: where a
    /// follower's next refresh reads on.
    pub(crate) wal_ends: Vec<(u64, u64)>,
    /// Each log file replayed, with the length read: (id, bytes).
    pub(crate) wal_lens: Vec<(u64, u64)>,
    /// Every file of the view (tables, blob files, log files), by name, opened during the
    /// open and held for the view's life.
    pub(crate) files: std::collections::BTreeMap<String, Arc<dyn crate::fs::ReadableFile>>,
}

impl Inner {
    pub(crate) fn new_file_id(&self) -> u64 {
        self.next_file_id.fetch_add(1, Ordering::SeqCst)
    }

    /// Creates a new table file for a flush or compaction to write. Its id is kept from
    /// obsolete-file deletion (`State::pending_outputs`) until the job removes it, once a
    /// version lists the table or the job failed.
    ///
    /// # Errors
    /// As `table::Writer::create`.
    pub(crate) fn create_table(&self, options: &TableOptions) -> Result<(TableId, table::Writer)> {
        let id = TableId(self.new_file_id());
        self.state.lock().pending_outputs.push(id);
        let path = self.dir.join(id.file_name());
        Ok((
            id,
            table::Writer::create(self.fs.as_ref(), &path, id, options)?,
        ))
    }

    /// The separation threshold of `keyspace` in `version`: its own, else the store's.
    pub(crate) fn blob_threshold(&self, version: &Version, keyspace: KeyspaceId) -> Option<u64> {
        version
            .keyspace(keyspace)
            .and_then(|k| k.blob_threshold)
            .or(self.options.blob_threshold.map(|t| t as u64))
    }

    /// Fails if a background error or a poisoned log stops writes.
    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open_for_writes()?;
        match self.state.lock().stopped() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The checks of [`Inner::check_writable`] that take no lock: fails for a read-only
    /// or closed store.
    pub(crate) fn check_open_for_writes(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::invalid("the store is closed"));
        }
        Ok(())
    }

    /// The durability a write uses: its own, or the store's default.
    pub(crate) fn durability(&self, requested: Option<Durability>) -> Durability {
        requested.unwrap_or(self.options.durability)
    }

    /// The current super version and the seqno to read at (`snapshot`, or the visible
    /// one).
    pub(crate) fn acquire(&self, at: Option<&ReadAt>) -> (Arc<SuperVersion>, SeqNo) {
        self.reads.acquire(at)
    }

    /// Publishes a super version of `st` for readers.
    pub(crate) fn install(&self, st: &State) {
        self.reads.supers.install(st.super_version());
    }

    /// Tracks a super version of `st` without publishing it: held by a checkpoint, it
    /// keeps that moment's files on disk.
    pub(crate) fn pin(&self, st: &State) -> Arc<SuperVersion> {
        self.reads.supers.track(st.super_version())
    }
}

#[cfg(test)]
impl Inner {
    /// The ids of the open tables.
    pub(crate) fn tables_open(&self) -> std::collections::BTreeSet<TableId> {
        self.reads.tables.open_ids()
    }
}

impl State {
    /// A super version of the state's memtables and version.
    pub(crate) fn super_version(&self) -> SuperVersion {
        SuperVersion::new(&self.mem, &self.imm, &self.version)
    }

    /// The error writes get once a background failure stopped them.
    pub(crate) fn stopped(&self) -> Option<Error> {
        self.bg_error.as_ref().map(|(during, e)| Error::Stopped {
            during,
            cause: Box::new(e.duplicate()),
        })
    }

    /// Records `e`, failed `during` a background job, as the store's background error
    /// unless one is recorded already.
    pub(crate) fn record_failure(&mut self, during: &'static str, e: &Error) {
        if self.bg_error.is_none() {
            tracing::error!(during, error = %e, "background work failed; writes are refused until the store is reopened");
        }
        self.bg_error.get_or_insert_with(|| (during, e.duplicate()));
    }
}
