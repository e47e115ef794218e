//! The log: the current WAL file, the async queue in front of it, the value log's writer
//! beside it, and the log thread that writes queued async records and fsyncs in the
//! background.
//!
//! Invariants:
//! 1. Records reach the log in seqno order in every durability mode: the async queue and
//!    the log writer sit behind one mutex, and every non-async append first drains the
//!    queue. So whatever a crash leaves is a prefix.
//! 2. Blob records are synced before every WAL fsync (`vlog/FORMAT.md` §7), so no
//!    fsynced WAL record references a blob record a power loss can take.
//! 3. A failed write or fsync poisons the log ([`poison`]): no later record is appended,
//!    every later write fails, and nothing after the failure is reported durable.
//! 4. A seqno is published as durable (`durable`) only after an fsync covering its
//!    record returned, and for a background fsync only if the file it covered is still
//!    the current one.
//! 5. Background fsyncs run every [`WAL_BYTES_PER_SYNC`] of log past the last fsync (a
//!    writer's own or the log thread's), and once more when the active memtable nears
//!    full ([`Log::sync_ahead`]) if anything is unsynced: the fsync a memtable switch makes
//!    while writers wait then finds only what was written since. In `Sync` mode every
//!    commit's own fsync leaves them nothing to do, so they make none.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::memtable::Memtable;
use crate::vlog;
use crate::wal;

/// Log bytes after which the log thread fsyncs the log file in the background (through a
/// second handle, without holding up writers), so that the fsync a memtable switch needs
/// finds little left to write.
pub(super) const WAL_BYTES_PER_SYNC: u64 = 4 << 20;

/// The log file and the async queue in front of it.
pub(super) struct WalState {
    pub(super) writer: Option<wal::Writer>,
    /// Async records not yet appended: (first seqno, payload), in seqno order.
    pub(super) pending: VecDeque<(u64, Vec<u8>)>,
    /// Largest seqno appended to `writer` (or a previous file).
    pub(super) appended: u64,
    /// Largest seqno fsynced.
    pub(super) synced: u64,
    /// Smallest periodic-sync interval any write asked for.
    pub(super) periodic: Option<Duration>,
    pub(super) last_sync: Instant,
    pub(super) poisoned: Option<String>,
    pub(super) shutdown: bool,
    /// Length of the current log file covered by the last fsync, a writer's own or the
    /// log thread's: a background fsync runs only for bytes past it.
    pub(super) bg_synced_len: u64,
    /// The value log's writer: appended to by the write leader before the WAL records that
    /// reference its records, synced before every WAL fsync (`vlog/FORMAT.md` §7).
    pub(super) blob: vlog::Writer,
    /// Set when blob records were appended since the last blob sync.
    pub(super) blob_unsynced: bool,
    /// The current log file's sync ahead was asked for (once per file, invariant 5).
    pub(super) ahead_asked: bool,
    /// That sync is still to be made by the log thread.
    pub(super) ahead_pending: bool,
}

impl WalState {
    /// Makes every blob record appended so far durable: called before every WAL fsync, so
    /// no fsynced WAL record references a blob record a power loss can take.
    pub(super) fn sync_blobs(&mut self) -> Result<()> {
        if self.blob_unsynced {
            self.blob.sync()?;
            self.blob_unsynced = false;
        }
        Ok(())
    }
}

/// The log and the signals around it.
pub(crate) struct Log {
    pub(super) wal: Mutex<WalState>,
    /// Wakes the log thread: async records queued, a periodic interval set, shutdown.
    pub(super) wal_cv: Condvar,
    /// Wakes async writers waiting for room in the queue.
    pub(super) space_cv: Condvar,
    /// Current log file length (for the rotation check without the log lock).
    pub(super) wal_len: AtomicU64,
    /// Bytes of the log files sealed since open.
    pub(super) wal_bytes: AtomicU64,
    /// Fsyncs of log files since open that made records durable: the writers' own and the
    /// log thread's (`Stats::wal_syncs`). Counted under the log's lock, read without it.
    pub(super) syncs: AtomicU64,
    /// For the log thread's background fsync through a second handle.
    fs: Arc<dyn FileSystem>,
}

impl Log {
    /// The log over `writer` (`None` for a read-only store, which never writes), with
    /// `blob` beside it; `last_seqno` was recovered, `durable` of it is known durable.
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        writer: Option<wal::Writer>,
        blob: vlog::Writer,
        last_seqno: u64,
        durable: u64,
    ) -> Log {
        Log {
            wal_len: AtomicU64::new(writer.as_ref().map_or(0, wal::Writer::len)),
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
                ahead_asked: false,
                ahead_pending: false,
            }),
            wal_cv: Condvar::new(),
            space_cv: Condvar::new(),
            wal_bytes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            fs,
        }
    }

    /// Fsyncs of log files since open that made records durable ([`Log::syncs`]).
    pub(crate) fn wal_syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Counts an fsync of a log file if `synced` (one was made).
    pub(super) fn count_sync(&self, synced: bool) {
        self.syncs.fetch_add(u64::from(synced), Ordering::Relaxed);
    }

    /// Syncs the blob writer, then fsyncs the WAL file (if anything in it is unsynced).
    pub(super) fn sync_all(&self, wal: &mut WalState) -> Result<()> {
        wal.sync_blobs()?;
        let writer = wal.writer.as_mut().ok_or(Error::Poisoned)?;
        let synced = writer.sync()?;
        // Every byte of the file is durable now: the log thread need not fsync it again
        // (in `Sync` mode it otherwise did, every `WAL_BYTES_PER_SYNC` and once ahead of
        // each memtable switch).
        wal.bg_synced_len = wal.bg_synced_len.max(writer.len());
        self.count_sync(synced);
        Ok(())
    }

    /// Bytes written to WAL files since open: sealed files plus the current one.
    pub(crate) fn wal_bytes_written(&self) -> u64 {
        self.wal_bytes.load(Ordering::Relaxed) + self.wal_len.load(Ordering::Relaxed)
    }

    /// Asks the log thread for one background fsync of the current log file, ahead of the
    /// memtable switch that will seal it (invariant 5); a second ask for the same file
    /// does nothing. The caller holds the log's lock, so the log thread cannot miss it.
    pub(super) fn sync_ahead(&self, wal: &mut WalState) {
        if !wal.ahead_asked {
            wal.ahead_asked = true;
            wal.ahead_pending = true;
            self.wal_cv.notify_all();
        }
    }

    /// Appends every queued async record to the log file, in order.
    pub(super) fn drain_pending(&self, wal: &mut MutexGuard<'_, WalState>) -> Result<()> {
        if wal.pending.is_empty() {
            return Ok(());
        }
        let state: &mut WalState = wal;
        let writer = state.writer.as_mut().ok_or(Error::Poisoned)?;
        while let Some((first, payload)) = state.pending.front() {
            writer.append(*first, payload)?;
            state.pending.pop_front();
        }
        self.wal_len.store(writer.len(), Ordering::Relaxed);
        self.space_cv.notify_all();
        Ok(())
    }

    /// Writes every logged record to the OS and, with `sync`, fsyncs the log.
    /// Publishes the synced seqno in `durable`.
    pub(crate) fn flush(&self, sync: bool, durable: &AtomicU64) -> Result<()> {
        let mut wal = self.wal.lock();
        if wal.poisoned.is_some() {
            return Err(Error::Poisoned);
        }
        let outcome = (|| -> Result<()> {
            self.drain_pending(&mut wal)?;
            if sync {
                self.sync_all(&mut wal)?;
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
            durable.fetch_max(wal.appended, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Seals the active blob file (if any) and attaches every finished blob file to `mem`
    /// (the active memtable), so every blob record a WAL record references lives in an
    /// immutable file. Checkpoints call it (under the state lock) before [`Log::end`].
    ///
    /// # Errors
    /// `Poisoned`, or the seal's I/O error (which poisons writes).
    pub(crate) fn seal_blobs(&self, mem: &Memtable) -> Result<()> {
        let mut wal = self.wal.lock();
        if wal.poisoned.is_some() {
            return Err(Error::Poisoned);
        }
        if let Err(e) = wal.blob.rotate() {
            poison(&mut wal, &e);
            return Err(e);
        }
        wal.blob_unsynced = false;
        mem.attach_blob_files(wal.blob.take_sealed());
        Ok(())
    }

    /// Where the log ends now: every record appended so far (async ones included) is written
    /// to the OS, and the result is (current log file id, its length, the largest seqno in
    /// the log). The length is at a record boundary, so the file's first `len` bytes are a
    /// valid log holding exactly the writes up to that seqno. Used by backups and
    /// verification; the caller holds the state lock, so the log file cannot switch.
    pub(crate) fn end(&self) -> Result<(u64, u64, u64)> {
        let mut wal = self.wal.lock();
        if wal.poisoned.is_some() {
            return Err(Error::Poisoned);
        }
        let outcome = (|| -> Result<(u64, u64)> {
            self.drain_pending(&mut wal)?;
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

    /// The log thread's loop: writes queued async records and performs periodic and
    /// background fsyncs, publishing synced seqnos in `durable`, until [`Log::stop`] (after
    /// which it writes what is queued and returns).
    pub(crate) fn run_thread(&self, durable: &AtomicU64) {
        let mut wal = self.wal.lock();
        loop {
            if wal.poisoned.is_some() {
                self.space_cv.notify_all();
            }
            if !wal.pending.is_empty() && wal.poisoned.is_none() {
                let outcome = self.drain_pending(&mut wal).and_then(|()| {
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
                let ahead = std::mem::take(&mut wal.ahead_pending);
                if let Some(w) = wal.writer.as_ref() {
                    if w.len() >= wal.bg_synced_len + WAL_BYTES_PER_SYNC
                        || (ahead && w.len() > wal.bg_synced_len)
                    {
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
                            self.fs.open_append(&path).and_then(|mut f| f.sync_data())
                        });
                        let same_file = wal.writer.as_ref().is_some_and(|w| w.id() == id);
                        match outcome {
                            Ok(()) if same_file => {
                                self.count_sync(true);
                                wal.bg_synced_len = wal.bg_synced_len.max(len);
                                // The sync mark rides with the next write to the OS.
                                if let Some(w) = wal.writer.as_mut() {
                                    w.note_synced(len);
                                }
                                if target > wal.synced {
                                    wal.synced = target;
                                }
                                durable.fetch_max(target, Ordering::AcqRel);
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
                            let outcome = self.sync_all(&mut wal);
                            match outcome {
                                Ok(()) => {
                                    wal.synced = target;
                                    durable.fetch_max(target, Ordering::AcqRel);
                                }
                                Err(e) => poison(&mut wal, &e),
                            }
                        }
                        wal.last_sync = Instant::now();
                        continue;
                    }
                    self.wal_cv.wait_for(&mut wal, interval - since);
                }
                _ => self.wal_cv.wait(&mut wal),
            }
        }
    }

    /// Asks the log thread to finish and waits for nothing; the caller joins it.
    pub(crate) fn stop(&self) {
        let mut wal = self.wal.lock();
        wal.shutdown = true;
        self.wal_cv.notify_all();
    }
}

/// Stops writes after a failed log write or sync: the file's tail is unknown, so no
/// later record may follow it. Queued async records are dropped (never acknowledged as
/// durable).
pub(super) fn poison(wal: &mut WalState, e: &Error) {
    if wal.poisoned.is_none() {
        tracing::error!(error = %e, "a log write or sync failed; writes are refused until the store is reopened");
        wal.poisoned = Some(e.to_string());
    }
    wal.pending.clear();
}
