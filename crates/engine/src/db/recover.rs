//! Opening a store: lock the directory, load the version from the manifest, replay the
//! WAL above the flushed seqno into memtables, start a fresh manifest and a fresh WAL
//! file, and delete files no version needs.
//!
//! Rules:
//! 1. Only WAL files with id `>= version.wal_min_id()` are read, in id order, and only
//!    records above `version.flushed_seqno()` are applied.
//! 2. Seqnos must continue without a gap from the flushed seqno through every record:
//!    a gap means acknowledged writes are missing before later ones (a hole), which is
//!    refused as corruption, unless `Options::salvage_wal` is set.
//! 3. A torn tail (damage with nothing valid after it) ends a file cleanly: those writes
//!    were not durable. Damage followed by valid records is corruption (or skipped and
//!    reported under salvage).
//! 4. Recovery never modifies old files. The manifest it reads and the replayed WAL files
//!    are fsynced (they may hold edits and writes that had only reached the OS) before
//!    anything is deleted or acknowledged on their strength, then a new manifest and a
//!    new WAL file are created. A crash at any point of recovery leaves a store that
//!    recovers the same way.
//! 5. Every table the manifest lists, and the WAL file its `wal_min_id` names (once a flush
//!    has set it), must exist, or the store is refused as corrupt. Both are durable before
//!    an edit names them and deleted only after a later edit stops naming them, so a crash
//!    never removes them; but damage inside the manifest's last record reads as a torn
//!    append, and recovering the version before that edit would silently lose the writes
//!    of a flush whose WAL files are gone, or read the deleted inputs of a compaction.
//! 7. A WAL record holding a value handle whose blob record is missing or damaged ends the
//!    log if the record was in the WAL's unsynced tail (`vlog/FORMAT.md` §7), even if
//!    later WAL files exist; the replayed prefix is then flushed before the store opens, so
//!    the discarded tail is never read again. If the record was durable (a sync mark
//!    after it in its file, `wal/FORMAT.md` §7) or its blob file is listed in the version
//!    (synced before the manifest named it), its value was durable too and the damage is
//!    corruption: refused, or under salvage that one write is skipped and reported.
//! 8. Blob files no version lists are added by the first flush of the replayed memtable
//!    that references them (scanned for their valid prefix); unreferenced ones are
//!    leftovers (of a crash before their values were logged) and are deleted. The file-id
//!    counter is raised above every blob file id, and no recovered blob file is appended
//!    to again.
//! 6. A table no version lists is a leftover of a flush or compaction that did not commit,
//!    deleted at open; its writes are also in the replayed WAL or in listed tables. One
//!    holding a seqno above the last recovered one is instead the output of manifest edits
//!    that were lost (a cut or damaged manifest): the store is refused (unless
//!    `salvage_wal`) rather than deleting the only copy of acknowledged writes.
//! 9. What replay leaves out (torn tails, a cut log, ranges and writes salvage skipped) is
//!    reported in the [`RecoveryReport`], with the seqnos lost where known.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::catalog::DEFAULT_KEYSPACE;
use super::commit_queue::CommitQueue;
use super::inner::{Inner, ReadPoint, State};
use super::log::Log;
use super::read_path::ReadPath;
use super::recovery::{Loss, LossCause, RecoveryReport};
use super::stats::Counters;
use super::super_version::SuperVersions;
use super::table_cache::TableCache;
use super::{flush, stored_options, versions};
use std::collections::{BTreeMap, BTreeSet};

use crate::batch::{Op, WriteBatch};
use crate::budget::Budget;
use crate::entry::{self, Body, EntryView};
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{self, BlobId, FileType, TableId};
use crate::fs::FileSystem;
use crate::key::{KeyspaceId, SeqNo};
use crate::memtable::{KeyspaceBytes, Memtable};
use crate::options::Options;
use crate::snapshot::Registry;
use crate::table::{self, BlockCache};
use crate::version::{Edit, Manifest, Version};
use crate::vlog;
use crate::wal;

/// Opens (or creates) the store in `dir`.
pub(crate) fn open(fs: Arc<dyn FileSystem>, dir: &Path, given: Options) -> Result<Arc<Inner>> {
    // The sizes a memory budget replaces are this open's, not the store's: the manifest
    // records the options as given (`crate::budget`).
    let options = Budget::effective(given.clone())?;
    let rows = super::row_cache::RowCache::new(options.row_cache_size)?;
    if !fs.exists(dir)? {
        if !options.create_if_missing {
            return Err(Error::invalid(format!(
                "no store at {} (and create_if_missing is off)",
                dir.display()
            )));
        }
        create_dir_all(fs.as_ref(), dir)?;
    }
    if let Err(Error::Io { source, .. }) = fs.list_dir(dir) {
        if source.kind() == std::io::ErrorKind::NotADirectory {
            return Err(Error::invalid(format!(
                "{} is a file, not a store directory",
                dir.display()
            )));
        }
    }
    // Without CURRENT, a directory holding store files is a damaged store (Corruption from
    // `Manifest::recover`, which only reads), not a missing one.
    if !options.create_if_missing
        && !fs.exists(&dir.join(files::CURRENT))?
        && Manifest::recover(fs.as_ref(), dir)?.is_none()
    {
        return Err(Error::invalid(format!(
            "no store at {} (and create_if_missing is off)",
            dir.display()
        )));
    }
    let lock = lock_store(fs.as_ref(), &dir.join(files::LOCK))?;
    let names = fs.list_dir(dir)?;
    let max_id = names
        .iter()
        .filter_map(|n| {
            FileType::Table
                .parse(n)
                .or_else(|| FileType::Wal.parse(n))
                .or_else(|| FileType::Manifest.parse(n))
                .or_else(|| FileType::Blob.parse(n))
        })
        .max()
        .unwrap_or(0);

    let recovered = Manifest::recover(fs.as_ref(), dir)?;
    let new_store = recovered.is_none();
    let manifest = recovered
        .as_ref()
        .map(|r| dir.join(FileType::Manifest.name(r.manifest_id)));
    let mut version = match recovered {
        Some(recovered) => recovered.version,
        None => {
            if !options.create_if_missing {
                return Err(Error::invalid(format!(
                    "no store at {} (and create_if_missing is off)",
                    dir.display()
                )));
            }
            let edit = Edit {
                created_keyspaces: vec![(KeyspaceId(0), DEFAULT_KEYSPACE.to_string())],
                next_keyspace_id: Some(1),
                ..Edit::default()
            };
            Version::empty().apply(&edit, dir, 0)?
        }
    };
    if let Some(manifest) = &manifest {
        check_named_files(&names, &version, manifest)?;
        // The version read may include an edit that reached only the OS before a crash.
        // Recovery deletes files by it (rule 8), so it must survive a crash of this open:
        // otherwise the next open could read the older version, which may still list a
        // file deleted here.
        fs.open_append(manifest)?.sync_data()?;
    }
    // A new store's directory holds at most the manifest of a first open that crashed
    // before `CURRENT` named it (`Manifest::recover` refuses anything more). The new
    // manifest takes that file's id, so `Manifest::create` replaces it: a second leftover
    // beside it would make a crash during this open look like a damaged store.
    let first_free = if new_store { max_id } else { max_id + 1 };
    let next_file_id = Arc::new(AtomicU64::new(version.next_file_id().max(first_free)));
    let blobs = vlog::Reader::new(Arc::clone(&fs), dir, options.max_open_blob_files);

    // Replay.
    let mut wal_ids: Vec<u64> = names
        .iter()
        .filter_map(|n| FileType::Wal.parse(n))
        .filter(|id| *id >= version.wal_min_id())
        .collect();
    wal_ids.sort_unstable();
    let mut replay = replay(
        fs.as_ref(),
        dir,
        &wal_ids,
        &version,
        &options,
        &blobs,
        Mode::Recover,
    )?;
    attach_unlisted_blobs(fs.as_ref(), dir, &names, &version, &replay, true)?;
    let last_seqno = replay.last_seqno;
    if let (Some(manifest), false) = (&manifest, options.salvage_wal) {
        check_unlisted_tables(fs.as_ref(), dir, &names, &version, last_seqno, manifest)?;
    }

    // A fresh manifest, then a fresh WAL file (in this order: a directory with a WAL file
    // but no manifest is not a new store but a damaged one); from here the store is as
    // after a clean open.
    let manifest_id = next_file_id.fetch_add(1, Ordering::SeqCst);
    let wal_id = next_file_id.fetch_add(1, Ordering::SeqCst);
    // The new manifest's snapshot also records this open's file-shaping options
    // (`db/stored_options.rs`, invariant 1).
    let recorded = stored_options::record(&given);
    let bump = Edit {
        next_file_id: Some(next_file_id.load(Ordering::SeqCst)),
        store_options: (version.store_options() != Some(&recorded)).then_some(recorded),
        ..Edit::default()
    };
    version = version.apply(&bump, dir, 0)?;
    let manifest = Manifest::create(Arc::clone(&fs), dir, manifest_id, &version)?;
    let writer = wal::Writer::create(fs.as_ref(), dir, wal_id)?;
    // With nothing replayed, every older log file holds only flushed writes (or none):
    // the new log is the first one needed. Recording that (only now that the new file
    // exists, since a manifest must never name a missing log) lets the old files be
    // deleted below instead of piling up, one per open. (This also covers a log cut
    // short at its first record by a lost blob record, rule 7.)
    let mut manifest = manifest;
    if replay.memtables.is_empty() && !wal_ids.is_empty() {
        let edit = Edit {
            wal_min_id: Some(wal_id),
            ..Edit::default()
        };
        manifest.append(&edit)?;
        version = version.apply(&edit, dir, 0)?;
    }
    let ids = Arc::clone(&next_file_id);
    let blob_writer = vlog::Writer::new(
        Arc::clone(&fs),
        dir,
        vlog::WriterOptions {
            max_file_len: options.blob_file_size,
        },
        Box::new(move || ids.fetch_add(1, Ordering::SeqCst)),
    );

    // Replayed writes wait in immutable memtables, which the background flush turns into
    // tables at once; new writes go to a fresh memtable over the new log. So the replayed
    // log files are deleted soon after an open, and the next open replays nothing. After a
    // log cut short by a lost blob record they are flushed before the store opens instead
    // (rule 7, below).
    let log = Log::new(
        Arc::clone(&fs),
        Some(writer),
        blob_writer,
        last_seqno.0,
        last_seqno.0,
    );
    let inner = assemble(
        fs,
        dir,
        options.clone(),
        Opened {
            lock: Some(lock),
            manifest: Some(manifest),
            mem: Arc::new(Memtable::with_huge_pages(
                wal_id,
                options.memtable_size,
                options.memtable_huge_pages,
            )),
            imm: std::mem::take(&mut replay.memtables),
            version: Arc::new(version),
            log,
            last: last_seqno,
            next_file_id,
            blobs,
            recovery: std::mem::take(&mut replay.report),
            read_point: None,
            rows,
            follower: false,
        },
    );
    log_recovery(&inner.recovery);
    // A log cut short, or one salvage skipped damage in, is never read again: its
    // replayed prefix goes into tables before the store opens, so the next open (with or
    // without salvage) starts after it.
    if replay.cut_short || inner.recovery.lost_durable_writes() {
        while !inner.state.lock().imm.is_empty() {
            flush::flush_oldest(&inner)?;
        }
    }
    versions::delete_obsolete_files(&inner);
    Ok(inner)
}

/// What an open (read-write or read-only) found and made, for [`assemble`].
pub(super) struct Opened {
    /// The directory lock; `None` for a read-only open.
    pub(super) lock: Option<Box<dyn crate::fs::FileLock>>,
    /// The manifest appended to; `None` for a read-only open.
    pub(super) manifest: Option<Manifest>,
    pub(super) mem: Arc<Memtable>,
    /// Replayed memtables, oldest first.
    pub(super) imm: Vec<Arc<Memtable>>,
    pub(super) version: Arc<Version>,
    pub(super) log: Log,
    /// The last recovered seqno: visible and durable.
    pub(super) last: SeqNo,
    pub(super) next_file_id: Arc<AtomicU64>,
    pub(super) blobs: vlog::Reader,
    pub(super) recovery: RecoveryReport,
    /// `Some` for a read-only open, which this makes the store.
    pub(super) read_point: Option<ReadPoint>,
    /// The row cache (`Options::row_cache_size`), allocated before the open did any work.
    pub(super) rows: Option<super::row_cache::RowCache>,
    /// A read-only open that follows the writer (`Db::open_follower`).
    pub(super) follower: bool,
}

/// The store's shared state from what an open found. A read-only store (`read_point`
/// set) never flushes or collects garbage and never evicts an open table; a read-write
/// one flushes its replayed memtables at once, however few.
pub(super) fn assemble(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    options: Options,
    o: Opened,
) -> Arc<Inner> {
    let read_only = o.read_point.is_some();
    let state = State {
        mem: o.mem,
        version: o.version,
        manifest: o.manifest,
        flushing: false,
        flush_requested: !read_only && !o.imm.is_empty(),
        imm: o.imm,
        last_seal: Instant::now(),
        compacting: Vec::new(),
        bg_error: None,
        shutting_down: false,
        pending_outputs: Vec::new(),
        obsolete_blobs: Vec::new(),
        gc_due: !read_only,
        read_point: o.read_point,
        next_expiry_check: Instant::now() + options.expiry_check_interval,
    };
    let supers = SuperVersions::new(state.super_version());
    let block_cache = Arc::new(BlockCache::new(options.block_cache_size));
    // Validated by every open before it got here.
    let budget = Budget::of(&options).ok().flatten();
    let table_capacity = if read_only {
        usize::MAX
    } else {
        options.max_open_tables
    };
    Arc::new(Inner {
        dir: dir.to_path_buf(),
        reads: Arc::new(ReadPath {
            tables: Arc::new(TableCache::new(
                Arc::clone(&fs),
                dir,
                Arc::clone(&block_cache),
                table_capacity,
                budget.map(|b| b.index_filter),
                if options.mmap_reads {
                    table::Access::Map
                } else {
                    table::Access::Pread
                },
            )),
            rows: o.rows,
            supers,
            visible_seqno: AtomicU64::new(o.last.0),
            blobs: Arc::new(o.blobs),
            clock: options.clock.clone(),
            merge: crate::merge::Registry::default(),
            _lock: Mutex::new(o.lock),
        }),
        fs,
        read_only,
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        stall_cv: Condvar::new(),
        commits: CommitQueue::default(),
        log: o.log,
        durable_seqno: AtomicU64::new(o.last.0),
        next_file_id: o.next_file_id,
        snapshots: Arc::new(Registry::default()),
        block_cache,
        threads: Mutex::new(Vec::new()),
        closed: AtomicBool::new(false),
        stats: Counters::default(),
        recovery: o.recovery,
        follower: o.follower,
        refreshing: Mutex::new(false),
        budget,
        options,
    })
}

/// Creates `dir` and every missing directory above it, top down, making each new entry
/// durable in its parent before anything is created inside it.
fn create_dir_all(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let mut missing = vec![dir.to_path_buf()];
    let mut up = dir.parent();
    while let Some(p) = up.filter(|p| !p.as_os_str().is_empty()) {
        if fs.exists(p)? {
            break;
        }
        missing.push(p.to_path_buf());
        up = p.parent();
    }
    for d in missing.iter().rev() {
        fs.create_dir(d)?;
        fs.sync_dir(&crate::fs::parent_of(d))?;
    }
    Ok(())
}

/// Gives each blob file the replayed records reference but the version does not list to
/// the first memtable referencing it, as its flush must record it (rule 8), and, with
/// `delete`, deletes blob files nothing references.
pub(super) fn attach_unlisted_blobs(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
    version: &Version,
    replay: &Replayed,
    delete: bool,
) -> Result<()> {
    for name in names {
        let Some(id) = BlobId::parse(name) else {
            continue;
        };
        if version.blob_files().contains_key(&id) {
            continue;
        }
        let path = dir.join(name);
        let Some(&index) = replay.blob_refs.get(&id) else {
            // No replayed record and no table references it: its values were never logged
            // durably. It may be partly written; nothing will ever read it.
            if delete {
                fs.remove(&path)?;
            }
            continue;
        };
        let scanned = vlog::scan_path(fs, &path, true)?;
        let file_size = if scanned.footer.is_some() {
            scanned.valid_end + vlog::FOOTER_LEN
        } else {
            scanned.valid_end
        };
        let meta = vlog::BlobFileMeta {
            id,
            file_size,
            record_count: scanned.records.len() as u64,
            value_bytes: scanned.value_bytes,
        };
        if let Some(mem) = replay.memtables.get(index) {
            mem.attach_blob_files(vec![meta]);
        }
    }
    Ok(())
}

/// The error for a manifest that disagrees with the files in the directory (rules 5, 6).
fn disagrees(manifest: &Path, field: &'static str, detail: String) -> Error {
    Error::corruption(
        FileKind::Manifest,
        manifest,
        0,
        Reason::HeaderField { field, detail },
    )
}

/// Refuses a manifest that names a missing table, or a missing WAL file to start replay
/// from (rule 5).
pub(super) fn check_named_files(
    names: &[String],
    version: &Version,
    manifest: &Path,
) -> Result<()> {
    let missing = |field, name: String| {
        let detail = format!(
            "names {name}, which does not exist: edits of the manifest are missing or damaged, \
             or the file was deleted"
        );
        disagrees(manifest, field, detail)
    };
    for id in version.live_table_ids() {
        let name = id.file_name();
        if !names.contains(&name) {
            return Err(missing("table", name));
        }
    }
    for &id in version.blob_files().keys() {
        let name = id.file_name();
        if !names.contains(&name) {
            return Err(missing("blob file", name));
        }
    }
    let wal_min = version.wal_min_id();
    if wal_min > 0 && !names.contains(&FileType::Wal.name(wal_min)) {
        return Err(missing("wal_min_id", FileType::Wal.name(wal_min)));
    }
    Ok(())
}

/// Refuses to recover past a table no version lists that holds writes newer than the
/// last recovered seqno (rule 6): such a table is the output of edits the manifest no
/// longer has, and deleting it as a leftover would lose acknowledged writes. Tables that
/// do not open are skipped: a crash tears leftovers.
pub(super) fn check_unlisted_tables(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
    version: &Version,
    last: SeqNo,
    manifest: &Path,
) -> Result<()> {
    let listed = version.live_table_ids();
    let cache = Arc::new(BlockCache::new(0));
    for name in names {
        let Some(id) = TableId::parse(name).filter(|id| !listed.contains(id)) else {
            continue;
        };
        let Ok(reader) = table::Reader::open(fs, &dir.join(name), id, Arc::clone(&cache)) else {
            continue;
        };
        let newest = reader.meta().max_seqno;
        if newest > last {
            let detail = format!(
                "does not list {name}, which holds writes up to seqno {} while recovery ends \
                 at seqno {}: edits of the manifest are missing or damaged",
                newest.0, last.0
            );
            return Err(disagrees(manifest, "table", detail));
        }
    }
    Ok(())
}

/// How long `open` keeps trying to take a lock that is held.
const LOCK_PATIENCE: Duration = Duration::from_millis(250);

/// Takes the store's lock. A held lock is retried for [`LOCK_PATIENCE`]: the lock is an
/// `flock`, which a child process forked by the application keeps (through its copy of
/// the descriptor) until it execs, so a store closed a moment ago can look held for a few
/// milliseconds. A store really open elsewhere still fails, after that short wait.
fn lock_store(fs: &dyn FileSystem, path: &Path) -> Result<Box<dyn crate::fs::FileLock>> {
    let start = Instant::now();
    loop {
        match fs.lock(path) {
            Err(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::WouldBlock
                    && start.elapsed() < LOCK_PATIENCE =>
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            other => return other,
        }
    }
}

/// What the WAL replay produced.
pub(super) struct Replayed {
    /// Memtables in seqno order; all but the last are full and will be flushed.
    pub(super) memtables: Vec<Arc<Memtable>>,
    pub(super) last_seqno: SeqNo,
    /// Blob files the replayed records reference that the version does not list: the
    /// index of the first memtable referencing each.
    pub(super) blob_refs: BTreeMap<BlobId, usize>,
    /// True if replay stopped at a record whose blob record was lost (rule 7).
    pub(super) cut_short: bool,
    pub(super) report: RecoveryReport,
    /// Each log file read, with its length when read: (id, bytes).
    pub(super) wal_lens: Vec<(u64, u64)>,
    /// Each log file read, with the end of the last record replayed from it: where a
    /// later replay of the same file goes on ([`Resume`]).
    pub(super) wal_ends: Vec<(u64, u64)>,
}

/// How a replay runs.
pub(super) enum Mode {
    /// A read-write open: the replayed files and the blob files their writes reference
    /// are fsynced (rule 4).
    Recover,
    /// A read-only open: nothing is written.
    ReadOnly,
    /// A follower reading on (read-only too).
    Resume(Resume),
}

/// Where a replay goes on from an earlier one of the same version (a follower reading
/// what the writer appended since): the files' offsets, the last seqno replayed, and the
/// memtables replayed into, the newest of which takes more writes while it has room.
pub(super) struct Resume {
    /// Log file id -> offset to read on from (a file not listed is read whole).
    pub(super) starts: BTreeMap<u64, u64>,
    pub(super) last: SeqNo,
    pub(super) memtables: Vec<Arc<Memtable>>,
}

fn gap_error(path: &Path, offset: u64, expected: u64, found: u64) -> Error {
    Error::corruption(
        FileKind::Wal,
        path,
        offset,
        Reason::HeaderField {
            field: "seqno",
            detail: format!(
                "record starts at seqno {found} but {expected} was expected: acknowledged writes \
                 before it are missing (open with salvage_wal to keep what is left)"
            ),
        },
    )
}

/// Replays the WAL files `wal_ids` into memtables (rules 1, 2, 3, 7, 9). Under
/// [`Mode::Recover`] the replayed files and the blob files their writes reference are
/// fsynced (rule 4); the read-only modes write nothing.
pub(super) fn replay(
    fs: &dyn FileSystem,
    dir: &Path,
    wal_ids: &[u64],
    version: &Version,
    options: &Options,
    blobs: &vlog::Reader,
    mode: Mode,
) -> Result<Replayed> {
    let flushed = version.flushed_seqno();
    let sync = matches!(mode, Mode::Recover);
    let (mut last, mut memtables, starts) = match mode {
        Mode::Resume(r) => (r.last, r.memtables, r.starts),
        Mode::Recover | Mode::ReadOnly => (flushed, Vec::new(), BTreeMap::new()),
    };
    let mut blob_refs = BTreeMap::new();
    let mut synced_blobs = BTreeSet::new();
    let mut cut_short = false;
    let mut report = RecoveryReport::default();
    let mut wal_lens = Vec::new();
    let mut wal_ends = Vec::new();
    'files: for (n, &id) in wal_ids.iter().enumerate() {
        let path = dir.join(FileType::Wal.name(id));
        let mut reader = match starts.get(&id) {
            Some(&from) => wal::Reader::open_from(fs, &path, options.salvage_wal, from)?,
            None => wal::Reader::open(fs, &path, options.salvage_wal)?,
        };
        report.log_files += 1;
        wal_lens.push((id, reader.file_len()));
        let mut records = 0usize;
        let mut salvaged = 0usize;
        // Not a `for` loop: the body asks the reader what it skipped and looks ahead.
        #[allow(clippy::while_let_on_iterator)]
        while let Some(record) = reader.next() {
            let record = record?;
            report_salvaged(&mut report, &path, reader.dropped(), &mut salvaged);
            let batch = WriteBatch::decode(&record.payload, &path, record.offset)?;
            let Some(batch_last) = batch.last_seqno(SeqNo(record.seqno))? else {
                continue;
            };
            if batch_last <= flushed {
                continue; // already in tables
            }
            if record.seqno != last.0 + 1 {
                if record.seqno <= last.0 || !options.salvage_wal {
                    return Err(gap_error(&path, record.offset, last.0 + 1, record.seqno));
                }
                note_gap(
                    &mut report,
                    &path,
                    record.offset,
                    last.0 + 1,
                    record.seqno - 1,
                );
            }
            if let Some(lost) = lost_value(&batch, version, blobs)? {
                let (synced_end, file_last) = reader.look_ahead();
                let listed = version.blob_files().contains_key(&lost.file_id);
                if listed || synced_end > record.offset {
                    // The write was durable (a sync mark vouches for it, or its blob file
                    // was sealed into the manifest), so its value was too: damage.
                    let loss = damaged_value(&path, &record, batch_last, &lost, blobs, listed);
                    if !options.salvage_wal {
                        return Err(loss.into_error());
                    }
                    report.losses.push(loss.0);
                    continue;
                }
                // Rule 7: an unsynced tail.
                cut_short = true;
                report.losses.push(Loss {
                    cause: LossCause::UnsyncedValue,
                    file: FileKind::Wal,
                    path: path.clone(),
                    offset: record.offset,
                    len: reader.file_len().saturating_sub(record.offset),
                    reason: Reason::BadEntry("the value this write separated is missing"),
                    seqnos: Some((
                        record.seqno,
                        file_last.unwrap_or(batch_last.0).max(batch_last.0),
                    )),
                    detail: format!(
                        "its value in {} (byte {}) never became durable; {} later log files \
                         are not read",
                        blobs.path(lost.file_id).display(),
                        lost.offset,
                        wal_ids.len() - n - 1
                    ),
                });
                if records > 0 && sync {
                    sync_blob_files(fs, blobs, &blob_refs, &mut synced_blobs)?;
                    let mut file = fs.open_append(&path)?;
                    file.sync_data()?;
                }
                wal_ends.push((id, record.offset));
                break 'files;
            }
            let needs_new = memtables
                .last()
                .is_none_or(|m| m.size() >= options.memtable_size);
            if needs_new {
                memtables.push(Arc::new(Memtable::with_huge_pages(
                    id,
                    options.memtable_size,
                    options.memtable_huge_pages,
                )));
            }
            let Some(mem) = memtables.last() else {
                continue;
            };
            let mut logged = KeyspaceBytes::default();
            let mut ops: smallvec::SmallVec<[(SeqNo, Op<'_>); 8]> = smallvec::SmallVec::new();
            for (seqno, op) in batch.ops_with_seqno(SeqNo(record.seqno))? {
                let ks = op.keyspace();
                if version.keyspace(ks).is_none() {
                    if ks.0 >= version.next_keyspace_id() {
                        return Err(Error::corruption(
                            FileKind::Wal,
                            &path,
                            record.offset,
                            Reason::BadEntry("write to a keyspace the manifest never created"),
                        ));
                    }
                    continue; // the keyspace was dropped later
                }
                logged.add(ks, WriteBatch::op_encoded_len(&op) as u64);
                if let Some(h) = handle_of(&op) {
                    if !version.blob_files().contains_key(&h.file_id) {
                        blob_refs.entry(h.file_id).or_insert(memtables.len() - 1);
                    }
                }
                ops.push((seqno, op));
            }
            // As the write leader applies a group: in key order, the skip-list searches
            // side by side.
            crate::memtable::sort_group(&mut ops);
            mem.apply_group(&ops);
            mem.add_logged(logged);
            // Keep seqno accounting even for ops of dropped keyspaces.
            if let Some(m) = memtables.last() {
                m.note_seqno(batch_last);
            }
            last = batch_last;
            records += 1;
            report.replayed_records += 1;
        }
        report_salvaged(&mut report, &path, reader.dropped(), &mut salvaged);
        wal_ends.push((id, reader.valid_end()));
        if let Some(t) = reader.torn_tail() {
            report.losses.push(Loss {
                cause: LossCause::TornTail,
                file: FileKind::Wal,
                path: path.clone(),
                offset: t.offset,
                len: t.len,
                reason: t.reason.clone(),
                seqnos: None,
                detail: String::new(),
            });
        }
        if records > 0 && sync {
            // The replayed writes may have reached only the OS before the crash; make them
            // durable before anything new is acknowledged after them: their blob records
            // first, then the log (the order of `vlog/FORMAT.md` §7).
            sync_blob_files(fs, blobs, &blob_refs, &mut synced_blobs)?;
            let mut file = fs.open_append(&path)?;
            file.sync_data()?;
        }
    }
    report.last_seqno = last.0;
    Ok(Replayed {
        memtables,
        last_seqno: last,
        blob_refs,
        cut_short,
        report,
        wal_lens,
        wal_ends,
    })
}

/// Adds the ranges salvage skipped since the last call (`seen` counts those reported).
fn report_salvaged(
    report: &mut RecoveryReport,
    path: &Path,
    dropped: &[wal::Dropped],
    seen: &mut usize,
) {
    for d in dropped.iter().skip(*seen) {
        report.losses.push(Loss {
            cause: LossCause::Salvaged,
            file: FileKind::Wal,
            path: path.to_path_buf(),
            offset: d.offset,
            len: d.len,
            reason: d.reason.clone(),
            seqnos: None,
            detail: String::new(),
        });
    }
    *seen = dropped.len();
}

/// Gives the seqnos `first..=last`, missing before the record at `offset`, to the last
/// range salvage skipped in `path` (or reports them on their own).
fn note_gap(report: &mut RecoveryReport, path: &Path, offset: u64, first: u64, last: u64) {
    let skipped = report.losses.iter_mut().rev().find(|l| {
        l.cause == LossCause::Salvaged && l.path == path && l.seqnos.is_none() && l.offset < offset
    });
    match skipped {
        Some(l) => l.seqnos = Some((first, last)),
        None => report.losses.push(Loss {
            cause: LossCause::Salvaged,
            file: FileKind::Wal,
            path: path.to_path_buf(),
            offset,
            len: 0,
            reason: Reason::BadEntry("writes are missing before this record"),
            seqnos: Some((first, last)),
            detail: String::new(),
        }),
    }
}

/// A durable write whose separated value is lost: the loss salvage reports, or the
/// corruption error without salvage.
struct DamagedValue(Loss);

impl DamagedValue {
    fn into_error(self) -> Error {
        let l = self.0;
        Error::corruption(
            FileKind::Wal,
            &l.path,
            l.offset,
            Reason::HeaderField {
                field: "value handle",
                detail: format!(
                    "{} (open with salvage_wal to drop this write and keep the rest)",
                    l.detail
                ),
            },
        )
    }
}

fn damaged_value(
    path: &Path,
    record: &wal::Record,
    batch_last: SeqNo,
    lost: &vlog::ValueHandle,
    blobs: &vlog::Reader,
    listed: bool,
) -> DamagedValue {
    let why = if listed {
        "the manifest lists its blob file"
    } else {
        "a sync mark after it shows it was fsynced"
    };
    DamagedValue(Loss {
        cause: LossCause::DamagedValue,
        file: FileKind::Wal,
        path: path.to_path_buf(),
        offset: record.offset,
        len: (wal::RECORD_HEADER_LEN + record.payload.len()) as u64,
        reason: Reason::BadEntry("the value this write separated is damaged or missing"),
        seqnos: Some((record.seqno, batch_last.0)),
        detail: format!(
            "the write at seqno {} was durable ({why}) but its value at byte {} of {} is \
             damaged or missing",
            record.seqno,
            lost.offset,
            blobs.path(lost.file_id).display()
        ),
    })
}

/// Fsyncs every blob file in `refs` not synced yet: replayed values may have reached only
/// the OS before the crash, and become durable before their WAL records are.
fn sync_blob_files(
    fs: &dyn FileSystem,
    blobs: &vlog::Reader,
    refs: &BTreeMap<BlobId, usize>,
    synced: &mut BTreeSet<BlobId>,
) -> Result<()> {
    for &id in refs.keys() {
        if synced.insert(id) {
            fs.open_append(&blobs.path(id))?.sync_data()?;
        }
    }
    Ok(())
}

/// The value handle of a `ValueHandle` op (the batch decoder has checked its encoding).
pub(super) fn handle_of(op: &Op<'_>) -> Option<vlog::ValueHandle> {
    match entry::view(op.kind(), op.stored()) {
        Ok(Some(EntryView {
            body: Body::Handle(h),
            ..
        })) => Some(h),
        _ => None,
    }
}

/// The first value handle of `batch` that does not lead to its intact blob record (rule
/// 7), if any. Handles of dropped keyspaces are not checked: their values are never read
/// (the blob file may be gone).
///
/// # Errors
/// `Io` from reads.
fn lost_value(
    batch: &WriteBatch,
    version: &Version,
    blobs: &vlog::Reader,
) -> Result<Option<vlog::ValueHandle>> {
    for op in batch.ops() {
        if version.keyspace(op.keyspace()).is_none() {
            continue;
        }
        let Some(h) = handle_of(&op) else {
            continue;
        };
        if !blobs.validate_handle(&h)? {
            return Ok(Some(h));
        }
    }
    Ok(None)
}

/// Logs what recovery left out: a crash's normal residue (torn tail, unsynced value) at
/// `info`, a loss that may include acknowledged writes (salvage) at `error`.
fn log_recovery(report: &RecoveryReport) {
    for loss in &report.losses {
        if loss.cause.loses_durable_writes() {
            tracing::error!(loss = %loss, "recovery skipped damaged log data; writes were lost");
        } else {
            tracing::info!(loss = %loss, "recovery left out writes that were never durable");
        }
    }
    tracing::debug!(
        log_files = report.log_files,
        replayed_records = report.replayed_records,
        last_seqno = report.last_seqno,
        "recovered"
    );
}
