//! Opening a store read-only ([`open`]): the manifest's version plus the log replayed into
//! memory, with nothing written, so any number of processes can read a store while one
//! writer process holds it, and a store on a read-only file system or a backup opens.
//!
//! Invariants:
//! 1. Nothing is created, renamed, removed, synced or locked: the directory's file list,
//!    sizes and modification times are as before the open (a test checks it).
//! 2. The view is one point of the store: the version the manifest held when it was read,
//!    plus the complete log records above that version's flushed seqno, which continue
//!    without a gap, so it is a prefix of the writer's acknowledged writes.
//! 3. Every table and blob file the view needs is opened during the open and kept open
//!    for the handle's life (no cache eviction): a writer that deletes one afterwards
//!    (compaction, value-log GC) does not take it from the reader, as an open file
//!    outlives its name.
//! 4. A writer working during the open can make it see files that do not fit together (a
//!    table or log file deleted after the manifest was read, a manifest replaced): the
//!    open then starts over. It keeps starting over for up to [`RETRY_WINDOW`] while the
//!    store is seen to move between failed tries (the manifest `CURRENT` names, or its
//!    length, changed: a flush or a compaction ran), and gives up after [`ATTEMPTS`] tries that
//!    failed on a store that did not move (a damaged store is reported in well under a
//!    second), reporting the last error.
//! 5. No background thread runs (but a follower's refresh thread, `db/follower.rs`);
//!    writes, keyspace changes, flushes and compactions return `Error::ReadOnly`. The view
//!    moves only by a follower's refresh; a plain read-only open reopens to see later
//!    writes.
//! 6. Every file of the view (tables, blob files, the log files replayed) is opened before
//!    it is read and held in the view's [`super::inner::ReadPoint`], with the log lengths read, so
//!    a checkpoint of the view (`Db::backup`, packs) copies exactly the view from those
//!    handles, whatever the writer has deleted since.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use super::inner::{Inner, ReadPoint};
use super::log::Log;
use super::recover::{
    assemble, attach_unlisted_blobs, check_named_files, check_unlisted_tables, replay, Mode, Opened,
};
use super::recovery::RecoveryReport;
use crate::error::{Error, Result};
use crate::files::{self, BlobId, FileType};
use crate::fs::{FileSystem, ReadableFile};
use crate::key::SeqNo;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::{self, Manifest, Version};
use crate::vlog;

/// Failed tries on a store that did not move before an open gives up (invariant 4).
pub(crate) const ATTEMPTS: u32 = 8;

/// How long an open keeps starting over on a store that moves under it (invariant 4).
pub(crate) const RETRY_WINDOW: Duration = Duration::from_secs(5);

/// The longest pause between two tries.
const PAUSE_MAX: Duration = Duration::from_millis(16);

/// Opens the store in `dir` read-only; see the module documentation.
///
/// # Errors
/// `InvalidArgument` if `dir` holds no store; `Corruption` or `Io` as for a read-write
/// open, after [`ATTEMPTS`] tries.
pub(crate) fn open(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    options: Options,
    follower: bool,
) -> Result<Arc<Inner>> {
    let options = crate::budget::Budget::effective(options)?;
    retrying(fs.as_ref(), dir, || open_once(&fs, dir, &options, follower))
}

fn no_store(dir: &Path, why: &str) -> Error {
    Error::invalid(format!("no store at {} ({why})", dir.display()))
}

/// One point of the store as a reader sees it (invariant 2), with every file it needs
/// open (invariant 3).
pub(super) struct View {
    pub(super) version: Arc<Version>,
    /// The log replayed, oldest first.
    pub(super) memtables: Vec<Arc<Memtable>>,
    pub(super) last: SeqNo,
    pub(super) recovery: RecoveryReport,
    pub(super) point: ReadPoint,
}

/// Reads one view of the store in `dir`; separated values are read through `blobs`,
/// which holds every blob file the view needs when this returns.
pub(super) fn read_view(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    options: &Options,
    blobs: &vlog::Reader,
) -> Result<View> {
    if !fs.exists(dir)? {
        return Err(no_store(dir, "the directory does not exist"));
    }
    let names = match fs.list_dir(dir) {
        Ok(names) => names,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(no_store(dir, "it is a file"))
        }
        Err(e) => return Err(e),
    };
    // The manifest's length before it is read: the view holds at least its edits, so a
    // follower that finds it longer later knows there is more to read.
    let manifest_len = current_manifest_len(fs.as_ref(), dir).unwrap_or(0);
    let Some(recovered) = Manifest::recover(fs.as_ref(), dir)? else {
        return Err(no_store(dir, "no CURRENT file"));
    };
    let manifest = dir.join(FileType::Manifest.name(recovered.manifest_id));
    let version = recovered.version;
    check_named_files(&names, &version, &manifest)?;
    // The manifest is held too: checks of the view (`Db::verify`) read it after the
    // writer may have replaced it. (Replaced before this open: the open starts over.)
    let manifest_handle: Arc<dyn ReadableFile> = Arc::from(fs.open_read(&manifest)?);

    let mut wal_ids: Vec<u64> = names
        .iter()
        .filter_map(|n| FileType::Wal.parse(n))
        .filter(|id| *id >= version.wal_min_id())
        .collect();
    wal_ids.sort_unstable();
    // Every file of the view is opened before it is read and held: a writer deleting it
    // afterwards changes nothing for the view, its reads or its checkpoints.
    let mut files: BTreeMap<String, Arc<dyn ReadableFile>> = BTreeMap::new();
    let mut hold = |name: String| -> Result<()> {
        let handle = fs.open_read(&dir.join(&name))?;
        files.insert(name, Arc::from(handle));
        Ok(())
    };
    for id in &wal_ids {
        hold(FileType::Wal.name(*id))?;
    }
    for id in version.live_table_ids() {
        hold(id.file_name())?;
    }
    for name in names.iter().filter(|n| FileType::Blob.parse(n).is_some()) {
        hold(name.clone())?;
    }
    files.insert(
        FileType::Manifest.name(recovered.manifest_id),
        manifest_handle,
    );
    // A blob file the manifest does not list yet may still be growing: read its length
    // afresh, or the log's newest values would look lost.
    for id in names.iter().filter_map(|n| BlobId::parse(n)) {
        if !version.blob_files().contains_key(&id) {
            blobs.refresh_len(id)?;
        }
    }
    let mut replayed = replay(
        fs.as_ref(),
        dir,
        &wal_ids,
        &version,
        options,
        blobs,
        Mode::ReadOnly,
    )?;
    attach_unlisted_blobs(fs.as_ref(), dir, &names, &version, &replayed, false)?;
    let last = replayed.last_seqno;
    if !options.salvage_wal {
        check_unlisted_tables(fs.as_ref(), dir, &names, &version, last, &manifest)?;
    }
    for id in version.blob_files().keys().chain(replayed.blob_refs.keys()) {
        blobs.hold(*id)?;
    }
    Ok(View {
        version: Arc::new(version),
        memtables: std::mem::take(&mut replayed.memtables),
        last,
        recovery: std::mem::take(&mut replayed.report),
        point: ReadPoint {
            manifest_id: recovered.manifest_id,
            manifest_len,
            manifest_end: recovered.valid_end,
            wal_lens: std::mem::take(&mut replayed.wal_lens),
            wal_ends: std::mem::take(&mut replayed.wal_ends),
            files,
        },
    })
}

/// The length of the manifest `CURRENT` names now.
pub(super) fn current_manifest_len(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let id = current_manifest_id(fs, dir)?;
    fs.file_len(&dir.join(FileType::Manifest.name(id)))
}

/// The id of the manifest `CURRENT` names now.
pub(super) fn current_manifest_id(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let path = dir.join(files::CURRENT);
    let bytes = crate::fs::read_all(fs, &path)?;
    version::decode_current(&bytes, &path)
}

fn open_once(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    options: &Options,
    follower: bool,
) -> Result<Arc<Inner>> {
    let blobs = vlog::Reader::new(Arc::clone(fs), dir, usize::MAX);
    let view = read_view(fs, dir, options, &blobs)?;
    let next_file_id = Arc::new(AtomicU64::new(view.version.next_file_id()));
    let ids = Arc::clone(&next_file_id);
    // Never written to: a read-only store refuses writes before they reach it.
    let blob_writer = vlog::Writer::new(
        Arc::clone(fs),
        dir,
        vlog::WriterOptions {
            max_file_len: options.blob_file_size,
        },
        Box::new(move || ids.fetch_add(1, std::sync::atomic::Ordering::SeqCst)),
    );
    let last = view.last;
    let inner = assemble(
        Arc::clone(fs),
        dir,
        options.clone(),
        Opened {
            lock: None,
            manifest: None,
            mem: Arc::new(Memtable::with_huge_pages(
                0,
                options.memtable_size,
                options.memtable_huge_pages,
            )),
            imm: view.memtables,
            version: Arc::clone(&view.version),
            log: Log::new(Arc::clone(fs), None, blob_writer, last.0, last.0),
            last,
            next_file_id,
            blobs,
            recovery: view.recovery,
            read_point: Some(view.point),
            rows: super::row_cache::RowCache::new(options.row_cache_size)?,
            follower,
        },
    );
    for id in view.version.live_table_ids() {
        inner.reads.tables.get(id)?;
    }
    Ok(inner)
}

/// Runs `read` (a view of the store in `dir`) until it succeeds, as invariant 4 says.
pub(super) fn retrying<T>(
    fs: &dyn FileSystem,
    dir: &Path,
    read: impl FnMut() -> Result<T>,
) -> Result<T> {
    retrying_within(RETRY_WINDOW, || store_mark(fs, dir), read)
}

/// Where the store stands, as far as a reader's view depends on it: the manifest `CURRENT`
/// names and its length (`None` if they cannot be read).
fn store_mark(fs: &dyn FileSystem, dir: &Path) -> Option<(u64, u64)> {
    let id = current_manifest_id(fs, dir).ok()?;
    let len = fs.file_len(&dir.join(FileType::Manifest.name(id))).ok()?;
    Some((id, len))
}

/// [`retrying`] with its window and its mark of the store given.
fn retrying_within<T, M: PartialEq>(
    window: Duration,
    mut mark: impl FnMut() -> M,
    mut read: impl FnMut() -> Result<T>,
) -> Result<T> {
    let start = std::time::Instant::now();
    let mut still = 0;
    let mut pause = Duration::from_millis(1);
    // The mark after the last failed try: taken only once a try fails, so a first try
    // that succeeds reads nothing more. The first failure counts as one on a store that
    // did not move.
    let mut last: Option<M> = None;
    loop {
        match read() {
            Ok(v) => return Ok(v),
            Err(e @ (Error::InvalidArgument(_) | Error::UnsupportedVersion { .. })) => {
                return Err(e)
            }
            Err(e) => {
                let now = mark();
                if last.as_ref().is_none_or(|l| *l == now) {
                    still += 1;
                }
                last = Some(now);
                if still >= ATTEMPTS || start.elapsed() >= window {
                    return Err(e);
                }
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(PAUSE_MAX);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::db::{Db, Readable};
    use crate::fs::{MemFs, Op};
    use crate::options::{Durability, KeyspaceOptions};

    const MUTATING: [Op; 6] = [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::SyncDir,
        Op::Rename,
        Op::Remove,
    ];

    fn counts(fs: &MemFs) -> Vec<u64> {
        MUTATING.iter().map(|op| fs.op_count(*op)).collect()
    }

    fn options() -> Options {
        Options {
            durability: Durability::Buffered,
            memtable_size: 8 << 10,
            table_size: 8 << 10,
            l0_compaction_trigger: 2,
            level1_size: 16 << 10,
            blob_file_size: 8 << 10,
            ..Options::default()
        }
    }

    fn damaged() -> Error {
        Error::corruption(
            crate::error::FileKind::Table,
            Path::new("/db/1.sst"),
            0,
            crate::error::Reason::Truncated,
        )
    }

    /// A store that moves between tries is tried again for as long as it moves, within
    /// the window: far more than `ATTEMPTS` tries.
    #[test]
    fn a_store_that_keeps_moving_is_tried_until_a_try_succeeds() {
        let mut moves = 0u64;
        let mut tries = 0;
        let got = retrying_within(
            Duration::from_secs(30),
            || {
                moves += 1;
                moves
            },
            || {
                tries += 1;
                if tries <= 3 * ATTEMPTS {
                    Err(damaged())
                } else {
                    Ok(tries)
                }
            },
        );
        assert_eq!(got.unwrap(), 3 * ATTEMPTS + 1);
    }

    /// A store that does not move fails the same way on every try: the open gives up
    /// after `ATTEMPTS` tries, quickly, with the error of the last one.
    #[test]
    fn a_store_that_holds_still_is_given_up_on_after_its_tries() {
        let mut tries = 0;
        let start = std::time::Instant::now();
        let got: Result<()> = retrying_within(
            Duration::from_secs(30),
            || 7,
            || {
                tries += 1;
                Err(damaged())
            },
        );
        assert!(matches!(got, Err(Error::Corruption { .. })), "{got:?}");
        assert_eq!(tries, ATTEMPTS);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    /// A store that moves on every try is given up on once the window has passed; a
    /// store that is not one is refused at once.
    #[test]
    fn a_store_that_never_holds_still_is_given_up_on_after_the_window() {
        let mut moves = 0u64;
        let start = std::time::Instant::now();
        let got: Result<()> = retrying_within(
            Duration::from_millis(400),
            || {
                moves += 1;
                moves
            },
            || Err(damaged()),
        );
        assert!(matches!(got, Err(Error::Corruption { .. })), "{got:?}");
        assert!(start.elapsed() >= Duration::from_millis(400));
        assert!(moves > 2 * u64::from(ATTEMPTS), "{moves} marks taken");
        let mut tries = 0;
        let got: Result<()> = retrying_within(
            Duration::from_secs(30),
            || 0,
            || {
                tries += 1;
                Err(Error::invalid("no store"))
            },
        );
        assert!(matches!(got, Err(Error::InvalidArgument(_))));
        assert_eq!(tries, 1);
    }

    /// Tables on several levels, blob files listed and unlisted, writes only in the log,
    /// a torn log tail: a read-only open makes no mutating call of any kind, takes no
    /// lock, and reads all of it.
    #[test]
    fn a_read_only_open_makes_no_mutating_call_and_reads_everything() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let ks = db.keyspace("k").unwrap();
        let big = db
            .keyspace_with("big", KeyspaceOptions::separated(64))
            .unwrap();
        for i in 0..600u32 {
            ks.insert(format!("key{i:04}"), format!("value {i}"))
                .unwrap();
            if i % 50 == 0 {
                big.insert(format!("b{i:04}"), vec![i as u8; 300]).unwrap();
            }
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        for i in 600..700u32 {
            ks.insert(format!("key{i:04}"), format!("value {i}"))
                .unwrap();
        }
        big.insert("last", vec![7u8; 500]).unwrap();
        db.flush_wal(true).unwrap();
        let writer_last = db.last_seqno();

        // The writer stays open (holding the lock) while the reader opens beside it.
        let before = counts(&fs);
        let ro = Db::open_read_only_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        assert!(ro.is_read_only());
        assert_eq!(ro.last_seqno(), writer_last);
        let rks = ro.get_keyspace("k").unwrap();
        assert_eq!(rks.len().unwrap(), 700);
        assert_eq!(rks.get("key0650").unwrap(), Some(b"value 650".to_vec()));
        let rbig = ro.get_keyspace("big").unwrap();
        assert_eq!(rbig.get("b0100").unwrap(), Some(vec![100u8; 300]));
        assert_eq!(rbig.get("last").unwrap(), Some(vec![7u8; 500]));
        assert_eq!(rbig.iter().count(), 13);

        // Everything that would write is refused with the typed error.
        assert!(matches!(rks.insert("x", "y"), Err(Error::ReadOnly)));
        assert!(matches!(rks.remove("key0001"), Err(Error::ReadOnly)));
        assert!(matches!(rks.incr("n", 1), Err(Error::ReadOnly)));
        let mut batch = ro.batch();
        batch.insert(&rks, "x", "y");
        assert!(matches!(batch.commit(), Err(Error::ReadOnly)));
        assert!(matches!(ro.keyspace("new"), Err(Error::ReadOnly)));
        assert!(matches!(ro.drop_keyspace("k"), Err(Error::ReadOnly)));
        assert!(matches!(ro.flush(), Err(Error::ReadOnly)));
        assert!(matches!(ro.flush_wal(true), Err(Error::ReadOnly)));
        assert!(matches!(ro.compact(), Err(Error::ReadOnly)));
        assert!(matches!(ro.collect_garbage(), Err(Error::ReadOnly)));
        assert!(matches!(ro.compact_expired(), Err(Error::ReadOnly)));
        ro.wait_for_compactions().unwrap();
        assert_eq!(rks.get("x").unwrap(), None);
        drop((rks, rbig));
        ro.close().unwrap();
        assert_eq!(counts(&fs), before, "{MUTATING:?}");

        // The writer goes on undisturbed.
        ks.insert("after", "1").unwrap();
        drop((ks, big));
        db.close().unwrap();
    }

    /// A view holds its files: the writer compacting and collecting garbage afterwards
    /// (deleting every table and blob file the view uses) changes nothing for it.
    #[test]
    fn a_view_keeps_reading_after_the_writer_deletes_its_files() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let ks = db
            .keyspace_with("k", KeyspaceOptions::separated(64))
            .unwrap();
        for i in 0..300u32 {
            ks.insert(format!("key{i:04}"), vec![(i % 251) as u8; 100])
                .unwrap();
        }
        db.flush().unwrap();
        let ro = Db::open_read_only_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let rks = ro.get_keyspace("k").unwrap();
        let mut scan = rks.iter();
        let first = scan.next().unwrap().unwrap();
        for i in 0..300u32 {
            ks.insert(format!("key{i:04}"), vec![1u8; 100]).unwrap();
        }
        db.compact().unwrap();
        db.collect_garbage().unwrap();
        // Every file the view opened is gone from the directory.
        let names = fs.list_dir(dir).unwrap();
        let held = ro.inner.state.lock().version.live_table_ids();
        assert!(held.iter().all(|id| !names.contains(&id.file_name())));
        assert_eq!(first.1, vec![0u8; 100]);
        let rest: Vec<_> = scan.map(|r| r.unwrap()).collect();
        assert_eq!(rest.len(), 299);
        for (i, (_, v)) in rest.iter().enumerate() {
            assert_eq!(v, &vec![((i + 1) % 251) as u8; 100]);
        }
        assert_eq!(
            rks.get("key0299").unwrap(),
            Some(vec![(299 % 251) as u8; 100])
        );
        drop((rks, ks));
        ro.close().unwrap();
        db.close().unwrap();
    }

    /// A follower moves with the writer on `refresh`; its snapshots and iterators stay
    /// where they began, even after the writer compacts and collects garbage (deleting
    /// every file the old view uses); the old view's files are closed once nobody holds
    /// it; a refresh with nothing new is a no-op; a refresh writes nothing.
    #[test]
    fn a_follower_follows_and_its_snapshots_and_iterators_stay_put() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let ks = db
            .keyspace_with("k", KeyspaceOptions::separated(64))
            .unwrap();
        for i in 0..200u32 {
            ks.insert(format!("key{i:04}"), vec![1u8; 100]).unwrap();
        }
        db.flush().unwrap();
        for i in 200..250u32 {
            ks.insert(format!("key{i:04}"), vec![1u8; 100]).unwrap();
        }
        let f = Db::open_follower_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        assert!(f.is_follower() && f.is_read_only());
        assert!(!db.is_follower());
        let fks = f.get_keyspace("k").unwrap();
        assert_eq!(fks.len().unwrap(), 250);
        assert!(!f.refresh().unwrap(), "nothing changed");

        let snap = f.snapshot();
        let mut scan = fks.iter();
        assert_eq!(scan.next().unwrap().unwrap().1, vec![1u8; 100]);
        let old_tables = f.inner.tables_open();

        // The writer rewrites every key, adds more, compacts and collects garbage: every
        // file of the follower's first view is deleted.
        for i in 0..300u32 {
            ks.insert(format!("key{i:04}"), vec![2u8; 100]).unwrap();
        }
        db.flush().unwrap();
        db.compact().unwrap();
        db.collect_garbage().unwrap();
        ks.insert("tail", "only in the log").unwrap();
        db.flush_wal(false).unwrap();

        // The writer is idle from here until `more` (once any background compaction the
        // writes above started, and its deletion of obsolete files, is done): the
        // follower's refresh and reads make no mutating call.
        db.wait_for_compactions().unwrap();
        let idle = counts(&fs);
        assert!(f.refresh().unwrap());
        assert_eq!(f.last_seqno(), db.last_seqno());
        assert_eq!(fks.len().unwrap(), 301);
        assert_eq!(fks.get("key0299").unwrap(), Some(vec![2u8; 100]));
        assert_eq!(fks.get("tail").unwrap(), Some(b"only in the log".to_vec()));
        // The snapshot and the iterator still read the first view, in full.
        assert_eq!(snap.len(&fks).unwrap(), 250);
        assert_eq!(snap.get(&fks, "key0000").unwrap(), Some(vec![1u8; 100]));
        assert_eq!(snap.get(&fks, "key0299").unwrap(), None);
        let rest: Vec<_> = scan.map(|r| r.unwrap()).collect();
        assert_eq!(rest.len(), 249);
        assert!(rest.iter().all(|(_, v)| v == &vec![1u8; 100]));
        assert_eq!(counts(&fs), idle, "{MUTATING:?}");
        // Once nothing holds the first view, its tables are closed at the next refresh.
        drop(snap);
        ks.insert("more", "1").unwrap();
        db.flush_wal(false).unwrap();
        assert!(f.refresh().unwrap());
        let live = f.inner.state.lock().version.live_table_ids();
        assert!(
            f.inner.tables_open().iter().all(|id| live.contains(id)),
            "old tables {old_tables:?} still open: {:?}",
            f.inner.tables_open()
        );
        assert!(matches!(fks.insert("x", "y"), Err(Error::ReadOnly)));
        drop(fks);
        f.close().unwrap();
        drop(ks);
        db.close().unwrap();
    }

    /// A file system over `MemFs` that, once armed, fails the second open of one table
    /// (the open after the view held it): the writer deleted it in between.
    #[derive(Debug)]
    struct LosesATable {
        fs: MemFs,
        armed: std::sync::atomic::AtomicBool,
        opened: parking_lot::Mutex<Vec<std::path::PathBuf>>,
        /// Armed: the next length asked of a log file finds it gone (the writer deleted
        /// it between the refresh's listing and its `stat`).
        wal_gone: std::sync::atomic::AtomicBool,
    }

    impl FileSystem for LosesATable {
        fn create(&self, path: &Path) -> Result<Box<dyn crate::fs::WritableFile>> {
            self.fs.create(path)
        }
        fn open_append(&self, path: &Path) -> Result<Box<dyn crate::fs::WritableFile>> {
            self.fs.open_append(path)
        }
        fn open_read(&self, path: &Path) -> Result<Box<dyn crate::fs::ReadableFile>> {
            use std::sync::atomic::Ordering::SeqCst;
            let table = path.extension().is_some_and(|e| e == "sst");
            if table && self.armed.load(SeqCst) {
                let mut opened = self.opened.lock();
                if opened.iter().any(|p| p == path) {
                    self.armed.store(false, SeqCst);
                    let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
                    return Err(Error::io(path, "open", gone));
                }
                opened.push(path.to_path_buf());
            }
            self.fs.open_read(path)
        }
        fn file_len(&self, path: &Path) -> Result<u64> {
            use std::sync::atomic::Ordering::SeqCst;
            let wal = path.extension().is_some_and(|e| e == "wal");
            if wal && self.wal_gone.swap(false, SeqCst) {
                let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
                return Err(Error::io(path, "stat", gone));
            }
            self.fs.file_len(path)
        }
        fn exists(&self, path: &Path) -> Result<bool> {
            self.fs.exists(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> Result<()> {
            self.fs.rename(from, to)
        }
        fn remove(&self, path: &Path) -> Result<()> {
            self.fs.remove(path)
        }
        fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
            self.fs.list_dir(dir)
        }
        fn create_dir(&self, dir: &Path) -> Result<()> {
            self.fs.create_dir(dir)
        }
        fn sync_dir(&self, dir: &Path) -> Result<()> {
            self.fs.sync_dir(dir)
        }
        fn lock(&self, path: &Path) -> Result<Box<dyn crate::fs::FileLock>> {
            self.fs.lock(path)
        }
    }

    /// A table the writer deletes between the refresh's reading of the new view and its
    /// opening of that view's tables does not fail the refresh: it reads a newer view.
    #[test]
    fn a_refresh_survives_a_table_deleted_under_it() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let ks = db.keyspace("k").unwrap();
        ks.insert("a", "1").unwrap();
        db.flush().unwrap();
        let lossy = Arc::new(LosesATable {
            fs: fs.clone(),
            armed: std::sync::atomic::AtomicBool::new(false),
            opened: parking_lot::Mutex::new(Vec::new()),
            wal_gone: std::sync::atomic::AtomicBool::new(false),
        });
        let f =
            Db::open_follower_with_fs(Arc::clone(&lossy) as Arc<dyn FileSystem>, dir, options())
                .unwrap();
        ks.insert("b", "2").unwrap();
        db.flush().unwrap(); // a new table: the manifest changed, a whole view is read
        lossy.armed.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(f.refresh().unwrap());
        assert!(
            !lossy.armed.load(std::sync::atomic::Ordering::SeqCst),
            "the fault was not reached"
        );
        let fks = f.get_keyspace("k").unwrap();
        assert_eq!(fks.get("b").unwrap(), Some(b"2".to_vec()));
        assert_eq!(fks.len().unwrap(), 2);
        drop(fks);
        f.close().unwrap();
        drop(ks);
        db.close().unwrap();
    }

    /// A log file the writer deletes between the refresh's listing of the directory and
    /// its asking for the file's length (a flush finishing) does not fail the refresh: it
    /// reads a whole new view.
    #[test]
    fn a_refresh_survives_a_log_file_deleted_under_it() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let ks = db.keyspace("k").unwrap();
        ks.insert("a", "1").unwrap();
        let lossy = Arc::new(LosesATable {
            fs: fs.clone(),
            armed: std::sync::atomic::AtomicBool::new(false),
            opened: parking_lot::Mutex::new(Vec::new()),
            wal_gone: std::sync::atomic::AtomicBool::new(false),
        });
        let f =
            Db::open_follower_with_fs(Arc::clone(&lossy) as Arc<dyn FileSystem>, dir, options())
                .unwrap();
        ks.insert("b", "2").unwrap(); // only the log grew: the refresh plans a tail
        lossy
            .wal_gone
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(f.refresh().unwrap());
        assert!(
            !lossy.wal_gone.load(std::sync::atomic::Ordering::SeqCst),
            "the fault was not reached"
        );
        let fks = f.get_keyspace("k").unwrap();
        assert_eq!(fks.get("b").unwrap(), Some(b"2".to_vec()));
        assert_eq!(fks.len().unwrap(), 2);
        drop(fks);
        f.close().unwrap();
        drop(ks);
        db.close().unwrap();
    }

    /// With the manifest unchanged, a refresh reads only what the log gained (into the
    /// view's newest memtable while it has room), and the view equals the writer's after
    /// every refresh: puts, removes, range deletes, counters, separated values, and log
    /// files the writer starts when a memtable fills.
    #[test]
    fn a_refresh_reads_only_the_logs_new_tail_and_matches_the_writer() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let opts = Options {
            memtable_size: 16 << 10,
            memtables_per_flush: 64,
            max_immutable_memtables: 64,
            max_wal_size: 64 << 20,
            ..options()
        };
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, opts.clone()).unwrap();
        let ks = db
            .keyspace_with("k", KeyspaceOptions::separated(200))
            .unwrap();
        let f = Db::open_follower_with_fs(Arc::new(fs.clone()), dir, opts).unwrap();
        let fks = f.get_keyspace("k").unwrap();
        let manifest_before = f.inner.state.lock().read_point.clone().unwrap();
        let mut tails = 0;
        for round in 0..12u32 {
            for i in 0..150u32 {
                let k = format!("key{:04}", (i * 7 + round * 31) % 900);
                match i % 10 {
                    0 => ks.remove(&k).unwrap(),
                    1 => ks.insert(&k, vec![round as u8; 300]).unwrap(), // separated
                    2 => {
                        ks.incr(format!("n{}", i % 3), 1).unwrap();
                    }
                    _ => ks.insert(&k, format!("r{round} i{i}")).unwrap(),
                }
            }
            if round % 4 == 3 {
                ks.remove_range(
                    format!("key{:04}", round * 10)..format!("key{:04}", round * 10 + 40),
                )
                .unwrap();
            }
            db.flush_wal(false).unwrap();
            let ids_before = f.inner.state.lock().read_point.clone().unwrap();
            assert!(f.refresh().unwrap());
            let after = f.inner.state.lock().read_point.clone().unwrap();
            if after.manifest_id == ids_before.manifest_id
                && after.manifest_len == ids_before.manifest_len
            {
                tails += 1;
            }
            let want: Vec<_> = ks.iter().map(|r| r.unwrap()).collect();
            let got: Vec<_> = fks.iter().map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "round {round}");
            assert_eq!(f.last_seqno(), db.last_seqno());
        }
        let point = f.inner.state.lock().read_point.clone().unwrap();
        assert_eq!(
            point.manifest_id, manifest_before.manifest_id,
            "no flush ran"
        );
        assert!(point.wal_ends.len() > 1, "the writer started new log files");
        assert_eq!(tails, 12, "every refresh read only the tail");
        // Small tails go into the newest memtable while it has room, not one each.
        let memtables = f.inner.state.lock().imm.len();
        for i in 0..30u32 {
            ks.insert(format!("small{i:02}"), "v").unwrap();
            db.flush_wal(false).unwrap();
            assert!(f.refresh().unwrap());
        }
        assert!(f.inner.state.lock().imm.len() <= memtables + 1);
        assert_eq!(fks.get("small29").unwrap(), Some(b"v".to_vec()));
        // A backup of the follower's view holds exactly it.
        f.backup(Path::new("/copy")).unwrap();
        let copy = Db::open_read_only_with_fs(Arc::new(fs.clone()), Path::new("/copy"), options())
            .unwrap();
        let want: Vec<_> = ks.iter().map(|r| r.unwrap()).collect();
        let got: Vec<_> = copy
            .get_keyspace("k")
            .unwrap()
            .iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(got, want);
        drop((fks, ks));
        f.close().unwrap();
        db.close().unwrap();
    }

    #[test]
    fn refresh_is_for_followers() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        assert!(matches!(db.refresh(), Err(Error::InvalidArgument(_))));
        let ro = Db::open_read_only_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        assert!(matches!(ro.refresh(), Err(Error::InvalidArgument(_))));
        assert!(!ro.is_follower());
        let bad = Options {
            refresh_interval: Some(std::time::Duration::ZERO),
            ..options()
        };
        assert!(matches!(
            Db::open_follower_with_fs(Arc::new(fs.clone()), dir, bad),
            Err(Error::InvalidArgument(_))
        ));
        drop(ro);
        db.close().unwrap();
    }

    /// With `refresh_interval`, a background thread moves the view; closing the follower
    /// stops it.
    #[test]
    fn a_follower_refreshes_in_the_background() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
        let ks = db.keyspace("k").unwrap();
        ks.insert("a", "1").unwrap();
        let f = Db::open_follower_with_fs(
            Arc::new(fs.clone()),
            dir,
            Options {
                refresh_interval: Some(std::time::Duration::from_millis(5)),
                ..options()
            },
        )
        .unwrap();
        ks.insert("b", "2").unwrap();
        let target = db.last_seqno();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while f.last_seqno() < target {
            assert!(std::time::Instant::now() < deadline, "never caught up");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(
            f.get_keyspace("k").unwrap().get("b").unwrap(),
            Some(b"2".to_vec())
        );
        f.close().unwrap();
        drop(ks);
        db.close().unwrap();
    }

    #[test]
    fn a_directory_without_a_store_is_refused_and_nothing_is_made() {
        let fs = MemFs::new();
        let err = Db::open_read_only_with_fs(Arc::new(fs.clone()), Path::new("/none"), options())
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        fs.create_dir(Path::new("/empty")).unwrap();
        let before = counts(&fs);
        let err = Db::open_read_only_with_fs(Arc::new(fs.clone()), Path::new("/empty"), options())
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(counts(&fs), before);
        assert!(fs.list_dir(Path::new("/empty")).unwrap().is_empty());
    }
}
