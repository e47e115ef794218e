//! [`Db`]: the ordered store. This module holds the shared state and the public entry
//! points; the work is done along the data path in its submodules:
//!
//! - [`write`]: group commit into the WAL under each durability mode, then the memtable;
//! - [`counter`]: counter values, resolved into Puts by the write leader;
//! - [`read`]: point reads and scans over memtables and tables at a snapshot;
//! - [`flush`]: memtable → one table per keyspace, recorded in the manifest;
//! - [`background`]: the threads that flush and compact, and deletion of obsolete files;
//! - [`recover`]: opening a store: manifest, then WAL replay;
//! - [`checkpoint`]: the files of one consistent state, for [`backup`], packs and
//!   [`verify`].
//!
//! Invariants (see docs/DESIGN.md for the full argument):
//! 1. Seqnos are assigned by the write leader in WAL order; a write is visible to readers
//!    only after every write with a smaller seqno is in the memtable
//!    (`visible_seqno`), so readers never see part of a batch or a hole.
//! 2. WAL records reach the file in seqno order whatever each write's durability, so
//!    whatever survives a crash is a prefix.
//! 3. Every write with seqno `<= version.flushed_seqno()` is in a table recorded in the
//!    manifest; WAL files below `version.wal_min_id()` hold nothing else and may go.
//! 4. A table file is deleted only when no live [`read::SuperVersion`] (held by readers
//!    and iterators) and no current version lists it.
//! 5. After a failed WAL write or sync, a failed flush or a failed manifest write, the
//!    store refuses writes (`Error::Poisoned` or the original error) and stays readable.

mod background;
mod backup;
#[cfg(test)]
mod blob_tests;
pub(crate) mod checkpoint;
mod counter;
#[cfg(test)]
mod crash_tests;
pub(crate) mod flush;
mod read;
mod read_only;
mod recover;
mod recovery;
mod tombstones;
mod verify;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem, StdFs};
use crate::key::{KeyspaceId, SeqNo};
use crate::memtable::Memtable;
use crate::options::{Durability, KeyspaceOptions, Options};
use crate::snapshot::{Registry, Snapshot};
use crate::table::BlockCache;
use crate::version::{Manifest, Version};

pub(crate) use backup::temp_sibling;
pub use backup::BackupInfo;
pub(crate) use read::{install, SuperVersion};
pub use read::{EntryIter, HeadIter, Iter};
pub use recovery::{Loss, LossCause, RecoveryReport};
pub use verify::{verify, verify_report, VerifiedFile, VerifyReport};

/// The name of the keyspace every store has.
pub const DEFAULT_KEYSPACE: &str = "default";

/// Longest keyspace name, in bytes (the manifest's limit).
pub const MAX_KEYSPACE_NAME_LEN: usize = crate::version::MAX_KEYSPACE_NAME_LEN;

/// Manifest bytes after which a fresh manifest is started.
const MAX_MANIFEST_SIZE: u64 = 64 << 20;

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
    /// Table ids being written (not yet in a version), kept from obsolete-file deletion.
    pub(crate) pending_outputs: Vec<u64>,
    /// When an idle background thread next looks for tables with expired entries.
    pub(crate) next_expiry_check: std::time::Instant,
    /// Blob files removed from the version, deleted once no reader can reach them.
    pub(crate) obsolete_blobs: Vec<u64>,
    /// Set by flushes and compactions: an idle background thread runs value-log GC.
    pub(crate) gc_due: bool,
}

/// Everything the store's threads share.
pub(crate) struct Inner {
    /// A weak reference to this `Inner`, for cursors that open tables lazily.
    pub(crate) me: Weak<Inner>,
    pub(crate) dir: PathBuf,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) options: Options,
    /// The directory lock; `None` for a read-only open, which takes none.
    pub(crate) _lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Opened with [`Db::open_read_only`]: nothing is ever written, and no background
    /// thread runs.
    pub(crate) read_only: bool,
    pub(crate) state: Mutex<State>,
    /// Wakes background threads (new memtable to flush, new tables to compact, shutdown).
    pub(crate) bg_cv: Condvar,
    /// Wakes writers held back by a full memtable queue or too many level-0 tables.
    pub(crate) stall_cv: Condvar,
    pub(crate) super_version: RwLock<Arc<SuperVersion>>,
    /// Super versions handed to readers, to know which tables are still in use.
    pub(crate) live_supers: Mutex<Vec<Arc<SuperVersion>>>,
    pub(crate) write: write::WritePath,
    /// The largest seqno readers may see.
    pub(crate) visible_seqno: AtomicU64,
    /// The largest seqno known to survive power loss.
    pub(crate) durable_seqno: AtomicU64,
    /// The store's one file-id counter (shared with the value log's writers).
    pub(crate) next_file_id: Arc<AtomicU64>,
    /// Reads separated values from blob files.
    pub(crate) blobs: crate::vlog::Reader,
    pub(crate) snapshots: Arc<Registry>,
    pub(crate) block_cache: Arc<BlockCache>,
    pub(crate) tables: read::TableCache,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) closed: AtomicBool,
    pub(crate) stats: background::Counters,
    /// What the open recovered and left out.
    pub(crate) recovery: RecoveryReport,
    /// For a read-only store, the files its view was read from (for checkpoints).
    pub(crate) read_point: Option<ReadPoint>,
}

/// The files a read-only view was read from.
#[derive(Debug, Clone)]
pub(crate) struct ReadPoint {
    /// The manifest whose version the view holds.
    pub(crate) manifest_id: u64,
    /// Each log file replayed, with the length read: (id, bytes).
    pub(crate) wal_lens: Vec<(u64, u64)>,
    /// Every file of the view (tables, blob files, log files), by name, opened during the
    /// open and held for the view's life.
    pub(crate) files: std::collections::BTreeMap<String, Arc<dyn crate::fs::ReadableFile>>,
}

impl Inner {
    /// A weak handle to this store's shared state.
    pub(crate) fn self_ref(&self) -> Weak<Inner> {
        Weak::clone(&self.me)
    }

    pub(crate) fn new_file_id(&self) -> u64 {
        self.next_file_id.fetch_add(1, Ordering::SeqCst)
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
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::invalid("the store is closed"));
        }
        if let Some((during, e)) = &self.state.lock().bg_error {
            return Err(Error::Stopped {
                during,
                cause: Box::new(e.duplicate()),
            });
        }
        Ok(())
    }
}

/// Statistics of a store, for monitoring and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// The largest seqno readers see.
    pub last_seqno: u64,
    /// The largest seqno known to survive power loss.
    pub durable_seqno: u64,
    /// Table files per level, summed over keyspaces.
    pub tables_per_level: Vec<usize>,
    /// Bytes of table files, summed over keyspaces.
    pub table_bytes: u64,
    /// Bytes of the memtables (active and waiting to be flushed).
    pub memtable_bytes: u64,
    /// Bytes the WAL writer has written to log files.
    pub wal_bytes_written: u64,
    /// Bytes written to tables by flushes.
    pub flush_bytes_written: u64,
    /// Bytes written to tables by compactions.
    pub compaction_bytes_written: u64,
    /// Key and value bytes written to blob files: separated values as they are written,
    /// and values moved by value-log garbage collection.
    pub blob_bytes_written: u64,
    /// Bytes of the blob files the current version lists (flushed separated values, live
    /// and garbage; see [`Db::space_stats`]).
    pub blob_bytes: u64,
    /// Bytes of user keys and values written (the denominator of write amplification).
    pub user_bytes_written: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Compactions completed.
    pub compactions: u64,
    /// Block-cache hits and misses.
    pub cache_hits: u64,
    /// Block-cache misses.
    pub cache_misses: u64,
    /// Missed blocks the block cache did not keep: a full cache keeps a block only when it
    /// is missed again soon after (see `Options::block_cache_size`). Many refusals with a
    /// low hit rate mean the data read is much larger than the cache.
    pub cache_refused: u64,
    /// Times a writer was slowed or held for background work.
    pub write_stalls: u64,
}

/// An ordered key-value store with named keyspaces, snapshots and tunable durability.
///
/// `Db` is cheap to clone (an `Arc`) and `Send + Sync`: share it between threads. One
/// process at a time may open a store directory; a second open fails with an `Io` error
/// of kind `WouldBlock` ("already locked").
#[derive(Clone)]
pub struct Db {
    pub(crate) inner: Arc<Inner>,
    /// Shared by every clone (and keyspace handle); the last one to drop shuts the
    /// background threads down.
    _handle: Arc<Handle>,
}

/// Shuts the store's background work down when the last user handle drops.
struct Handle {
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = background::shutdown(&self.inner);
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens the store in `dir`, creating it if `options.create_if_missing`, and recovers
    /// every write the durability contract promises from its log.
    ///
    /// # Errors
    /// `InvalidArgument` for bad options; `Io` if the directory cannot be used or another
    /// process has the store open; `Corruption` if a file is damaged beyond what recovery
    /// may repair (see `Options::salvage_wal`).
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_with_fs(Arc::new(StdFs), dir.as_ref(), options)
    }

    /// Opens the store in `dir` read-only, at one point: the manifest's version plus the
    /// write-ahead log replayed into memory. It takes no lock and writes nothing (no file
    /// is created, renamed, deleted or synced), so it works while another process has the
    /// store open for writing, on a read-only file system, and on a backup. Every table
    /// and blob file of the view is held open, so the writer's later compactions and
    /// deletions do not disturb it; the view does not follow later writes (open again to
    /// see them). Writes, keyspace changes, flushes, compactions and log syncs return
    /// [`Error::ReadOnly`]. `options` give the read settings (caches, `salvage_wal` to
    /// read past damage); options that shape files are ignored.
    ///
    /// ```
    /// use cairn::{Db, Error, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let writer = Db::open(dir.path(), Options::default())?;
    /// writer.keyspace("users")?.insert("u:1", "Ada")?;
    ///
    /// // Another process (or this one) reads beside the writer.
    /// let reader = Db::open_read_only(dir.path(), Options::default())?;
    /// let users = reader.get_keyspace("users").expect("exists");
    /// assert_eq!(users.get("u:1")?, Some(b"Ada".to_vec()));
    /// assert!(matches!(users.insert("u:2", "Grace"), Err(Error::ReadOnly)));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` if `dir` holds no store; `Corruption` if a file is damaged (as
    /// [`Db::open`]); `Io`. A store that keeps changing under the open (a writer
    /// compacting) is retried a few times before the last error is returned.
    pub fn open_read_only(dir: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_read_only_with_fs(Arc::new(StdFs), dir.as_ref(), options)
    }

    /// [`Db::open_read_only`] through a given file system.
    pub(crate) fn open_read_only_with_fs(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: Options,
    ) -> Result<Db> {
        options.validate()?;
        let inner = read_only::open(fs, dir, options)?;
        Ok(Db {
            _handle: Arc::new(Handle {
                inner: Arc::clone(&inner),
            }),
            inner,
        })
    }

    /// True if the store was opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// Opens the store through a given file system (tests inject faults through it).
    pub(crate) fn open_with_fs(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: Options,
    ) -> Result<Db> {
        options.validate()?;
        let inner = recover::open(fs, dir, options)?;
        background::start(&inner)?;
        Ok(Db {
            _handle: Arc::new(Handle {
                inner: Arc::clone(&inner),
            }),
            inner,
        })
    }

    /// Opens the keyspace `name`, creating it if it does not exist.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty name or one longer than [`MAX_KEYSPACE_NAME_LEN`];
    /// `Io` if the manifest cannot be written.
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        if let Some(ks) = self.get_keyspace(name) {
            return Ok(ks);
        }
        let id = background::create_keyspace(&self.inner, name)?;
        Ok(Keyspace::new(self, id, name))
    }

    /// Opens the keyspace `name` with `options`, creating it if it does not exist. The
    /// options are recorded in the manifest (a reopened store keeps them; a later
    /// `keyspace_with` may change them, affecting new writes only):
    ///
    /// ```
    /// use cairn::{Db, KeyspaceOptions, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let media = db.keyspace_with("media", KeyspaceOptions::separated(4096))?;
    /// media.insert("clip", vec![7u8; 100_000])?; // stored in a blob file
    /// let head = media.head("clip")?.expect("present");
    /// assert!(head.separated && head.value_len == 100_000);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Db::keyspace`].
    pub fn keyspace_with(&self, name: &str, options: KeyspaceOptions) -> Result<Keyspace> {
        let id = background::create_keyspace_with(&self.inner, name, &options)?;
        Ok(Keyspace::new(self, id, name))
    }

    /// The keyspace `name`, if it exists.
    pub fn get_keyspace(&self, name: &str) -> Option<Keyspace> {
        let version = Arc::clone(&self.inner.state.lock().version);
        version
            .keyspace_by_name(name)
            .map(|(id, _)| Keyspace::new(self, id, name))
    }

    /// The names of all keyspaces, sorted.
    pub fn keyspace_names(&self) -> Vec<String> {
        let version = Arc::clone(&self.inner.state.lock().version);
        let mut names: Vec<String> = version.keyspaces().map(|(_, k)| k.name.clone()).collect();
        names.sort();
        names
    }

    /// Drops keyspace `name` and all its data. Handles to it fail from then on.
    ///
    /// # Errors
    /// `InvalidArgument` if it does not exist; `Io` if the manifest cannot be written.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        background::drop_keyspace(&self.inner, name)
    }

    /// A new, empty batch of writes to apply atomically with [`Batch::commit`].
    pub fn batch(&self) -> Batch {
        Batch {
            db: self.clone(),
            batch: crate::batch::WriteBatch::new(),
            error: None,
        }
    }

    /// A consistent view of every keyspace at the current point; O(1) to take, and long
    /// scans through it never block writers. See [`Keyspace::get_at`] and
    /// [`Keyspace::range_at`].
    pub fn snapshot(&self) -> Snapshot {
        let _super = self.inner.super_version.read();
        let seqno = SeqNo(self.inner.visible_seqno.load(Ordering::Acquire));
        Snapshot {
            pin: Arc::new(self.inner.snapshots.register(seqno)),
        }
    }

    /// The largest seqno readers see: the number of the last acknowledged write.
    pub fn last_seqno(&self) -> u64 {
        self.inner.visible_seqno.load(Ordering::Acquire)
    }

    /// The largest seqno known to survive a power loss: every write numbered up to it is
    /// fsynced in the log or flushed into a table. Never overstates.
    pub fn durable_seqno(&self) -> u64 {
        self.inner.durable_seqno.load(Ordering::Acquire)
    }

    /// Hands every logged write to the OS and, with `sync`, fsyncs the log, so that
    /// [`Db::durable_seqno`] covers every acknowledged write.
    ///
    /// # Errors
    /// `Io` or `Poisoned` if the log cannot be written.
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        write::flush_wal(&self.inner, sync)
    }

    /// Seals the memtable, flushes it and every other sealed memtable into tables, and
    /// waits until that is done.
    ///
    /// # Errors
    /// Any error of the flush.
    pub fn flush(&self) -> Result<()> {
        background::flush_and_wait(&self.inner)
    }

    /// Flushes every sealed memtable (not the active one) and waits until no flush or
    /// compaction is pending (every level within its target).
    ///
    /// # Errors
    /// The background error, if one stopped the work.
    pub fn wait_for_compactions(&self) -> Result<()> {
        background::wait_idle(&self.inner)
    }

    /// Rewrites, now, every table holding an entry whose expiry has passed (by the store's
    /// [`crate::Clock`]), so the space of expired entries is reclaimed; returns the number
    /// of compactions run. Background threads do the same on their own every
    /// `Options::expiry_check_interval` when idle; this is the deterministic trigger.
    ///
    /// # Errors
    /// The background error, if one stopped the work; errors of the compactions.
    pub fn compact_expired(&self) -> Result<usize> {
        background::compact_expired(&self.inner)
    }

    /// Where the store's bytes are: per blob file of the value log its live and garbage
    /// bytes, and the bytes of tables and WAL files. Opens every table of the current
    /// version (to read its blob references) if it is not open yet.
    ///
    /// # Errors
    /// `Io` or `Corruption` from the tables or the directory listing.
    pub fn space_stats(&self) -> Result<SpaceStats> {
        space::space_stats(&self.inner)
    }

    /// Compacts the whole store now, like RocksDB's `CompactRange` over everything: flushes
    /// the memtable, then merges each keyspace's levels until its data sits in one level,
    /// rewriting every table. Versions no snapshot needs, tombstones and expired entries
    /// are dropped, and values the dropped versions held in blob files become garbage that
    /// [`Db::collect_garbage`] reclaims. Returns the number of compactions run. Writers and
    /// readers keep going meanwhile; background compactions run beside it.
    ///
    /// # Errors
    /// The background error, if one stopped writes; errors of the flush or compactions.
    pub fn compact(&self) -> Result<usize> {
        background::compact_all(&self.inner)
    }

    /// Runs value-log garbage collection now: blob files no table references any more
    /// are removed (their files deleted once no snapshot or iterator can read them), and
    /// files whose garbage share reaches `Options::blob_gc_garbage_percent` have their
    /// live values moved to a new file by compacting the tables that reference them.
    /// Background threads run the same after flushes and compactions; this is the
    /// deterministic trigger. Returns the number of blob files removed.
    ///
    /// # Errors
    /// The background error, if one stopped writes; errors of the manifest write or of
    /// the compactions.
    pub fn collect_garbage(&self) -> Result<usize> {
        background::collect_garbage(&self.inner)
    }

    /// Bytes the store takes on disk: the sum of the lengths of every file in its
    /// directory (tables, log files, manifests, `CURRENT`, the lock file, and any other
    /// kind of file the store keeps there). It lists the directory, so it is O(files)
    /// metadata calls; files deleted meanwhile (by compaction) are skipped.
    ///
    /// # Errors
    /// `Io` if the directory cannot be listed or a file's length cannot be read.
    pub fn disk_size(&self) -> Result<u64> {
        let inner = &self.inner;
        let mut total = 0u64;
        for name in inner.fs.list_dir(&inner.dir)? {
            match inner.fs.file_len(&inner.dir.join(&name)) {
                Ok(len) => total += len,
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }

    /// Statistics of the store.
    pub fn stats(&self) -> Stats {
        background::stats(&self.inner)
    }

    /// What opening the store recovered from its log and what it left out: torn tails
    /// and a log cut at a value that never became durable (normal after a crash), and,
    /// under `Options::salvage_wal`, every damaged range and write it skipped, with the
    /// seqnos lost where known.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Writes and fsyncs the log, stops background threads (a running flush or compaction
    /// finishes first) and refuses later writes through every clone. The directory lock is
    /// released when the last handle and iterator are gone. Dropping the last handle
    /// without `close` does the same, reporting no error.
    ///
    /// # Errors
    /// The first error of the final log sync or of a background job.
    pub fn close(self) -> Result<()> {
        background::shutdown(&self.inner)
    }
}

mod keyspace;
mod large;
mod space;
pub use keyspace::{Batch, Keyspace};
pub use large::ValueReader;
pub use space::{BlobFileSpace, SpaceStats};

/// Which durability a write uses: its own, or the store's default.
pub(crate) fn effective(inner: &Inner, requested: Option<Durability>) -> Durability {
    requested.unwrap_or(inner.options.durability)
}
