//! Separated values (the value log) through the public API: thresholds kept across
//! reopens, values beyond the inline limit, backups that carry blob files, and garbage
//! collection racing writers and snapshots without losing a value any reader can see.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use cairn::Readable;
use cairn::{Db, Durability, FileKind, KeyspaceOptions, Options};
use ordered_common::{collect, mem_tempdir, tiny};

fn value(key: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("{key}:{round}:").into_bytes();
    v.resize(len, (key ^ round) as u8);
    v
}

#[test]
fn thresholds_are_kept_across_reopens_and_apply_to_new_writes() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db
        .keyspace_with("media", KeyspaceOptions::separated(100))
        .unwrap();
    let plain = db.keyspace("plain").unwrap();
    ks.insert("big", vec![1u8; 100]).unwrap();
    ks.insert("small", vec![2u8; 99]).unwrap();
    plain.insert("big", vec![3u8; 5000]).unwrap();
    assert!(ks.head("big").unwrap().unwrap().separated);
    assert!(!ks.head("small").unwrap().unwrap().separated);
    assert!(!plain.head("big").unwrap().unwrap().separated);
    drop((ks, plain));
    db.close().unwrap();

    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db.keyspace("media").unwrap();
    ks.insert("again", vec![4u8; 150]).unwrap();
    assert!(
        ks.head("again").unwrap().unwrap().separated,
        "the threshold was kept"
    );
    assert_eq!(ks.get("big").unwrap(), Some(vec![1u8; 100]));
    // A new threshold applies to new writes; old ones stay where they are.
    drop(ks);
    let ks = db
        .keyspace_with("media", KeyspaceOptions::separated(1000))
        .unwrap();
    ks.insert("later", vec![5u8; 150]).unwrap();
    assert!(!ks.head("later").unwrap().unwrap().separated);
    assert!(ks.head("again").unwrap().unwrap().separated);
    drop(ks);
    db.close().unwrap();

    // The store-wide default applies to keyspaces without their own threshold.
    let options = tiny(4 << 10, 256).blob_threshold(Some(10));
    let db = Db::open(dir.path(), options).unwrap();
    let plain = db.keyspace("plain").unwrap();
    plain.insert("now", vec![6u8; 10]).unwrap();
    assert!(plain.head("now").unwrap().unwrap().separated);
    let media = db.keyspace("media").unwrap();
    media.insert("own", vec![7u8; 500]).unwrap();
    assert!(
        !media.head("own").unwrap().unwrap().separated,
        "its own threshold wins"
    );
}

#[test]
fn separated_values_may_exceed_the_inline_limit() {
    let dir = mem_tempdir();
    let options = Options::default().durability(Durability::Buffered);
    let db = Db::open(dir.path(), options).unwrap();
    let big = vec![9u8; (32 << 20) + 5];
    let plain = db.keyspace("plain").unwrap();
    assert!(plain.insert("big", &big).is_err());
    let media = db
        .keyspace_with("media", KeyspaceOptions::separated(4096))
        .unwrap();
    media.insert("big", &big).unwrap();
    // In a batch too, with small values beside it.
    let mut b = db.batch();
    b.insert(&media, "big2", &big);
    b.insert(&plain, "small", "s");
    b.commit().unwrap();
    db.flush().unwrap();
    assert_eq!(media.get("big").unwrap().unwrap().len(), big.len());
    assert_eq!(media.get("big2").unwrap(), Some(big.clone()));
    assert_eq!(plain.get("small").unwrap(), Some(b"s".to_vec()));
    assert_eq!(
        media.head("big").unwrap().unwrap().value_len,
        big.len() as u64
    );
}

#[test]
fn a_backup_of_a_store_with_blob_files_opens_and_verifies() {
    let dir = mem_tempdir();
    let options = tiny(4 << 10, 256)
        .blob_threshold(Some(32))
        .blob_file_size(4096);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let ks = db.keyspace("default").unwrap();
    let mut expected = BTreeMap::new();
    for i in 0..200u32 {
        let v = value(i, 0, 40 + (i as usize % 7) * 30);
        ks.insert(format!("k{i:03}"), &v).unwrap();
        expected.insert(format!("k{i:03}").into_bytes(), v);
    }
    db.flush().unwrap();
    // Some values only in the log and the active blob file.
    for i in 0..20u32 {
        let v = value(i, 1, 100);
        ks.insert(format!("k{i:03}"), &v).unwrap();
        expected.insert(format!("k{i:03}").into_bytes(), v);
    }
    assert!(!db.space_stats().unwrap().blob_files.is_empty());
    let dest = mem_tempdir();
    let target = dest.path().join("copy");
    db.backup(&target).unwrap();
    let report = cairn::verify(&target).unwrap();
    assert!(report.files.iter().any(|f| f.kind == FileKind::Blob));
    // A pack carries them too.
    let packed = dest.path().join("store.pack");
    db.pack(&packed).unwrap();
    let unpacked = dest.path().join("unpacked");
    cairn::pack::unpack(&packed, &unpacked).unwrap();
    cairn::verify(&unpacked).unwrap();
    for copy in [target, unpacked] {
        let copy = Db::open(&copy, options.clone()).unwrap();
        let ks = copy.keyspace("default").unwrap();
        let got: BTreeMap<_, _> = collect(ks.iter()).into_iter().collect();
        assert_eq!(got, expected);
        assert!(ks.head("k000").unwrap().unwrap().separated);
        // The copy's unflushed values go to tables of its own, and it still verifies.
        copy.flush().unwrap();
        assert_eq!(
            ks.get("k001").unwrap().as_ref(),
            expected.get(b"k001".as_slice())
        );
        drop(ks);
        let path = copy.path().to_path_buf();
        copy.close().unwrap();
        cairn::verify(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn gc_racing_writers_and_snapshots_never_loses_a_visible_value() {
    let dir = mem_tempdir();
    let options = tiny(4 << 10, 256)
        .blob_threshold(Some(16))
        .blob_file_size(8 << 10)
        .blob_gc_garbage_percent(25);
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace("default").unwrap();
    const KEYS: u32 = 60;
    for k in 0..KEYS {
        ks.insert(format!("k{k:02}"), value(k, 0, 64)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Writers: each owns a slice of the keys and overwrites them round after round.
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let (ks, stop) = (ks.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut round = 1;
                while !stop.load(Ordering::Relaxed) {
                    for k in (0..KEYS).filter(|k| k % 2 == w) {
                        ks.insert(
                            format!("k{k:02}"),
                            value(k, round, 40 + (round as usize % 5) * 20),
                        )
                        .unwrap();
                    }
                    round += 1;
                }
                round
            })
        })
        .collect();
    // GC and flushes in a loop.
    let removed = Arc::new(AtomicUsize::new(0));
    let gc = {
        let (db, stop, removed) = (db.clone(), Arc::clone(&stop), Arc::clone(&removed));
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.flush().unwrap();
                removed.fetch_add(db.collect_garbage().unwrap(), Ordering::Relaxed);
            }
        })
    };
    // Readers: a snapshot's view never changes, and every value it shows is whole.
    let start = std::time::Instant::now();
    let mut checks = 0;
    while checks < 30 || (removed.load(Ordering::Relaxed) < 5 && start.elapsed().as_secs() < 20) {
        checks += 1;
        let snap = db.snapshot();
        let first: Vec<_> = collect(snap.iter(&ks));
        assert_eq!(first.len(), KEYS as usize);
        let mut it = ks.iter();
        thread::sleep(std::time::Duration::from_millis(5));
        let again: Vec<_> = collect(snap.iter(&ks));
        assert_eq!(first, again, "a snapshot's view changed");
        for (key, v) in &first {
            let k: u32 = std::str::from_utf8(&key[1..]).unwrap().parse().unwrap();
            let prefix = format!("{k}:");
            assert!(v.starts_with(prefix.as_bytes()), "{key:?} -> {v:?}");
        }
        // An iterator opened before GC runs keeps reading its values.
        let rest: Vec<_> = it.by_ref().map(|r| r.unwrap()).collect();
        assert!(rest.len() == KEYS as usize || rest.len() == KEYS as usize - 1);
        assert!(rest.iter().all(|(_, v)| v.len() >= 40));
    }
    stop.store(true, Ordering::Relaxed);
    let rounds: Vec<u32> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    gc.join().unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    removed_after(&db);
    for k in 0..KEYS {
        let last = rounds[(k % 2) as usize] - 1;
        let want = if last == 0 {
            value(k, 0, 64)
        } else {
            value(k, last, 40 + (last as usize % 5) * 20)
        };
        assert_eq!(ks.get(format!("k{k:02}")).unwrap(), Some(want), "k{k:02}");
    }
    assert!(
        removed.load(Ordering::Relaxed) >= 5,
        "GC removed blob files meanwhile"
    );
    let stats = db.space_stats().unwrap();
    assert!(stats.live_blob_bytes > 0);
}

/// Runs GC until it has nothing left to remove.
fn removed_after(db: &Db) {
    for _ in 0..5 {
        if db.collect_garbage().unwrap() == 0 {
            break;
        }
    }
}

#[test]
fn range_deletes_hide_separated_values_and_gc_reclaims_them() {
    let dir = mem_tempdir();
    let options = tiny(4 << 10, 256)
        .blob_threshold(Some(0))
        .blob_file_size(4096);
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..100u32 {
        ks.insert(format!("k{i:03}"), value(i, 0, 200)).unwrap();
    }
    db.flush().unwrap();
    let before = db.space_stats().unwrap();
    assert_eq!(before.garbage_blob_bytes, 0);
    ks.remove_range("k010".."k090").unwrap();
    // Hidden at once, in the memtable's range tombstone.
    assert_eq!(ks.get("k050").unwrap(), None);
    assert_eq!(ks.head("k050").unwrap(), None);
    assert_eq!(ks.len().unwrap(), 20);
    assert_eq!(collect(ks.range("k005".."k015")).len(), 5);
    // And once compaction has dropped the covered values, their bytes are garbage and
    // GC reclaims the files that held only them.
    for round in 0..3 {
        ks.insert(format!("z{round}"), "x").unwrap();
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    db.collect_garbage().unwrap();
    let after = db.space_stats().unwrap();
    assert!(
        after.blob_bytes < before.blob_bytes,
        "before {before:?}, after {after:?}"
    );
    assert_eq!(ks.get("k005").unwrap(), Some(value(5, 0, 200)));
    assert_eq!(ks.get("k095").unwrap(), Some(value(95, 0, 200)));
    assert_eq!(ks.get("k050").unwrap(), None);
}

/// Separated values count toward the log limit that forces a flush: overwriting a few keys
/// with large values flushes (so GC can see the blob files) and the value log stays within
/// a bound of the live data, with no explicit flush or GC call.
#[test]
fn unflushed_separated_values_force_flushes_and_gc_bounds_the_value_log() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default()
        .blob_threshold(Some(0))
        .max_wal_size(1 << 20)
        .blob_file_size(1 << 20);
    let db = Db::open(dir.path().join("db"), options).unwrap();
    let ks = db.keyspace("big").unwrap();
    // 4 keys x 100 rounds of 64 KiB: 25 MiB written, 256 KiB live.
    for round in 0..100u32 {
        for key in 0..4u32 {
            ks.insert(format!("k{key}"), value(key, round, 64 << 10))
                .unwrap();
        }
    }
    assert!(db.stats().flushes >= 10, "{:?}", db.stats());
    db.wait_for_compactions().unwrap();
    let space = db.space_stats().unwrap();
    let blob = space.blob_bytes + space.unflushed_blob_bytes;
    assert!(
        blob < 8 << 20,
        "{blob} bytes of blob files for 256 KiB live: {space:?}"
    );
    for key in 0..4u32 {
        assert_eq!(
            ks.get(format!("k{key}")).unwrap(),
            Some(value(key, 99, 64 << 10))
        );
    }
}

/// Overwriting every key once leaves the old values as garbage: a full compaction drops
/// the old versions, and garbage collection then brings the value log back near the live
/// data (within the bound of the 50% garbage threshold: at most twice the live bytes).
#[test]
fn compact_then_collect_garbage_reclaims_overwritten_values() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default()
        .blob_threshold(Some(1024))
        .blob_file_size(1 << 20);
    let db = Db::open(dir.path().join("db"), options).unwrap();
    let ks = db.keyspace("big").unwrap();
    for round in 0..2u32 {
        for key in 0..200u32 {
            ks.insert(format!("k{key:03}"), value(key, round, 16 << 10))
                .unwrap();
        }
        db.flush().unwrap();
    }
    let live = 200 * (16 << 10) as u64;
    let before = db.space_stats().unwrap().blob_bytes;
    assert!(before >= 2 * live, "{before}");
    assert!(db.compact().unwrap() >= 1);
    assert_eq!(db.stats().tables_per_level[0], 0);
    while db.collect_garbage().unwrap() > 0 {}
    let after = db.space_stats().unwrap();
    assert!(
        after.blob_bytes + after.unflushed_blob_bytes <= 2 * live + (1 << 20),
        "{after:?}"
    );
    assert!(
        after.garbage_blob_bytes * 2 <= after.blob_bytes,
        "{after:?}"
    );
    for key in 0..200u32 {
        assert_eq!(
            ks.get(format!("k{key:03}")).unwrap(),
            Some(value(key, 1, 16 << 10))
        );
    }
}
