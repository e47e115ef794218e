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
//!    open then starts over, up to [`ATTEMPTS`] times, and reports the last error if the
//!    store never holds still that long.
//! 5. No background thread runs; writes, keyspace changes, flushes and compactions return
//!    `Error::ReadOnly`. The view does not move: reopen to see later writes.
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
    assemble, attach_unlisted_blobs, check_named_files, check_unlisted_tables, replay, Opened,
};
use crate::error::{Error, Result};
use crate::files::FileType;
use crate::fs::{FileSystem, ReadableFile};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::Manifest;
use crate::vlog;

/// Opens tried before giving up on a store that keeps changing under the open.
pub(crate) const ATTEMPTS: u32 = 8;

/// Opens the store in `dir` read-only; see the module documentation.
///
/// # Errors
/// `InvalidArgument` if `dir` holds no store; `Corruption` or `Io` as for a read-write
/// open, after [`ATTEMPTS`] tries.
pub(crate) fn open(fs: Arc<dyn FileSystem>, dir: &Path, options: Options) -> Result<Arc<Inner>> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match open_once(&fs, dir, &options) {
            Ok(inner) => return Ok(inner),
            Err(e @ (Error::InvalidArgument(_) | Error::UnsupportedVersion { .. })) => {
                return Err(e)
            }
            Err(e) if attempt >= ATTEMPTS => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(2 << attempt)),
        }
    }
}

fn no_store(dir: &Path, why: &str) -> Error {
    Error::invalid(format!("no store at {} ({why})", dir.display()))
}

fn open_once(fs: &Arc<dyn FileSystem>, dir: &Path, options: &Options) -> Result<Arc<Inner>> {
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
    let Some(recovered) = Manifest::recover(fs.as_ref(), dir)? else {
        return Err(no_store(dir, "no CURRENT file"));
    };
    let manifest = dir.join(FileType::Manifest.name(recovered.manifest_id));
    let version = recovered.version;
    check_named_files(&names, &version, &manifest)?;

    let blobs = vlog::Reader::new(Arc::clone(fs), dir, usize::MAX);
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
        hold(FileType::Table.name(id))?;
    }
    for name in names.iter().filter(|n| FileType::Blob.parse(n).is_some()) {
        hold(name.clone())?;
    }
    let mut replayed = replay(fs.as_ref(), dir, &wal_ids, &version, options, &blobs, false)?;
    attach_unlisted_blobs(fs.as_ref(), dir, &names, &version, &replayed, false)?;
    let last = replayed.last_seqno;
    if !options.salvage_wal {
        check_unlisted_tables(fs.as_ref(), dir, &names, &version, last, &manifest)?;
    }
    for id in version.blob_files().keys().chain(replayed.blob_refs.keys()) {
        blobs.hold(*id)?;
    }

    let version = Arc::new(version);
    let next_file_id = Arc::new(AtomicU64::new(version.next_file_id()));
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
    let inner = assemble(
        Arc::clone(fs),
        dir,
        options.clone(),
        Opened {
            lock: None,
            manifest: None,
            mem: Arc::new(Memtable::new(0, options.memtable_size)),
            imm: std::mem::take(&mut replayed.memtables),
            version: Arc::clone(&version),
            log: Log::new(Arc::clone(fs), None, blob_writer, last.0, last.0),
            last,
            next_file_id,
            blobs,
            recovery: std::mem::take(&mut replayed.report),
            read_point: Some(ReadPoint {
                manifest_id: recovered.manifest_id,
                wal_lens: std::mem::take(&mut replayed.wal_lens),
                files,
            }),
        },
    );
    for id in version.live_table_ids() {
        inner.tables.get(id)?;
    }
    Ok(inner)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::db::Db;
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
        assert!(held
            .iter()
            .all(|id| !names.contains(&crate::files::FileType::Table.name(*id))));
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
