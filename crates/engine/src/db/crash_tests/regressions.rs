//! Named regression tests for the recovery bugs the crash and corruption suites found.

use std::sync::Arc;

use super::*;
use crate::error::FileKind;
use crate::files::FileType;
use crate::fs::{read_all, CrashOptions, Fault, FaultKind, Op};
use crate::version::decode_image;

fn open(fs: &MemFs) -> Result<Db> {
    Db::open_with_fs(Arc::new(fs.clone()), &dir(), options(Durability::Sync))
}

fn manifest_path(fs: &MemFs) -> PathBuf {
    let names = fs.list_dir(&dir()).unwrap();
    let id = names
        .iter()
        .find_map(|n| FileType::Manifest.parse(n))
        .unwrap();
    dir().join(FileType::Manifest.name(id))
}

fn table_count(fs: &MemFs) -> usize {
    let names = fs.list_dir(&dir()).unwrap();
    names
        .iter()
        .filter(|n| crate::files::FileType::Table.parse(n).is_some())
        .count()
}

/// The open must fail with corruption naming the manifest, and delete no table.
fn assert_refused(fs: &MemFs) {
    let manifest = manifest_path(fs);
    let tables = table_count(fs);
    match open(fs) {
        Err(Error::Corruption(c)) => {
            assert_eq!(c.file, FileKind::Manifest, "{c}");
            assert_eq!(c.path, manifest, "{c}");
        }
        other => panic!("expected corruption naming the manifest, got {other:?}"),
    }
    assert_eq!(table_count(fs), tables, "the refused open deleted tables");
}

/// A store built by `steps` (synced, closed), ready to be damaged.
fn store(steps: &[Step]) -> MemFs {
    let fs = new_fs();
    let mut d = Driver::new(Arc::new(fs.clone()), options(Durability::Sync), None);
    d.open().unwrap();
    for step in steps {
        d.step(step).unwrap();
    }
    d.close().unwrap();
    fs
}

/// Bug: a first open that crashed before `CURRENT` existed leaves its manifest behind.
/// The next open took a fresh id for its own manifest, so a crash during that open left
/// two manifests and no `CURRENT`, which every later open refused as a damaged store
/// (recovery was not idempotent). Fix (`recover::open`): a new store's manifest reuses the
/// leftover's id, and `Manifest::create` replaces the leftover.
#[test]
fn a_crash_while_reopening_after_a_crashed_first_open_leaves_an_openable_store() {
    let fs = new_fs();
    // The first open stops before `CURRENT` names its manifest.
    fs.inject(Fault {
        op: Op::Rename,
        nth: 1,
        kind: FaultKind::Eio,
        forever: false,
    });
    assert!(open(&fs).is_err());
    // The second open stops right after writing its own manifest.
    fs.inject(Fault {
        op: Op::Sync,
        nth: fs.op_count(Op::Sync) + 1,
        kind: FaultKind::Eio,
        forever: false,
    });
    assert!(open(&fs).is_err());
    fs.clear_faults();
    for image in [fs.crash_with(CrashOptions::KeepAll), fs.crash(), fs.clone()] {
        let db = open(&image).unwrap();
        assert_eq!(read_contents(&db).unwrap(), Model::new().state(0, 0));
        db.close().unwrap();
    }
}

/// Bug: damage inside the manifest's last record reads as a torn append, so recovery
/// used the version before that edit. When the edit was a flush whose WAL files had
/// been deleted, the flushed writes were silently lost and the flush's table deleted as
/// a leftover. Fix (`recover::check_named_files`): the WAL file `wal_min_id` names must
/// exist.
#[test]
fn a_damaged_last_flush_edit_is_refused_not_rolled_back() {
    use Step::*;
    // Overlapping tables, so the compaction rewrites them (a move of disjoint tables
    // would leave the earlier WAL check nothing to find); then one more flush, which
    // starts no compaction, is the last edit.
    let fs = store(&[
        Put("default", "a", "1"),
        Put("default", "c", "3"),
        Flush,
        Put("default", "b", "2"),
        Flush,
        Compact,
        Put("default", "d", "4"),
        Flush,
    ]);
    let manifest = manifest_path(&fs);
    let len = fs.file_len(&manifest).unwrap() as usize;
    fs.corrupt(&manifest, len - 1, 0x01).unwrap();
    assert_refused(&fs);
}

/// Bug: as above when the last edit was a compaction: the version before it lists the
/// compaction's inputs, already deleted, and reads failed with a "not found" I/O error
/// instead of a corruption error. Fix (`recover::check_named_files`): every table the
/// manifest lists must exist.
#[test]
fn a_damaged_last_compaction_edit_is_refused() {
    use Step::*;
    // The two tables overlap, so the compaction rewrites them and deletes its inputs (a
    // damaged move of disjoint tables rolls back to a version that is still complete).
    let fs = store(&[
        Put("default", "a", "1"),
        Put("default", "c", "3"),
        Flush,
        Put("default", "b", "2"),
        Flush,
        Compact,
    ]);
    let manifest = manifest_path(&fs);
    let len = fs.file_len(&manifest).unwrap() as usize;
    fs.corrupt(&manifest, len - 1, 0x01).unwrap();
    assert_refused(&fs);
}

/// Bug: a manifest cut back to its first record (no flush recorded yet, so no WAL file
/// to check) recovered an empty store, and recovery deleted the flushed table holding
/// every write as a leftover. Fix (`recover::check_unlisted_tables`): a table no version
/// lists must not hold writes newer than the last recovered seqno.
#[test]
fn a_cut_manifest_is_refused_while_an_unlisted_table_holds_newer_writes() {
    use Step::*;
    let fs = store(&[
        Batch(vec![
            ("default", "a", Some("1")),
            ("default", "b", Some("2")),
        ]),
        Flush,
    ]);
    let manifest = manifest_path(&fs);
    let data = read_all(&fs, &manifest).unwrap();
    let first_record_end = (1..data.len())
        .find(|&n| decode_image(&data[..n], &manifest, None).is_ok_and(|r| r.valid_end == n as u64))
        .unwrap();
    assert!(first_record_end < data.len());
    fs.remove(&manifest).unwrap();
    let mut file = fs.create(&manifest).unwrap();
    file.append(&data[..first_record_end]).unwrap();
    file.sync_data().unwrap();
    assert_refused(&fs);
}

/// The log thread fsyncs a growing log file in the background every few MiB, so even
/// `Buffered` writes that no writer ever synced survive a power loss once the log has
/// grown past them, and a memtable switch has little left to sync.
#[test]
fn the_log_is_synced_in_the_background_as_it_grows() {
    let fs = new_fs();
    let opts = Options {
        memtable_size: 64 << 20,
        max_wal_size: 256 << 20,
        ..options(Durability::Buffered)
    };
    let db = Db::open_with_fs(Arc::new(fs.clone()), &dir(), opts.clone()).unwrap();
    let ks = db.keyspace("default").unwrap();
    let value = vec![7u8; 4000];
    // About 6 MiB of log: past one background sync.
    for i in 0..1500u32 {
        ks.insert(format!("k{i:05}"), &value).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let power_loss = loop {
        let image = fs.crash();
        let recovered = Db::open_with_fs(Arc::new(image.clone()), &dir(), opts.clone()).unwrap();
        let n = recovered.keyspace("default").unwrap().iter().count();
        recovered.close().unwrap();
        if n >= 900 || std::time::Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(
        power_loss >= 900,
        "only {power_loss} of 1500 unsynced Buffered writes survived a power loss"
    );
    drop(ks);
    db.close().unwrap();
}
