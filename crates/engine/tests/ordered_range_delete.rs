//! Range deletes end to end: `remove_prefix` and `remove_range` hide keys at once, keep
//! them for older snapshots, and compaction reclaims the space they held.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use cairn::{Compression, Db, Options};

use ordered_common::mem_tempdir;

/// Bytes of every table file in `dir`.
fn table_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn options() -> Options {
    Options {
        memtable_size: 64 << 10,
        l0_compaction_trigger: 2,
        // Everything stays in level 1, which is then the bottom of the tree.
        level1_size: 256 << 20,
        compression: Compression::None,
        ..Options::default()
    }
}

#[test]
fn remove_prefix_then_compaction_reclaims_the_space() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("data").unwrap();
    for i in 0..3000u32 {
        ks.insert(format!("p/{i:05}"), vec![i as u8; 200]).unwrap();
    }
    for i in 0..10u32 {
        ks.insert(format!("q/{i}"), b"keep").unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let before = table_bytes(dir.path());
    assert!(before > 500_000, "the data is in tables: {before} bytes");

    let snap = db.snapshot();
    ks.remove_prefix("p/").unwrap();
    assert_eq!(db.last_seqno(), snap.seqno() + 1, "one write for 3000 keys");
    assert_eq!(ks.prefix("p/").count(), 0);
    assert_eq!(ks.get("p/00042").unwrap(), None);
    assert_eq!(
        ks.prefix_at("p/", &snap).count(),
        3000,
        "the snapshot keeps them"
    );
    drop(snap);

    // A second level-0 table triggers a compaction into level 1, which holds the data.
    db.flush().unwrap();
    ks.insert("r", b"x").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let after = table_bytes(dir.path());
    assert!(
        after * 20 < before,
        "compaction dropped the removed keys: {before} -> {after} bytes"
    );
    let left: Vec<_> = ks.iter().map(|r| r.unwrap().0).collect();
    assert_eq!(left.len(), 11);
    assert!(left.iter().all(|k| !k.starts_with(b"p/")));
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("data").unwrap();
    assert_eq!(ks.iter().count(), 11);
    assert_eq!(ks.get("q/3").unwrap(), Some(b"keep".to_vec()));
}

#[test]
fn range_bounds_of_every_kind() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let fill = || {
        for k in ["a", "b", "c", "d", "e"] {
            ks.insert(k, k).unwrap();
        }
    };
    let keys = || -> Vec<Vec<u8>> { ks.iter().map(|r| r.unwrap().0).collect() };
    let ks_of = |v: &[&str]| -> Vec<Vec<u8>> { v.iter().map(|s| s.as_bytes().to_vec()).collect() };

    fill();
    ks.remove_range("b".."d").unwrap();
    assert_eq!(keys(), ks_of(&["a", "d", "e"]));
    fill();
    ks.remove_range("b"..="d").unwrap();
    assert_eq!(keys(), ks_of(&["a", "e"]));
    fill();
    ks.remove_range::<&str, _>((
        std::ops::Bound::Excluded("b"),
        std::ops::Bound::Included("d"),
    ))
    .unwrap();
    assert_eq!(keys(), ks_of(&["a", "b", "e"]));
    fill();
    ks.remove_range("c"..).unwrap();
    assert_eq!(keys(), ks_of(&["a", "b"]));
    fill();
    ks.remove_range(.."c").unwrap();
    assert_eq!(keys(), ks_of(&["c", "d", "e"]));
    let seqno = db.last_seqno();
    ks.remove_range("d".."b").unwrap();
    assert_eq!(db.last_seqno(), seqno, "an empty range writes nothing");
    fill();
    let mut batch = db.batch();
    batch.remove_range::<&[u8], _>(&ks, ..);
    batch.insert(&ks, "z", "after");
    batch.commit().unwrap();
    assert_eq!(keys(), ks_of(&["z"]));
    assert_eq!(ks.iter().rev().count(), 1);
    db.flush().unwrap();
    assert_eq!(keys(), ks_of(&["z"]));
    assert!(ks.remove_range(..=vec![0u8; 65_535]).is_err());
}
