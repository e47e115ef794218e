//! `Db::open_read_only` on real files: it changes nothing in the directory, and while a
//! writer keeps writing, flushing and compacting, every read-only open sees a prefix of
//! the writer's acknowledged writes, at least every write acknowledged before it began.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cairn::{Db, Durability, Error, KeyspaceOptions, Options};

fn options() -> Options {
    Options::default()
        .durability(Durability::Buffered)
        .memtable_size(16 << 10)
        .table_size(16 << 10)
        .l0_compaction_trigger(2)
        .level1_size(64 << 10)
        .blob_file_size(32 << 10)
}

/// Name → (length, modification time) of every file in `dir`.
fn listing(dir: &Path) -> BTreeMap<String, (u64, SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                (m.len(), m.modified().unwrap()),
            )
        })
        .collect()
}

fn key(i: u64) -> String {
    format!("key{i:08}")
}

#[test]
fn a_read_only_open_of_a_closed_store_and_of_a_backup_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let db = Db::open(&store, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let blobs = db
        .keyspace_with("b", KeyspaceOptions::separated(256))
        .unwrap();
    for i in 0..2000 {
        ks.insert(key(i), format!("v{i}")).unwrap();
    }
    blobs.insert("large", vec![9u8; 10_000]).unwrap();
    db.flush().unwrap();
    for i in 2000..2100 {
        ks.insert(key(i), format!("v{i}")).unwrap(); // in the log only
    }
    let backup = tmp.path().join("backup");
    db.backup(&backup).unwrap();
    drop((ks, blobs));
    db.close().unwrap();

    for dir in [&store, &backup] {
        let before = listing(dir);
        std::thread::sleep(Duration::from_millis(20)); // a write would show in mtimes
        let ro = Db::open_read_only(dir, options()).unwrap();
        let ks = ro.get_keyspace("k").unwrap();
        assert_eq!(ks.len().unwrap(), 2100);
        assert_eq!(ks.get(key(2050)).unwrap(), Some(b"v2050".to_vec()));
        let b = ro.get_keyspace("b").unwrap();
        assert_eq!(b.get("large").unwrap(), Some(vec![9u8; 10_000]));
        assert!(matches!(ks.insert("x", "y"), Err(Error::ReadOnly)));
        // Two readers at once.
        let second = Db::open_read_only(dir, options()).unwrap();
        assert_eq!(second.last_seqno(), ro.last_seqno());
        drop((ks, b));
        ro.close().unwrap();
        second.close().unwrap();
        assert_eq!(listing(dir), before, "{}", dir.display());
    }
    // The store still opens for writing afterwards: no lock was left behind.
    let db = Db::open(&store, options()).unwrap();
    assert_eq!(db.keyspace("k").unwrap().len().unwrap(), 2100);
    db.close().unwrap();
}

#[test]
fn readers_beside_a_busy_writer_see_a_prefix_of_its_acknowledged_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let db = Db::open(&store, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert(key(0), "0").unwrap();
    // Writes go in key order, one key per write; `acked` is the number acknowledged.
    let acked = Arc::new(AtomicU64::new(1));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, stop, db) = (Arc::clone(&acked), Arc::clone(&stop), db.clone());
        std::thread::spawn(move || {
            let ks = db.keyspace("k").unwrap();
            let mut i = 1u64;
            while !stop.load(Ordering::Relaxed) {
                ks.insert(key(i), i.to_string()).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
                if i.is_multiple_of(3000) {
                    db.flush().unwrap();
                }
                if i.is_multiple_of(10_000) {
                    db.compact().unwrap();
                }
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut opens = 0u64;
    let mut largest = 0u64;
    while Instant::now() < deadline {
        let floor = acked.load(Ordering::Acquire);
        let ro = Db::open_read_only(&store, options()).unwrap();
        let rks = ro.get_keyspace("k").unwrap();
        let n = rks.len().unwrap();
        assert!(
            n >= floor,
            "open {opens}: {n} keys but {floor} were acknowledged before it"
        );
        // A prefix: exactly keys 0..n, each with its value, whatever happens to the
        // writer's files while the scan runs.
        let mut expect = 0u64;
        for pair in rks.iter() {
            let (k, v) = pair.unwrap();
            assert_eq!(k, key(expect).into_bytes(), "open {opens}");
            assert_eq!(v, expect.to_string().into_bytes());
            expect += 1;
        }
        assert_eq!(expect, n);
        largest = largest.max(n);
        opens += 1;
        drop(rks);
        ro.close().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    eprintln!("{opens} read-only opens beside the writer, the last seeing {largest} keys");
    assert!(opens >= 5, "{opens} read-only opens");
    assert!(largest > 1000, "the writer got going: {largest} keys");
    db.close().unwrap();
}

/// A backup taken through a read-only handle, while the writer holds the store and keeps
/// writing, is exactly the reader's view: it verifies, and it opens to the same keys.
#[test]
fn a_backup_through_a_read_only_view_of_a_live_store_is_that_view() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let db = Db::open(&store, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let big = db
        .keyspace_with("b", KeyspaceOptions::separated(256))
        .unwrap();
    for i in 0..3000 {
        ks.insert(key(i), i.to_string()).unwrap();
        if i % 100 == 0 {
            big.insert(key(i), vec![(i % 251) as u8; 1000]).unwrap();
        }
    }
    db.flush().unwrap();
    for i in 3000..3500 {
        ks.insert(key(i), i.to_string()).unwrap(); // only in the log
    }
    big.insert("unflushed", vec![5u8; 2000]).unwrap(); // its blob file is unsealed
    let view = Db::open_read_only(&store, options()).unwrap();
    // The writer moves on before and during the backup.
    for i in 3500..4000 {
        ks.insert(key(i), i.to_string()).unwrap();
    }
    let dest = tmp.path().join("backup");
    let info = view.backup(&dest).unwrap();
    assert_eq!(info.seqno, view.last_seqno());
    for i in 4000..4500 {
        ks.insert(key(i), i.to_string()).unwrap();
    }
    cairn::verify(&dest).unwrap();
    let copy = Db::open_read_only(&dest, options()).unwrap();
    assert_eq!(copy.last_seqno(), view.last_seqno());
    for name in ["k", "b"] {
        let a: Vec<_> = view
            .get_keyspace(name)
            .unwrap()
            .iter()
            .map(|r| r.unwrap())
            .collect();
        let b: Vec<_> = copy
            .get_keyspace(name)
            .unwrap()
            .iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(a, b, "keyspace {name}");
    }
    assert_eq!(copy.get_keyspace("k").unwrap().len().unwrap(), 3500);
    assert_eq!(
        copy.get_keyspace("b").unwrap().get("unflushed").unwrap(),
        Some(vec![5u8; 2000])
    );
    copy.close().unwrap();
    // The backup is a store: it opens for writing too.
    let restored = Db::open(&dest, options()).unwrap();
    assert_eq!(restored.keyspace("k").unwrap().len().unwrap(), 3500);
    restored.close().unwrap();
    drop((ks, big));
    view.close().unwrap();
    db.close().unwrap();
}

/// `Db::verify` of a read-only view checks the files the view holds while the writer
/// keeps the store open and goes on compacting and deleting them, writes nothing, and
/// finds damage in a file of the view.
#[test]
fn a_read_only_view_of_a_live_store_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let writer = Db::open(&dir, options()).unwrap();
    let ks = writer
        .keyspace_with("k", KeyspaceOptions::separated(512))
        .unwrap();
    for i in 0..3000u64 {
        ks.insert(key(i), format!("value {i}")).unwrap();
        if i % 100 == 0 {
            ks.insert(format!("big{i}"), vec![i as u8; 2000]).unwrap();
        }
    }
    writer.flush().unwrap();
    for i in 3000..3100u64 {
        ks.insert(key(i), format!("value {i}")).unwrap();
    }
    writer.flush_wal(false).unwrap();
    // The writer's background work (the compaction its flush set off) would change the
    // listing below on its own: let it finish, so a change can only be the view's.
    writer.wait_for_compactions().unwrap();

    let view = Db::open_read_only(&dir, options()).unwrap();
    let before = listing(&dir);
    let report = view.verify_report().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(report.files.iter().any(|f| f.name.ends_with(".sst")));
    assert!(report.files.iter().any(|f| f.name.ends_with(".wal")));
    assert!(report.files.iter().any(|f| f.name.ends_with(".blob")));
    assert_eq!(listing(&dir), before, "verify of a view changed the store");

    // The writer rewrites everything and deletes the view's files: the view still checks.
    for i in 0..3000u64 {
        ks.insert(key(i), "again").unwrap();
    }
    writer.compact().unwrap();
    writer.collect_garbage().unwrap();
    view.verify().unwrap();

    // Damage in a table of a fresh view is found.
    writer.flush().unwrap();
    let table = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[100] ^= 0x5a;
    std::fs::write(&table, &bytes).unwrap();
    let damaged = Db::open_read_only(&dir, options()).unwrap();
    let report = damaged.verify_report().unwrap();
    let name = table.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        report
            .problems
            .iter()
            .any(|e| e.to_string().contains(&name)),
        "{:?}",
        report.problems
    );
    assert!(matches!(damaged.verify(), Err(Error::Corruption(_))));
    drop((view, damaged, ks));
    writer.close().unwrap();
}
