//! End-to-end behaviour of the ordered store through its public API.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use cairn::Readable;
use cairn::{Db, Durability, Options};

fn small() -> Options {
    Options::default()
        .memtable_size(4 << 10)
        .block_size(256)
        .l0_compaction_trigger(2)
        .level1_size(16 << 10)
        .table_size(8 << 10)
        .durability(Durability::Buffered)
}

fn collect(it: cairn::Iter) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.unwrap()).collect()
}

#[test]
fn insert_get_remove_and_scan() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("default").unwrap();
    ks.insert("b", "2").unwrap();
    ks.insert("a", "1").unwrap();
    ks.insert("c", "3").unwrap();
    ks.insert("", "empty").unwrap();
    assert_eq!(ks.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(ks.get("").unwrap(), Some(b"empty".to_vec()));
    ks.remove("b").unwrap();
    assert_eq!(ks.get("b").unwrap(), None);
    let all = collect(ks.iter());
    assert_eq!(
        all.iter().map(|p| p.0.clone()).collect::<Vec<_>>(),
        vec![b"".to_vec(), b"a".to_vec(), b"c".to_vec()]
    );
    let rev: Vec<_> = ks.iter().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(rev, vec![b"c".to_vec(), b"a".to_vec(), b"".to_vec()]);
    let range = collect(ks.range::<&[u8], _>(&b"a"[..]..&b"c"[..]));
    assert_eq!(range.len(), 1);
    db.close().unwrap();
}

#[test]
fn data_survives_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = std::collections::BTreeMap::new();
    {
        let db = Db::open(dir.path(), small()).unwrap();
        let ks = db.keyspace("default").unwrap();
        let other = db.keyspace("other").unwrap();
        for i in 0..5_000u32 {
            let k = format!("key{:05}", (i * 7919) % 3000);
            let v = format!("value{i}-{}", "x".repeat((i % 50) as usize));
            if i % 11 == 0 {
                ks.remove(&k).unwrap();
                model.remove(k.as_bytes());
            } else {
                ks.insert(&k, &v).unwrap();
                model.insert(k.as_bytes().to_vec(), v.as_bytes().to_vec());
            }
            other.insert(&k, "o").unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let stats = db.stats();
        assert!(stats.flushes > 0, "{stats:?}");
        assert!(stats.compactions > 0, "{stats:?}");
        let got = collect(ks.iter());
        assert_eq!(got.len(), model.len());
        assert!(got
            .iter()
            .zip(model.iter())
            .all(|(a, b)| a.0 == *b.0 && a.1 == *b.1));
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(
        db.keyspace_names(),
        vec!["default".to_string(), "other".to_string()]
    );
    let ks = db.keyspace("default").unwrap();
    let got = collect(ks.iter());
    assert_eq!(got.len(), model.len());
    for (k, v) in &model {
        assert_eq!(ks.get(k).unwrap().as_ref(), Some(v));
    }
    let rev: Vec<_> = ks.iter().rev().map(|r| r.unwrap()).collect();
    assert_eq!(rev.len(), model.len());
    assert!(rev.iter().rev().zip(model.iter()).all(|(a, b)| a.0 == *b.0));
}

#[test]
fn snapshots_see_one_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..500u32 {
        ks.insert(format!("k{i:04}"), "old").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..500u32 {
        if i % 2 == 0 {
            ks.insert(format!("k{i:04}"), "new").unwrap();
        } else {
            ks.remove(format!("k{i:04}")).unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let at = collect(snap.iter(&ks));
    assert_eq!(at.len(), 500);
    assert!(at.iter().all(|(_, v)| v == b"old"));
    assert_eq!(snap.get(&ks, "k0001").unwrap(), Some(b"old".to_vec()));
    assert_eq!(ks.get("k0001").unwrap(), None);
    assert_eq!(collect(ks.iter()).len(), 250);
}

#[test]
fn a_second_open_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _db = Db::open(dir.path(), Options::default()).unwrap();
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(err.to_string().contains("already locked"), "{err}");
}

#[test]
fn reads_work_with_fewer_open_tables_than_tables() {
    let dir = tempfile::tempdir().unwrap();
    let options = small()
        .max_open_tables(2)
        .l0_compaction_trigger(50)
        .l0_slowdown_trigger(60)
        .l0_stop_trigger(70);
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace("default").unwrap();
    for round in 0..8u32 {
        for i in 0..50u32 {
            ks.insert(format!("r{round}-{i:03}"), format!("v{round}-{i}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
    assert!(db.stats().tables_per_level[0] >= 8, "{:?}", db.stats());
    for round in 0..8u32 {
        for i in 0..50u32 {
            let got = ks.get(format!("r{round}-{i:03}")).unwrap();
            assert_eq!(got, Some(format!("v{round}-{i}").into_bytes()));
        }
    }
    assert_eq!(collect(ks.iter()).len(), 400);
    let back: Vec<_> = ks.iter().rev().map(|r| r.unwrap()).collect();
    assert_eq!(back.len(), 400);
}

/// `Buffered` writes become durable with the log thread's background fsync (every 4 MiB of
/// log), and `durable_seqno` says so: no explicit sync, no rotation.
#[test]
fn the_background_log_fsync_advances_durable_seqno() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default().durability(Durability::Buffered);
    let db = Db::open(dir.path().join("db"), options).unwrap();
    let ks = db.keyspace("k").unwrap();
    let value = vec![7u8; 4096];
    // 2,048 writes of 4 KiB: 8 MiB of log, under the 64 MiB memtable.
    for i in 0..2048u32 {
        ks.insert(format!("k{i:05}"), &value).unwrap();
    }
    assert_eq!(db.last_seqno(), 2048);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while db.durable_seqno() < 1024 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let durable = db.durable_seqno();
    assert!(
        durable >= 1024,
        "durable_seqno {durable} after 8 MiB of Buffered log"
    );
    assert!(durable <= db.last_seqno());
    db.close().unwrap();
}

/// Opening a store whose log holds writes flushes them into a table in the background, and
/// opening one whose logs hold nothing unflushed retires them: a store opened and closed
/// many times (as a command-line tool does) keeps a bounded number of log files.
#[test]
fn log_files_do_not_pile_up_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    for i in 0..30u32 {
        let db = Db::open(&path, Options::default()).unwrap();
        let ks = db.keyspace("k").unwrap();
        ks.insert(format!("k{i:05}"), b"v").unwrap();
        if i % 3 == 0 {
            ks.get("k00000").unwrap();
        }
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
    }
    // Each open flushed the previous one's write into a tiny table; compaction merges
    // small tables instead of moving them down one by one.
    let tables = ordered_common::table_files(&path).len();
    assert!(tables <= 6, "{tables} tables after 30 opens");
    let wal_files = ordered_common::wal_files(&path).len();
    assert!(wal_files <= 3, "{wal_files} log files after 30 opens");
    let db = Db::open(&path, Options::default()).unwrap();
    let ks = db.keyspace("k").unwrap();
    assert_eq!(ks.len().unwrap(), 30);
    db.close().unwrap();
}

/// `Db::compact` merges every level into one, dropping overwritten versions and
/// tombstones: the table bytes fall to those of the live data, and reads are unchanged.
#[test]
fn compact_merges_everything_into_one_level() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), small()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for round in 0..3u32 {
        for i in 0..2000u32 {
            ks.insert(format!("k{i:05}"), format!("{round}:{i:0>200}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
    for i in 0..1000u32 {
        ks.remove(format!("k{i:05}")).unwrap();
    }
    let before = db.stats().table_bytes;
    db.compact().unwrap();
    let stats = db.stats();
    let levels: Vec<usize> = stats
        .tables_per_level
        .iter()
        .copied()
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(levels.len(), 1, "{:?}", stats.tables_per_level);
    assert_eq!(stats.tables_per_level[0], 0);
    // The live data alone, written once into a fresh store and compacted the same way:
    // what the table bytes must fall to. (How much of the history background compaction
    // had already dropped before `compact` depends on timing, so `before` only bounds
    // from above.)
    let live_dir = tempfile::tempdir().unwrap();
    let live_db = Db::open(live_dir.path().join("db"), small()).unwrap();
    let live_ks = live_db.keyspace("k").unwrap();
    for i in 1000..2000u32 {
        live_ks
            .insert(format!("k{i:05}"), format!("2:{i:0>200}"))
            .unwrap();
    }
    live_db.compact().unwrap();
    let live = live_db.stats().table_bytes;
    assert!(
        stats.table_bytes < before && stats.table_bytes * 10 <= live * 11,
        "{before} -> {}, live data alone {live}",
        stats.table_bytes
    );
    assert_eq!(ks.len().unwrap(), 1000);
    assert_eq!(
        ks.get("k01500").unwrap(),
        Some(format!("2:{:0>200}", 1500).into_bytes())
    );
    assert_eq!(ks.get("k00500").unwrap(), None);
}

/// A full block cache keeps a block missed twice in a row, refuses (and counts) blocks
/// missed once, and every read returns the right value either way.
#[test]
fn a_full_block_cache_keeps_blocks_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .block_cache_size(256 << 10)
        .durability(Durability::Buffered)
        .compression(cairn::Compression::None);
    let db = Db::open(dir.path(), opts).unwrap();
    let ks = db.keyspace("data").unwrap();
    let key = |i: u32| format!("key{i:08}");
    let value = |i: u32| format!("{i:0>200}");
    for i in 0..20_000 {
        ks.insert(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    // One pass over 4 MB of blocks through a 256 KiB cache: it fills, then refuses.
    for i in 0..20_000 {
        assert_eq!(ks.get(key(i)).unwrap(), Some(value(i).into_bytes()));
    }
    let after_pass = db.stats();
    assert!(after_pass.cache_refused > 0, "{after_pass:?}");
    assert!(after_pass.cache_misses > after_pass.cache_refused);
    // A key read twice in a row is cached by the second read: the third one hits.
    let probe = 12_345;
    for _ in 0..2 {
        assert_eq!(ks.get(key(probe)).unwrap(), Some(value(probe).into_bytes()));
    }
    let before = db.stats();
    assert_eq!(ks.get(key(probe)).unwrap(), Some(value(probe).into_bytes()));
    let after = db.stats();
    assert_eq!(
        after.cache_misses, before.cache_misses,
        "{before:?} {after:?}"
    );
    assert!(after.cache_hits > before.cache_hits);
}
