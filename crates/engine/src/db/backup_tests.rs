//! Backups on [`MemFs`]: an I/O error at every step of a backup, each followed by a power
//! loss (strict, and random keeping some unsynced state), must leave the destination
//! absent or complete, the source store intact, and a second backup to the same
//! destination must work. An EIO changes nothing, so failing the n-th call and then
//! cutting the power is a crash just before that call: together the cases cover a crash
//! at every step of the backup.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Db;
use crate::error::Error;
use crate::fs::{CrashOptions, Fault, FaultKind, FileSystem, MemFs, Op};
use crate::options::{Durability, Options};

type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        durability: Durability::Buffered,
        memtable_size: 4 << 10,
        block_size: 256,
        l0_compaction_trigger: 2,
        level1_size: 16 << 10,
        table_size: 8 << 10,
        background_threads: 1,
        ..Options::default()
    }
}

fn read(fs: &MemFs, dir: &Path) -> Contents {
    let db = Db::open_with_fs(Arc::new(fs.clone()), dir, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let all = ks.iter().map(|kv| kv.unwrap()).collect();
    drop(ks);
    db.close().unwrap();
    all
}

/// A store on `fs` at `/db` with tables (flushed and compacted) and writes only in the
/// WAL; background work finished. Returns the store and what it holds.
fn store(fs: &MemFs) -> (Db, Contents) {
    let db = Db::open_with_fs(Arc::new(fs.clone()), Path::new("/db"), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let mut model = Contents::new();
    for i in 0..400u32 {
        let (k, v) = (
            format!("key{:04}", i % 150),
            format!("value {i} {}", "v".repeat(30)),
        );
        ks.insert(&k, &v).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for i in 0..20u32 {
        let (k, v) = (format!("wal{i:02}"), format!("in the log {i}"));
        ks.insert(&k, &v).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    assert!(db.stats().tables_per_level.iter().sum::<usize>() > 0);
    (db, model)
}

/// After a failed backup and a power loss: `dest` is absent or opens to `model`, and the
/// source recovers every write (they were synced by the backup's log capture or by now).
fn check_crash_image(fs: &MemFs, db: &Db, dest: &Path, model: &Contents) {
    db.flush_wal(true).unwrap();
    let mut images = vec![fs.crash()];
    images.extend((0..3).map(|seed| fs.crash_with(CrashOptions::Random { seed })));
    for crashed in images {
        if crashed.exists(dest).unwrap() {
            assert_eq!(
                &read(&crashed, dest),
                model,
                "a destination that exists is complete"
            );
        }
        assert_eq!(
            &read(&crashed, Path::new("/db")),
            model,
            "the source is unharmed"
        );
    }
}

#[test]
fn a_fault_at_any_step_never_leaves_a_partial_backup() {
    let fs = MemFs::new();
    let (db, model) = store(&fs);
    let ops = [Op::Create, Op::Write, Op::Sync, Op::SyncDir, Op::Rename];
    // How many calls of each kind a backup makes (a failed link adds a create: the copy).
    let before: Vec<u64> = ops.iter().map(|&op| fs.op_count(op)).collect();
    db.backup("/probe").unwrap();
    let calls: Vec<u64> = ops
        .iter()
        .zip(&before)
        .map(|(&op, b)| fs.op_count(op) - b)
        .collect();
    let mut faults_hit = 0;
    for (&op, &calls) in ops.iter().zip(&calls) {
        for n in 1..=calls + 1 {
            let dest = PathBuf::from(format!("/bk-{op:?}-{n}"));
            fs.inject(Fault {
                op,
                nth: fs.op_count(op) + n,
                kind: FaultKind::Eio,
                forever: false,
            });
            let result = db.backup(&dest);
            fs.clear_faults();
            match result {
                Ok(info) => {
                    // The fault lies past the backup's last call of this kind, or hit a
                    // hard link, which falls back to copying.
                    assert!(n > calls || op == Op::Create, "{op:?} #{n}");
                    assert!(info.tables > 0 && info.wal_files > 0, "{info:?}");
                    assert_eq!(read(&fs.crash(), &dest), model);
                }
                Err(Error::Io { .. }) => {
                    faults_hit += 1;
                    let done = fs.exists(&dest).unwrap();
                    if done {
                        // Only the last step (syncing the parent directory) comes after
                        // the rename; the backup is complete then.
                        assert_eq!(op, Op::SyncDir, "{dest:?}");
                    }
                    check_crash_image(&fs, &db, &dest, &model);
                    if !done {
                        // Running it again works, with the same destination.
                        let info = db.backup(&dest).unwrap();
                        assert!(info.seqno > 0);
                        assert_eq!(read(&fs.crash(), &dest), model);
                    }
                }
                Err(e) => panic!("{op:?} #{n}: unexpected {e:?}"),
            }
        }
    }
    assert!(faults_hit >= 12, "only {faults_hit} faults were reached");
    // The source keeps working after all of it.
    let ks = db.keyspace("k").unwrap();
    ks.insert("after", "faults").unwrap();
    drop(ks);
    db.close().unwrap();
    let mut model = model;
    model.insert(b"after".to_vec(), b"faults".to_vec());
    assert_eq!(read(&fs.crash(), Path::new("/db")), model);
}
