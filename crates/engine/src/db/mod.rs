//! [`Db`]: the ordered store. This module holds the public entry points; the work is done
//! along the data path in its submodules, one job per file (docs/DESIGN.md §5.1.1 shows
//! their layers; no file imports one above it):
//!
//! - [`write`]: group commit ([`commit_queue`]) into the WAL ([`log`]) under each
//!   durability mode, then the memtable;
//! - [`counter`]: counter values, resolved into Puts by the write leader;
//! - [`read`], [`scan`]: point reads and scans over one [`super_version`] at a snapshot;
//! - [`flush`], [`compact`]: memtables into tables, tables merged;
//! - [`versions`]: every change of the version (through the manifest) and every deletion
//!   of an obsolete file;
//! - [`catalog`]: keyspaces created, configured and dropped;
//! - [`background`]: the threads that flush and compact, and the foreground triggers;
//! - [`recover`], [`read_only`]: the two opens; [`inner`]: the state they build;
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
//! 4. A table file is deleted only when no live `SuperVersion` (held by readers
//!    and iterators) and no current version lists it.
//! 5. After a failed WAL write or sync, a failed flush or a failed manifest write, the
//!    store refuses writes (`Error::Poisoned` or the original error) and stays readable.

mod background;
mod backup;
mod batch_counters;
#[cfg(test)]
mod blob_tests;
mod catalog;
pub(crate) mod checkpoint;
mod commit_queue;
mod compact;
pub(crate) mod conflict;
mod counter;
#[cfg(test)]
mod crash_tests;
mod flush;
mod follower;
mod inner;
mod log;
mod pinned;
mod read;
mod read_only;
mod read_path;
mod readable;
mod recover;
mod recovery;
mod row_cache;
use row_cache::RowCache;
mod scan;
mod scan_cursor;
mod snapshot;
mod space;
mod stats;
mod stored_options;
mod super_version;
mod table_cache;
mod tombstones;
mod transaction;
mod verify;
mod versions;
mod view_fs;
mod write;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, StdFs};
use crate::key::SeqNo;
use crate::options::{KeyspaceOptions, Options};
use crate::version::NUM_LEVELS;

pub(crate) use backup::temp_sibling;
pub use backup::BackupInfo;
pub use batch_counters::Committed;
pub use catalog::DEFAULT_KEYSPACE;
use inner::Inner;
pub use recovery::{Loss, LossCause, RecoveryReport};
pub use scan::{EntryIter, HeadIter, Iter};
pub use scan_cursor::ScanCursor;
pub use snapshot::Snapshot;
pub use stats::Stats;
pub use transaction::{
    CompareAndSwapError, Isolation, Transaction, TransactionIter, TransactionOptions,
};
pub use verify::{verify, verify_report, VerifiedFile, VerifyReport};

/// Longest keyspace name, in bytes (the manifest's limit).
pub const MAX_KEYSPACE_NAME_LEN: usize = crate::version::MAX_KEYSPACE_NAME_LEN;

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
        let inner = read_only::open(fs, dir, options, false)?;
        Ok(Db {
            _handle: Arc::new(Handle {
                inner: Arc::clone(&inner),
            }),
            inner,
        })
    }

    /// Opens the store in `dir` as a follower: a read-only view, like
    /// [`Db::open_read_only`] (no lock, nothing written, beside a writer in another
    /// process), that [`Db::refresh`] moves to the writer's latest state, and a
    /// background thread moves every `Options::refresh_interval` if one is set.
    ///
    /// A refresh reads the manifest and the log, as an open does, and swaps the new view
    /// in at once; when nothing changed it costs a few metadata calls. Snapshots and
    /// iterators keep the view they began in, with its files open, across refreshes and
    /// whatever the writer compacts or deletes meanwhile. The view lags the writer by at
    /// most the refresh interval plus one refresh, and shows only writes the writer has
    /// handed to the OS (`Durability::None` and `Async` writes still in the writer's
    /// memory are not visible yet).
    ///
    /// ```
    /// use cairn::{Db, Options, Readable};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let writer = Db::open(dir.path(), Options::default())?;
    /// let users = writer.keyspace("users")?;
    /// users.insert("u:1", "Ada")?;
    ///
    /// let follower = Db::open_follower(dir.path(), Options::default())?;
    /// let before = follower.snapshot();
    /// users.insert("u:2", "Grace")?;
    /// assert!(follower.refresh()?); // the view moved
    /// let seen = follower.get_keyspace("users").expect("exists");
    /// assert_eq!(seen.get("u:2")?, Some(b"Grace".to_vec()));
    /// assert_eq!(before.get(&seen, "u:2")?, None); // the snapshot stays where it was
    /// assert!(!follower.refresh()?); // nothing new
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Db::open_read_only`].
    pub fn open_follower(dir: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_follower_with_fs(Arc::new(StdFs), dir.as_ref(), options)
    }

    /// [`Db::open_follower`] through a given file system.
    pub(crate) fn open_follower_with_fs(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: Options,
    ) -> Result<Db> {
        options.validate()?;
        let inner = read_only::open(fs, dir, options, true)?;
        background::start_refresher(&inner)?;
        Ok(Db {
            _handle: Arc::new(Handle {
                inner: Arc::clone(&inner),
            }),
            inner,
        })
    }

    /// Moves a follower's view to the store's current state; returns false if nothing
    /// changed since the last refresh. See [`Db::open_follower`].
    ///
    /// # Errors
    /// `InvalidArgument` if the store was not opened with [`Db::open_follower`];
    /// `Corruption` or `Io` as for [`Db::open_read_only`] (a store that keeps changing
    /// under the refresh is retried a few times). The view is left as it was.
    pub fn refresh(&self) -> Result<bool> {
        follower::refresh(&self.inner)
    }

    /// True if the store was opened with [`Db::open_read_only`] or [`Db::open_follower`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// True if the store was opened with [`Db::open_follower`].
    pub fn is_follower(&self) -> bool {
        self.inner.follower
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
        let id = catalog::create(&self.inner, name, None)?;
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
        let id = catalog::create(&self.inner, name, Some(&options))?;
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
        catalog::drop(&self.inner, name)
    }

    /// A new, empty batch of writes to apply atomically with [`Batch::commit`].
    pub fn batch(&self) -> Batch {
        Batch {
            db: self.clone(),
            batch: crate::batch::WriteBatch::new(),
            error: None,
            increments: commit_queue::Increments::default(),
        }
    }

    /// A consistent view of every keyspace at the current point; O(1) to take, and long
    /// scans through it never block writers. Read through it with the
    /// [`Readable`] methods: `snapshot.get(&keyspace, key)`, `snapshot.range(&keyspace, ..)`.
    pub fn snapshot(&self) -> Snapshot {
        let current = self.inner.reads.supers.read();
        let seqno = SeqNo(self.inner.reads.visible_seqno.load(Ordering::Acquire));
        Snapshot {
            pin: Arc::new(self.inner.snapshots.register(seqno)),
            // A follower's snapshot keeps its view (db/snapshot.rs, invariant 2).
            view: self.inner.follower.then(|| Arc::clone(&current)),
        }
    }

    /// The largest seqno readers see: the number of the last acknowledged write.
    pub fn last_seqno(&self) -> u64 {
        self.inner.reads.visible_seqno.load(Ordering::Acquire)
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
        let inner = &self.inner;
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
        let memtable_bytes = write::memtable_bytes(&st) as u64;
        drop(st);
        let budget = inner.budget;
        let c = &inner.stats;
        let rows = inner.reads.rows.as_ref();
        Stats {
            last_seqno: inner.reads.visible_seqno.load(Ordering::Acquire),
            durable_seqno: inner.durable_seqno.load(Ordering::Acquire),
            tables_per_level,
            table_bytes,
            memtable_bytes,
            wal_bytes_written: inner.log.wal_bytes_written(),
            wal_syncs: inner.log.wal_syncs(),
            flush_bytes_written: c.flush_bytes.load(Ordering::Relaxed),
            compaction_bytes_written: c.compaction_bytes.load(Ordering::Relaxed),
            blob_bytes_written: c.blob_bytes.load(Ordering::Relaxed),
            blob_bytes,
            user_bytes_written: c.user_bytes.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            compactions: c.compactions.load(Ordering::Relaxed),
            merge_failures: c.merge_failures.load(Ordering::Relaxed),
            cache_hits: inner.block_cache.hits(),
            cache_misses: inner.block_cache.misses(),
            cache_refused: inner.block_cache.refused(),
            write_stalls: c.stalls.load(Ordering::Relaxed),
            memory_budget: budget.map(|b| b.total as u64),
            memtable_limit: budget.map(|b| b.memtables as u64),
            block_cache_bytes: inner.block_cache.used_bytes() as u64,
            block_cache_capacity: inner.options.block_cache_size as u64,
            row_cache_bytes: rows.map_or(0, |r| r.used_bytes() as u64),
            row_cache_capacity: rows.map_or(0, |r| r.capacity() as u64),
            row_cache_hits: rows.map_or(0, RowCache::hits),
            row_cache_misses: rows.map_or(0, RowCache::misses),
            index_filter_bytes: inner.reads.tables.index_filter_bytes() as u64,
            index_filter_limit: inner.reads.tables.index_filter_limit().map(|l| l as u64),
        }
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
pub use keyspace::{Batch, Keyspace};
pub use large::ValueReader;
pub use readable::Readable;
pub use space::{BlobFileSpace, SpaceStats};
